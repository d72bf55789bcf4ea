#include "link/trace_tools.hh"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <map>

#include "util/error.hh"
#include "util/file_descriptor.hh"
#include "util/random.hh"

namespace tracemod {
namespace {

using Wide = unsigned __int128;

constexpr uint64_t kBitMillis = kOpportunityBits * 1000;  // bits x ms per second
constexpr size_t kWriteChunk = 1 << 20;

std::string lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// TEXT as a duration with a unit (parse_duration's) in whole ms; throws UsageError(why) without the option.
uint64_t duration_ms(std::string_view text) {
  const Nanos ns = parse_duration(text, 0, kNever);
  if (ns % kMillisecond != 0) throw UsageError("not a whole number of milliseconds");
  if (ns / kMillisecond > static_cast<Nanos>(DeliveryTrace::kMaxMillis))
    throw UsageError("longer than a trace can be (4294967295 ms)");
  if (ns == 0) throw UsageError("must last at least 1 ms");
  return static_cast<uint64_t>(ns / kMillisecond);
}

RateSegment parse_segment(std::string_view text) {
  const size_t colon = text.find(':');
  if (colon == std::string_view::npos) throw UsageError("expected RATE:DURATION (e.g. 12mbit:2s or 0:1s)");
  const std::string rate = lower(text.substr(0, colon));
  RateSegment s;
  s.bits_per_second = rate == "0" || rate == "off" ? 0 : parse_rate(rate);
  s.ms = duration_ms(text.substr(colon + 1));
  return s;
}

// Opportunities of a segment at RATE lasting MS: the i with ceil(i * 12000 / rate s) <= MS.
uint64_t segment_opportunities(uint64_t rate, uint64_t ms) {
  return static_cast<uint64_t>(Wide{ms} * rate / kBitMillis);
}

// Calls FN(segment, start, length) for each segment of PLAN in turn, the last one cut at total_ms.
template <typename Fn>
void for_each_segment(const TracePlan& plan, Fn fn) {
  for (uint64_t start = 0; start < plan.total_ms;) {
    for (const RateSegment& s : plan.pattern) {
      if (start >= plan.total_ms) return;
      const uint64_t len = std::min(s.ms, plan.total_ms - start);
      fn(s, start, len);
      start += len;
    }
  }
}

// Whether PLAN has an opportunity: later cycles are cut shorter than the first, so it is enough to look there.
bool has_opportunity(const TracePlan& plan) {
  uint64_t start = 0;
  for (const RateSegment& s : plan.pattern) {
    const uint64_t len = std::min(s.ms, plan.total_ms - start);
    if (segment_opportunities(s.bits_per_second, len) > 0) return true;
    start += len;
    if (start >= plan.total_ms) break;
  }
  return false;
}

// "3.9 PB": about BYTES, in the largest decimal unit below it.
std::string size_text(double bytes) {
  const char* units[] = {"B", "kB", "MB", "GB", "TB", "PB", "EB"};
  size_t u = 0;
  for (; bytes >= 1000 && u + 1 < std::size(units); ++u) bytes /= 1000;
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g %s", bytes, units[u]);
  return buf;
}

// Opportunities of PLAN, stalls aside, at times in (from, to]: within a segment at rate r starting at S,
// opportunity i falls at or before S + x exactly when i <= x r / 12000000.
uint64_t opportunities_between(const TracePlan& plan, uint64_t from, uint64_t to) {
  uint64_t n = 0;
  for_each_segment(plan, [&](const RateSegment& s, uint64_t start, uint64_t len) {
    const uint64_t a = std::clamp(from, start, start + len) - start, b = std::clamp(to, start, start + len) - start;
    n += segment_opportunities(s.bits_per_second, b) - segment_opportunities(s.bits_per_second, a);
  });
  return n;
}

// Milliseconds after a stretch at RATE starts at which its Ith opportunity falls.
uint64_t opportunity_offset(uint64_t i, uint64_t rate) {
  return static_cast<uint64_t>((Wide{i} * kBitMillis + rate - 1) / rate);
}

// A duration drawn uniformly from [mean/2, 3 mean/2], in whole ms, at least 1.
uint64_t draw_around(RandomStream& random, uint64_t mean) {
  const double ms = static_cast<double>(mean) * (0.5 + random.uniform());
  return std::max<uint64_t>(1, static_cast<uint64_t>(ms + 0.5));
}

// Passes a plan's opportunities on to OUT with its stalls applied: those inside a stall are held back and
// come after it at the burst rate, merged in time order with the link's own.
class StallFilter {
 public:
  StallFilter(std::vector<Stall> stalls, uint64_t burst_rate, std::function<void(uint64_t)> out)
      : stalls_(std::move(stalls)), rate_(burst_rate), out_(std::move(out)) {}

  void offer(uint64_t ms) {
    while (next_ < stalls_.size() && ms > stalls_[next_].end_ms) start_burst();
    drain(ms);
    if (next_ < stalls_.size() && ms > stalls_[next_].start_ms) return;  // withheld
    out_(ms);
  }
  void finish() {
    while (next_ < stalls_.size()) start_burst();
    drain(UINT64_MAX);
  }

 private:
  void start_burst() {
    drain(UINT64_MAX);  // the previous burst ended before this stall began
    burst_from_ = stalls_[next_].end_ms;
    burst_left_ = stalls_[next_].withheld;
    burst_sent_ = 0;
    ++next_;
  }
  void drain(uint64_t upto) {
    for (; burst_sent_ < burst_left_; ++burst_sent_) {
      const uint64_t at = burst_from_ + opportunity_offset(burst_sent_ + 1, rate_);
      if (at > upto) return;
      out_(at);
    }
  }

  std::vector<Stall> stalls_;
  uint64_t rate_;
  std::function<void(uint64_t)> out_;
  size_t next_ = 0;
  uint64_t burst_from_ = 0, burst_left_ = 0, burst_sent_ = 0;
};

double to_mbps(uint64_t count, uint64_t ms) {
  return static_cast<double>(count) * static_cast<double>(kOpportunityBits) / 1000.0 / static_cast<double>(ms);
}

// Window counts of a trace as (count -> how many windows had it), so a long trace costs little memory.
using Histogram = std::map<uint64_t, uint64_t>;

// Counts per window of W ms over one period: window j holds the lines whose time modulo the period lies in
// [jW, jW + W). The last window runs past the period into the next loop; a line at the period itself is the
// next loop's time 0.
Histogram window_histogram(const DeliveryTrace& trace, uint64_t w, uint64_t& windows) {
  const uint64_t period = trace.period_ms(), n = (period + w - 1) / w;
  const uint64_t overrun = n * w - period;  // how far the last window reaches into the next loop
  windows = n;
  Histogram hist;
  uint64_t index = 0, count = 0, first = 0, last = 0, at_period = 0, head = 0;
  auto close_through = [&](uint64_t upto) {  // closes windows index..upto-1
    if (index >= upto) return;
    ++hist[count];
    if (index == 0) first = count;
    if (index == n - 1) last = count;
    if (upto - index > 1) hist[0] += upto - index - 1;  // the empty windows between
    index = upto;
    count = 0;
  };
  trace.for_each_run([&](uint64_t ms, uint64_t c) {
    if (ms % period < overrun % period) head += c;
    if (ms == period) {
      at_period = c;
      return;
    }
    close_through(ms / w);
    count += c;
  });
  close_through(n);
  // The first window also holds the lines at the period; the last one what it reaches of the next loop(s).
  auto replace = [&](uint64_t from, uint64_t to) {
    if (--hist[from] == 0) hist.erase(from);
    ++hist[to];
  };
  const uint64_t spill = overrun / period * trace.opportunities() + head;
  if (n == 1) {
    replace(first, first + at_period + spill);
  } else {
    replace(first, first + at_period);
    replace(last, last + spill);
  }
  return hist;
}

// The nearest-rank P-th percentile of the counts in HIST (N of them).
uint64_t percentile(const Histogram& hist, uint64_t n, unsigned p) {
  const uint64_t rank = std::max<uint64_t>(1, (n * p + 99) / 100);
  uint64_t seen = 0;
  for (const auto& [count, windows] : hist) {
    seen += windows;
    if (seen >= rank) return count;
  }
  return hist.rbegin()->first;
}

WindowStats window_stats(const DeliveryTrace& trace, uint64_t w) {
  WindowStats s;
  s.window_ms = w;
  const Histogram hist = window_histogram(trace, w, s.windows);
  s.min = to_mbps(hist.begin()->first, w);
  s.p5 = to_mbps(percentile(hist, s.windows, 5), w);
  s.p50 = to_mbps(percentile(hist, s.windows, 50), w);
  s.p95 = to_mbps(percentile(hist, s.windows, 95), w);
  s.max = to_mbps(hist.rbegin()->first, w);
  return s;
}

std::string fixed2(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f", v);
  return buf;
}

// Lines of text to a file descriptor in large writes.
class LineWriter {
 public:
  LineWriter(int fd, std::string what) : fd_(fd), what_(std::move(what)) { buf_.reserve(kWriteChunk + 32); }
  void line(uint64_t v) {
    char text[24];
    const auto r = std::to_chars(text, text + sizeof text, v);
    buf_.append(text, r.ptr);
    buf_ += '\n';
    if (buf_.size() >= kWriteChunk) flush();
  }
  void flush() {
    write_all(fd_, buf_, what_);
    buf_.clear();
  }

 private:
  int fd_;
  std::string what_, buf_;
};

}  // namespace

uint64_t parse_duration_ms(const std::string& option, std::string_view text) {
  try {
    return duration_ms(text);
  } catch (const UsageError& e) {
    throw UsageError("invalid " + option + " '" + std::string(text) + "': " + e.what());
  }
}

std::vector<RateSegment> parse_segments(const std::string& option, std::string_view text) {
  std::vector<RateSegment> out;
  for (size_t begin = 0;;) {
    const size_t comma = std::min(text.find(',', begin), text.size());
    const std::string_view item = text.substr(begin, comma - begin);
    try {
      out.push_back(parse_segment(item));
    } catch (const UsageError& e) {
      throw UsageError("invalid " + option + " segment '" + std::string(item) + "': " + e.what());
    }
    if (comma == text.size()) return out;
    begin = comma + 1;
  }
}

StallPlan parse_stalls(const std::string& option, std::string_view text) {
  const size_t colon = text.find(':');
  if (colon == std::string_view::npos)
    throw UsageError("invalid " + option + " '" + std::string(text) + "': expected EVERY:LENGTH (e.g. 2s:300ms)");
  StallPlan p;
  p.every_ms = parse_duration_ms(option, text.substr(0, colon));
  p.length_ms = parse_duration_ms(option, text.substr(colon + 1));
  return p;
}

uint64_t burst_rate(const TracePlan& plan) {
  if (plan.stalls.burst_bits_per_second) return plan.stalls.burst_bits_per_second;
  uint64_t r = 0;
  for (const RateSegment& s : plan.pattern) r = std::max(r, s.bits_per_second);
  return std::clamp<uint64_t>(8 * r, 1, kMaxRate);
}

std::vector<Stall> plan_stalls(const TracePlan& plan) {
  std::vector<Stall> out;
  const StallPlan& p = plan.stalls;
  if (p.every_ms == 0) return out;
  RandomStream random(p.seed, 0);
  for (uint64_t free_from = 0;;) {
    Stall s;
    s.start_ms = free_from + draw_around(random, p.every_ms);
    s.end_ms = s.start_ms + draw_around(random, p.length_ms);
    if (s.end_ms >= plan.total_ms) return out;
    s.withheld = opportunities_between(plan, s.start_ms, s.end_ms);
    const uint64_t burst_end = s.end_ms + (s.withheld ? opportunity_offset(s.withheld, burst_rate(plan)) : 0);
    if (burst_end >= plan.total_ms) return out;
    out.push_back(s);
    free_from = burst_end;
  }
}

void generate_trace(const TracePlan& plan, const std::function<void(uint64_t ms)>& emit) {
  if (!has_opportunity(plan))
    throw UsageError("the trace would have no opportunity at all: raise a rate or lengthen a segment");
  bool held = false;
  uint64_t pending = 0;  // each line waits for the next, so the last one can be moved to the end
  StallFilter stalls(plan_stalls(plan), burst_rate(plan), [&](uint64_t ms) {
    if (held) emit(pending);
    pending = ms;
    held = true;
  });
  for_each_segment(plan, [&](const RateSegment& s, uint64_t start, uint64_t len) {
    const uint64_t rate = s.bits_per_second, n = segment_opportunities(rate, len);
    for (uint64_t i = 1; i <= n; ++i) stalls.offer(start + opportunity_offset(i, rate));
  });
  stalls.finish();
  emit(plan.total_ms);
}

uint64_t trace_lines(const TracePlan& plan) {
  uint64_t cycle_ms = 0, per_cycle = 0;
  for (const RateSegment& s : plan.pattern) {
    cycle_ms += s.ms;
    per_cycle += segment_opportunities(s.bits_per_second, s.ms);
  }
  const uint64_t cycles = plan.total_ms / cycle_ms;
  Wide n = Wide{per_cycle} * cycles;
  uint64_t left = plan.total_ms - cycles * cycle_ms;  // of the last, cut cycle
  for (const RateSegment& s : plan.pattern) {
    const uint64_t len = std::min(s.ms, left);
    n += segment_opportunities(s.bits_per_second, len);
    left -= len;
  }
  return n > UINT64_MAX ? UINT64_MAX : static_cast<uint64_t>(n);
}

void write_trace(const TracePlan& plan, const std::string& path) {
  if (!has_opportunity(plan)) generate_trace(plan, [](uint64_t) {});  // throws before the file is touched
  if (const uint64_t lines = trace_lines(plan); lines > kMaxTraceLines) {
    const double line_bytes = static_cast<double>(std::to_string(plan.total_ms).size() + 1);  // at most
    throw UsageError("the trace would have " + std::to_string(lines) + " lines, about " +
                     size_text(static_cast<double>(lines) * line_bytes) + ": more than " +
                     std::to_string(kMaxTraceLines) +
                     " (about 1 GB); make a shorter one (tm-link loops a trace), or give tm-link a constant rate, "
                     "which needs none (--uplink-rate)");
  }
  FileDescriptor file;
  if (!path.empty()) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) throw_errno("cannot write " + path, errno);
    file = FileDescriptor(fd);
  }
  LineWriter out(path.empty() ? STDOUT_FILENO : file.get(), path.empty() ? "write standard output" : "write " + path);
  generate_trace(plan, [&](uint64_t ms) { out.line(ms); });
  out.flush();
}

double mean_mbps(uint64_t opportunities, uint64_t ms) {
  return to_mbps(opportunities, ms);
}

TraceStats trace_stats(const DeliveryTrace& trace, const std::vector<uint64_t>& windows_ms) {
  TraceStats s;
  s.period_ms = trace.period_ms();
  s.opportunities = trace.opportunities();
  s.mean_mbps = mean_mbps(s.opportunities, s.period_ms);
  for (uint64_t w : windows_ms) s.windows.push_back(window_stats(trace, w));
  return s;
}

std::string format_stats(const std::string& name, const TraceStats& s) {
  std::string out = name + ":\n";
  out += "  duration: " + std::to_string(s.period_ms) + " ms\n";
  out += "  opportunities: " + std::to_string(s.opportunities) + "\n";
  out += "  mean rate: " + fixed2(s.mean_mbps) + " Mbit/s\n";
  for (const WindowStats& w : s.windows) {
    out += "  rate over " + std::to_string(w.window_ms) + " ms windows (" + std::to_string(w.windows) + "): min " +
           fixed2(w.min) + ", p5 " + fixed2(w.p5) + ", p50 " + fixed2(w.p50) + ", p95 " + fixed2(w.p95) + ", max " +
           fixed2(w.max) + " Mbit/s\n";
  }
  return out;
}

std::string format_validation(const std::string& name, const DeliveryTrace& trace) {
  return name + ": ok, " + std::to_string(trace.opportunities()) + " opportunities over " +
         std::to_string(trace.period_ms()) + " ms, mean " +
         fixed2(mean_mbps(trace.opportunities(), trace.period_ms())) + " Mbit/s\n";
}

}  // namespace tracemod
