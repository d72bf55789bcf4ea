// Reading a link log in Mahimahi's grammar, ours or Mahimahi's own, into what tm-graph reports:
//   # base timestamp: T   (other '#' lines are ignored)
//   T # BYTES             a delivery opportunity (Mahimahi writes 1504, we write 1500)
//   T + SIZE              an arrival
//   T - SIZE QDELAY       a departure and the ms it spent queued
//   T d PKTS BYTES        a drop (newer Mahimahi and tracemod)
// Times are ms, whole (Mahimahi) or with decimals (tracemod). Everything is streamed: memory grows with the
// number of time bins and of distinct microsecond delays, never with the number of lines.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "util/clock.hh"
#include "util/error.hh"
#include "util/file_descriptor.hh"

namespace tracemod {

// One event line, times in ns as written (not yet relative to the base timestamp).
struct LogEvent {
  enum Kind : char { kOpportunity = '#', kArrival = '+', kDeparture = '-', kDrop = 'd' };
  Kind kind = kOpportunity;
  Nanos time = 0;
  uint64_t bytes = 0;    // opportunity, packet or dropped bytes
  uint64_t packets = 1;  // dropped packets for kDrop, else 1
  Nanos delay = 0;       // queueing delay of a departure
};

// Parses "NAME:LINE"-numbered lines; throws UsageError("NAME:LINE: what is wrong").
class LinkLogParser {
 public:
  explicit LinkLogParser(std::string name) : name_(std::move(name)) {}

  // Reads the next line; returns true and fills EVENT for an event line, false for a header line.
  bool parse(std::string_view line, LogEvent& event);
  bool has_base() const { return base_line_ != 0; }
  Nanos base() const { return base_; }
  uint64_t line_number() const { return line_; }
  const std::string& name() const { return name_; }
  [[noreturn]] void fail(const std::string& what) const;

 private:
  void header(std::string_view line);
  Nanos time_field(std::string_view text, const char* what) const;
  uint64_t count_field(std::string_view text, const char* what) const;

  std::string name_;
  uint64_t line_ = 0, base_line_ = 0;
  Nanos base_ = 0;
};

// Exact order statistics of queueing delays at microsecond resolution: counts per microsecond, in pages
// allocated only where delays fall, so memory follows the spread of delays, not the number of packets.
class DelayHistogram {
 public:
  void add(uint64_t micros);
  uint64_t count() const { return count_; }
  // The delay at 0-based rank floor(Q * count) of the sorted delays (Mahimahi's percentile); needs count() > 0.
  uint64_t quantile(double q) const;

 private:
  static constexpr uint64_t kPage = 1024;
  std::map<uint64_t, std::unique_ptr<uint64_t[]>> pages_;  // page number -> kPage counts
  uint64_t count_ = 0;
};

// What happened during one time bin.
struct LogBin {
  uint64_t capacity_bytes = 0, arrival_bytes = 0, departure_bytes = 0, drop_bytes = 0;
  uint64_t departures = 0, drop_packets = 0;
  Nanos max_delay = 0, delay_sum = 0;  // of the departures in the bin (the sum stops at kNever)
};

// Totals, bins and delays of a whole log. Times are relative to the base timestamp, as in mm-throughput-graph.
class LinkLogStats {
 public:
  explicit LinkLogStats(Nanos bin_width);
  void add(const LogEvent& e, Nanos base);

  Nanos bin_width() const { return bin_width_; }
  int64_t first_bin() const { return first_bin_; }
  const std::vector<LogBin>& bins() const { return bins_; }
  const LogBin& totals() const { return totals_; }
  const DelayHistogram& delays() const { return delays_; }
  uint64_t events() const { return events_; }
  Nanos first() const { return first_; }  // earliest event
  Nanos last() const { return last_; }    // latest event

  // Over last() - first(), as Mahimahi: bits per second / 1e6. Need last() > first().
  double capacity_mbps() const;
  double throughput_mbps() const;
  // Percentile of the per-packet queueing delay in ms; needs delays().count() > 0.
  double delay_ms(double q) const;

 private:
  LogBin& bin_at(Nanos t);

  Nanos bin_width_;
  int64_t first_bin_ = 0;
  std::vector<LogBin> bins_;
  LogBin totals_;
  DelayHistogram delays_;
  uint64_t events_ = 0;
  Nanos first_ = 0, last_ = 0;
};

// Reads a whole log from IN with bins BIN_WIDTH wide. Throws UsageError("NAME:LINE: ...") for a bad line (or one
// too long: LineReader), UsageError("NAME: ...") for a log without events or that spans no time.
LinkLogStats read_link_log(LineReader& in, Nanos bin_width);

// The report, mm-throughput-graph's first three lines then ours:
//   Average capacity: 12.00 Mbits/s
//   Average throughput: 11.52 Mbits/s (96.0% utilization)
//   95th percentile per-packet queueing delay: 40.000 ms
//   50th percentile per-packet queueing delay: 20.000 ms
//   99th percentile per-packet queueing delay: 48.000 ms
//   Drops: 3 packets, 4500 bytes
std::string format_summary(const LinkLogStats& stats);

}  // namespace tracemod
