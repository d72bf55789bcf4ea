// The receiving end of one direction: turns arrivals into the trace, the raw record and running statistics.
// Loss is counted from sequence gaps (a late packet undoes one). Never reads the clock.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>

#include "record/raw_record.hh"
#include "record/trace_writer.hh"
#include "saturator/dry_queue.hh"
#include "util/clock.hh"

namespace tracemod::record {

// Queueing-delay distribution in 1 ms bins up to 60 s: fixed memory however long the recording.
class DelayHistogram {
 public:
  void add(Nanos d);
  Nanos percentile(double p) const;  // nearest rank, bin midpoint; 0 when empty
  uint64_t count() const { return count_; }

 private:
  static constexpr size_t kBins = 60000;
  std::unique_ptr<std::array<uint64_t, kBins>> bins_ = std::make_unique<std::array<uint64_t, kBins>>();
  uint64_t count_ = 0;
};

// Running counts of arrivals, shared by the live recorder and `distill`.
class ArrivalStats {
 public:
  // Returns the packet's entry fields: how many sequence numbers it skips, and whether it is late.
  void add(uint64_t seq, Nanos send, Nanos recv, uint32_t size, uint64_t* lost_before, bool* late);
  void finish() { shortfall_.finish(); }  // after the last arrival: completes shortfall()
  uint64_t packets() const { return packets_; }
  uint64_t lost() const { return lost_; }
  uint64_t expected() const { return packets_ + lost_; }
  uint64_t bytes() const { return bytes_; }
  Nanos first() const { return first_; }
  Nanos last() const { return last_; }  // the latest arrival (one recorded out of order does not move it back)
  Nanos queueing_delay() const { return last_qdelay_; }  // of the latest arrival, against the smallest OWD
  const DelayHistogram& delays() const { return delays_; }
  const ShortfallEstimate& shortfall() const { return shortfall_; }

 private:
  uint64_t packets_ = 0, lost_ = 0, bytes_ = 0, next_seq_ = 0;
  Nanos first_ = 0, last_ = 0, last_qdelay_ = 0;
  DelayHistogram delays_;
  DryQueue dry_;
  ShortfallEstimate shortfall_;
};

struct RecorderOptions {
  std::string prefix;  // writes PREFIX.up / PREFIX.down and the same with .raw
  bool up = true;
  uint32_t ip_packet_bytes = 1500;
  bool ipv6 = false;
  Nanos duration = 0;  // from the first arrival; 0 = until stopped
  std::string tool_version;
};

class Recorder {
 public:
  explicit Recorder(const RecorderOptions& options);  // creates the files; throws Error

  // Records one arrival; false once the recording is complete (this arrival is past its end).
  bool on_arrival(uint64_t seq, Nanos send, Nanos recv, uint32_t size);
  bool started() const { return stats_.packets() > 0; }
  bool finished() const { return finished_; }
  Nanos end_time() const;  // receiver time at which the duration is reached (kNever before the first arrival)
  // Writes the footer and completes the trace. Returns the summary line.
  std::string finish(const std::string& reason);
  const ArrivalStats& stats() const { return stats_; }
  std::string direction() const { return options_.up ? "up" : "down"; }

 private:
  RecorderOptions options_;
  TraceWriter trace_;
  DelimitedWriter raw_;
  ArrivalStats stats_;
  bool finished_ = false;
};

// "up: 30.00 s, 35996 packets (11.52 Mbit/s), loss 1.01% (363 of 35996+363), queueing delay p50 ... ms, queue
// ran dry 3 times (about 5 opportunities missed, 0.01%)"
std::string describe(const std::string& direction, const ArrivalStats& stats, uint32_t ip_packet_bytes);

// A warning when the dry queue cost the recording more than kShortfallWarning of the link's opportunities
// (estimated: ShortfallEstimate); empty otherwise.
constexpr double kShortfallWarning = 0.01;
std::string shortfall_warning(const ArrivalStats& stats);

}  // namespace tracemod::record
