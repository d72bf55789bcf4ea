// When a link may send: Mahimahi delivery traces (read unchanged) and constant rates. Each opportunity lets
// 1500 bytes of IP packet through. Times here are relative to the link's time 0; the link adds its start.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "util/clock.hh"
#include "util/parse.hh"  // parse_rate, kMaxRate

namespace tracemod {

// Successive opportunity times in ns from the link's time 0, never decreasing.
class OpportunitySource {
 public:
  virtual ~OpportunitySource() = default;
  // The next opportunity's time; kNever once a finite source is spent.
  virtual Nanos next() = 0;
  // Discards the opportunities before T and returns how many, so an idle link skips hours at once.
  virtual uint64_t skip_before(Nanos t) = 0;
};

// A Mahimahi trace: one line per opportunity, each a time in ms (repeats = several in that ms), looping with
// period = the last value. Stored as runs of (ms since the previous run, opportunities), varint-coded: about a
// byte per distinct millisecond, never one integer per line.
class DeliveryTrace {
 public:
  // The largest time a line may hold: 2^32-1 ms, about 49.7 days.
  static constexpr uint64_t kMaxMillis = 0xffffffffu;

  // Throws UsageError("PATH:LINE: what is wrong") (or "PATH: cannot open: why").
  static DeliveryTrace load(const std::string& path);
  // Where the trace a user NAMEd is: NAME itself if it is a file or names a directory (holds a '/'); else
  // the first of $TM_TRACE_PATH's directories (colon-separated) and the installed traces that holds it.
  // A bare name found nowhere throws UsageError naming every place looked in.
  static std::string find(const std::string& name);
  // find(NAME), or NAME if it is found nowhere: for comparing files before the reader says what is missing.
  static std::string find_or_name(const std::string& name);
  // The directory `make install` puts the project's traces in.
  static const char* installed_dir();
  // The same for text in memory; NAME stands for the path in errors.
  static DeliveryTrace parse(std::string_view text, const std::string& name);

  uint64_t period_ms() const { return period_ms_; }
  uint64_t opportunities() const { return opportunities_; }  // per period (= lines)
  size_t memory_bytes() const { return runs_->capacity() + sizeof *this; }

  // Opportunities from time 0; after the last line, the trace loops or, with ONCE, ends (kNever).
  // The cursor's next() consumes the opportunity it returns.
  std::unique_ptr<OpportunitySource> cursor(bool once) const;
  // Calls F(ms, count) for each distinct time of one period, in increasing order (count >= 1).
  void for_each_run(const std::function<void(uint64_t ms, uint64_t count)>& f) const;

 private:
  friend class TraceBuilder;
  DeliveryTrace() = default;
  std::shared_ptr<const std::vector<uint8_t>> runs_;  // shared with cursors, so they outlive the trace
  uint64_t period_ms_ = 0, opportunities_ = 0, run_count_ = 0;
};

// The IP bytes one opportunity lets through, and its bits (what rates count).
constexpr uint64_t kOpportunityBytes = 1500;
constexpr uint64_t kOpportunityBits = kOpportunityBytes * 8;

// Opportunity i (i = 1, 2, ...) at i * 12000 / rate seconds, rounded up to the ns: one 1500-byte packet per
// serialization time, the first one serialization time after time 0 (as a trace "1\n2\n3..." at 12 Mbit/s).
class ConstantRate : public OpportunitySource {
 public:
  explicit ConstantRate(uint64_t bits_per_second);
  Nanos next() override;
  uint64_t skip_before(Nanos t) override;
  static Nanos time_of(uint64_t index, uint64_t bits_per_second);

 private:
  uint64_t rate_;
  uint64_t index_ = 1;  // of the opportunity next() returns
};

}  // namespace tracemod
