// Reading Mahimahi delivery traces into compact runs, walking them, and constant rates.
#include "link/trace.hh"

#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>

#include "util/error.hh"
#include "util/file_descriptor.hh"

namespace tracemod {
namespace {

constexpr size_t kQuoteMax = 24;  // characters of a bad line shown in its error

// A run is one varint (ms since the previous run << 3 | min(count - 1, 7)), then, if count - 1 >= 7, a
// second varint (count - 8): a millisecond after the previous one with up to 8 opportunities takes a byte.
constexpr uint64_t kInlineCounts = 8;

void put_varint(std::vector<uint8_t>& out, uint64_t v) {
  for (; v >= 0x80; v >>= 7) out.push_back(static_cast<uint8_t>(v | 0x80));
  out.push_back(static_cast<uint8_t>(v));
}

uint64_t get_varint(const uint8_t*& p) {
  uint64_t v = 0;
  for (int shift = 0;; shift += 7) {
    const uint8_t b = *p++;
    v |= static_cast<uint64_t>(b & 0x7f) << shift;
    if (b < 0x80) return v;
  }
}

void put_run(std::vector<uint8_t>& out, uint64_t delta_ms, uint64_t count) {
  const uint64_t extra = count - 1;
  put_varint(out, delta_ms << 3 | std::min(extra, kInlineCounts - 1));
  if (extra >= kInlineCounts - 1) put_varint(out, extra - (kInlineCounts - 1));
}

// Decodes the run at P (advancing it): adds its gap to MS and returns its opportunity count.
uint64_t get_run(const uint8_t*& p, uint64_t& ms) {
  const uint64_t head = get_varint(p);
  ms += head >> 3;
  uint64_t count = (head & 7) + 1;
  if (count == kInlineCounts) count += get_varint(p);
  return count;
}

bool is_digit(char c) {
  return static_cast<unsigned char>(c - '0') < 10;
}

}  // namespace

// Collects the lines of a trace, in order, into runs; checks everything but the line syntax.
class TraceBuilder {
 public:
  explicit TraceBuilder(std::string name) : name_(std::move(name)), runs_(std::make_shared<std::vector<uint8_t>>()) {}

  // Each line of IN, then the trace they make.
  DeliveryTrace read(LineReader& in) {
    for (std::string_view text; in.next(text);) line(text);
    return finish();
  }

 private:
  void line(std::string_view text) {
    ++lines_;
    // The usual line, up to 10 digits, in one pass; anything else is looked at closely.
    uint64_t ms = 0;
    size_t i = 0;
    for (; i < text.size() && i < 10 && is_digit(text[i]); ++i) ms = ms * 10 + static_cast<uint64_t>(text[i] - '0');
    if (i == text.size() && i > 0 && ms <= DeliveryTrace::kMaxMillis) return add(ms);
    unusual(text);
  }

  void unusual(std::string_view text) {
    if (text.empty()) fail("empty line");
    uint64_t ms = 0;
    size_t i = 0;
    for (; i < text.size() && is_digit(text[i]); ++i) {
      if (ms <= DeliveryTrace::kMaxMillis) ms = ms * 10 + static_cast<uint64_t>(text[i] - '0');
    }
    if (i < text.size()) {
      if (text.back() == '\r') fail("CRLF line ending (a Windows text file?): convert it with dos2unix");
      fail("not an unsigned integer: " + quote_text(text, kQuoteMax));
    }
    if (ms > DeliveryTrace::kMaxMillis)
      fail(quote_text(text, kQuoteMax) + " is too large: at most " + std::to_string(DeliveryTrace::kMaxMillis) + " ms");
    add(ms);
  }

  DeliveryTrace finish() {
    if (lines_ == 0) throw UsageError(name_ + ": empty file: no timestamps");
    if (run_ms_ == 0) fail("trace must last a nonzero time (its last value is 0 ms)");
    put_run(*runs_, run_ms_ - previous_run_ms_, run_count_);
    runs_->shrink_to_fit();
    DeliveryTrace trace;
    trace.runs_ = std::move(runs_);
    trace.period_ms_ = run_ms_;
    trace.opportunities_ = lines_;
    trace.run_count_ = runs_done_ + 1;
    return trace;
  }

  void add(uint64_t ms) {
    if (lines_ > 1) {
      if (ms == run_ms_) {
        ++run_count_;
        return;
      }
      if (ms < run_ms_) fail("decreasing time: " + std::to_string(ms) + " after " + std::to_string(run_ms_));
      put_run(*runs_, run_ms_ - previous_run_ms_, run_count_);
      previous_run_ms_ = run_ms_;
      ++runs_done_;
    }
    run_ms_ = ms;
    run_count_ = 1;
  }

  [[noreturn]] void fail(const std::string& what) const {
    throw UsageError(name_ + ":" + std::to_string(lines_) + ": " + what);
  }

  std::string name_;
  std::shared_ptr<std::vector<uint8_t>> runs_;
  uint64_t lines_ = 0, runs_done_ = 0;
  uint64_t previous_run_ms_ = 0, run_ms_ = 0, run_count_ = 0;  // the run being gathered
};

DeliveryTrace DeliveryTrace::parse(std::string_view text, const std::string& name) {
  LineReader in = LineReader::of_text(text, name);
  return TraceBuilder(name).read(in);
}

const char* DeliveryTrace::installed_dir() {
  return TRACEMOD_TRACEDIR;
}

std::string DeliveryTrace::find(const std::string& name) {
  struct stat st{};
  if (name.find('/') != std::string::npos || ::stat(name.c_str(), &st) == 0) return name;
  std::vector<std::string> dirs;
  if (const char* path = getenv("TM_TRACE_PATH"))
    for (std::string_view rest = path; !rest.empty();) {
      const size_t colon = std::min(rest.find(':'), rest.size());
      if (colon > 0) dirs.emplace_back(rest.substr(0, colon));
      rest.remove_prefix(std::min(colon + 1, rest.size()));
    }
  dirs.emplace_back(installed_dir());
  std::string looked = "the current directory";
  for (const std::string& dir : dirs) {
    const std::string candidate = dir + "/" + name;
    if (::stat(candidate.c_str(), &st) == 0) return candidate;
    looked += ", " + dir;
  }
  throw UsageError(name + ": cannot open: no such trace (looked in " + looked + ")");
}

std::string DeliveryTrace::find_or_name(const std::string& name) {
  try {
    return find(name);
  } catch (const UsageError&) {
    return name;
  }
}

DeliveryTrace DeliveryTrace::load(const std::string& path) {
  LineReader in(path);
  return TraceBuilder(path).read(in);
}

void DeliveryTrace::for_each_run(const std::function<void(uint64_t ms, uint64_t count)>& f) const {
  const uint8_t* p = runs_->data();
  uint64_t ms = 0;
  for (uint64_t i = 0; i < run_count_; ++i) {
    const uint64_t count = get_run(p, ms);
    f(ms, count);
  }
}

namespace {

// Walks a trace's runs period after period. A whole period that lies before a skip target is skipped by
// arithmetic, so skipping costs at most one period's runs however far it goes.
class TraceCursor : public OpportunitySource {
 public:
  TraceCursor(std::shared_ptr<const std::vector<uint8_t>> runs, uint64_t run_count, uint64_t period_ms,
              uint64_t per_period, bool once)
      : runs_(std::move(runs)),
        run_count_(run_count),
        period_(static_cast<Nanos>(period_ms) * kMillisecond),
        per_period_(per_period),
        once_(once) {}

  Nanos next() override {
    if (left_ == 0 && !advance(kNoSkip)) return kNever;
    --left_;
    return now();
  }

  uint64_t skip_before(Nanos t) override {
    uint64_t skipped = 0;
    for (;;) {
      if (left_ == 0 && !advance(t, &skipped)) return skipped;
      if (now() >= t) return skipped;
      skipped += left_;
      left_ = 0;
    }
  }

 private:
  static constexpr Nanos kNoSkip = std::numeric_limits<Nanos>::min();
  // Periods must start before this for their times to fit in int64 ns (a trace lasts at most ~2^52 ns).
  static constexpr Nanos kLastBase = kNever / 2;

  Nanos now() const { return base_ + static_cast<Nanos>(ms_) * kMillisecond; }

  // Moves to the next run, into the next period if need be, skipping the whole periods that end before
  // SKIP_UNTIL (adding their opportunities to *SKIPPED). False once a once-cursor is spent.
  bool advance(Nanos skip_until, uint64_t* skipped = nullptr) {
    if (done_) return false;
    if (runs_read_ == run_count_ || !started_) {
      if (!start_period(skip_until, skipped)) return false;
    }
    left_ = get_run(pos_, ms_);
    ++runs_read_;
    return true;
  }

  bool start_period(Nanos skip_until, uint64_t* skipped) {
    if (started_) {
      if (once_ || base_ > kLastBase - period_) return end();
      base_ += period_;
    }
    started_ = true;
    // A period ends with its last line at base + period: wholly before SKIP_UNTIL while that is earlier.
    if (!once_ && skipped && skip_until > base_ + period_) {
      const uint64_t whole = static_cast<uint64_t>((skip_until - 1 - base_) / period_);
      base_ += static_cast<Nanos>(whole) * period_;
      *skipped += whole * per_period_;
      if (base_ > kLastBase) return end();
    }
    pos_ = runs_->data();
    runs_read_ = 0;
    ms_ = 0;
    return true;
  }

  bool end() {
    done_ = true;
    return false;
  }

  std::shared_ptr<const std::vector<uint8_t>> runs_;
  uint64_t run_count_;
  Nanos period_;
  uint64_t per_period_;
  bool once_, started_ = false, done_ = false;
  const uint8_t* pos_ = nullptr;  // the next run to decode
  uint64_t runs_read_ = 0;        // in this period
  uint64_t ms_ = 0;               // the current run's time in its period
  uint64_t left_ = 0;             // opportunities left in the current run
  Nanos base_ = 0;                // start of the current period
};

}  // namespace

std::unique_ptr<OpportunitySource> DeliveryTrace::cursor(bool once) const {
  return std::make_unique<TraceCursor>(runs_, run_count_, period_ms_, opportunities_, once);
}

namespace {

using Wide = unsigned __int128;  // products of counts, bits and nanoseconds overflow 64 bits

constexpr uint64_t kBitNanos = kOpportunityBits * 1000000000ull;  // bits x ns per second

}  // namespace

ConstantRate::ConstantRate(uint64_t bits_per_second) : rate_(bits_per_second) {}

Nanos ConstantRate::time_of(uint64_t index, uint64_t bits_per_second) {
  if (bits_per_second == 0) return kNever;
  const Wide ns = (Wide{index} * kBitNanos + bits_per_second - 1) / bits_per_second;
  return ns >= static_cast<Wide>(kNever) ? kNever : static_cast<Nanos>(ns);
}

Nanos ConstantRate::next() {
  const Nanos t = time_of(index_, rate_);
  if (t != kNever) ++index_;
  return t;
}

uint64_t ConstantRate::skip_before(Nanos t) {
  if (rate_ == 0 || t <= 0) return 0;
  // time_of(i) < t exactly when i * 12000 s / rate <= t - 1 ns.
  const Wide first = (Wide{static_cast<uint64_t>(t - 1)} * rate_) / kBitNanos + 1;
  if (first <= index_) return 0;
  const uint64_t skipped = static_cast<uint64_t>(first) - index_;
  index_ = static_cast<uint64_t>(first);
  return skipped;
}

}  // namespace tracemod
