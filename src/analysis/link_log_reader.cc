#include "analysis/link_log_reader.hh"

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "analysis/text.hh"

namespace tracemod {
namespace {

constexpr std::string_view kBasePrefix = "# base timestamp:";
constexpr Nanos kMaxMillis = 9'000'000'000'000;  // about 285 years: ns still fit in 63 bits
constexpr int64_t kMaxBins = int64_t{1} << 22;   // 256 MiB of bins

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}
bool is_blank(char c) {
  return c == ' ' || c == '\t';
}

// Splits on runs of blanks; returns the number of fields found, at most MAX (the rest stays in the last).
size_t split(std::string_view line, std::string_view* fields, size_t max) {
  size_t n = 0, i = 0;
  while (n < max) {
    while (i < line.size() && is_blank(line[i])) ++i;
    if (i == line.size()) break;
    const size_t start = i;
    while (i < line.size() && (n + 1 == max || !is_blank(line[i]))) ++i;
    fields[n++] = line.substr(start, i - start);
  }
  return n;
}

// Milliseconds with optional decimals -> ns (digits past the ns are dropped); -1 if malformed.
Nanos parse_millis(std::string_view text) {
  const size_t dot = std::min(text.find('.'), text.size());
  if (dot == 0 || dot > 13 || dot + 1 == text.size()) return -1;
  Nanos ms = 0;
  for (size_t i = 0; i < dot; ++i) {
    if (!is_digit(text[i])) return -1;
    ms = ms * 10 + (text[i] - '0');
  }
  if (ms > kMaxMillis) return -1;
  Nanos frac = 0, scale = kMillisecond;
  for (size_t i = dot + 1; i < text.size(); ++i) {
    if (!is_digit(text[i])) return -1;
    scale /= 10;
    frac += (text[i] - '0') * scale;
  }
  return ms * kMillisecond + frac;
}

const char* event_shape(char kind) {
  switch (kind) {
    case '#':
      return "TIME # BYTES";
    case '+':
      return "TIME + SIZE";
    case '-':
      return "TIME - SIZE QDELAY";
    default:
      return "TIME d PACKETS BYTES";
  }
}

int64_t floor_div(int64_t a, int64_t b) {
  return a / b - (a % b != 0 && (a < 0) != (b < 0));
}

}  // namespace

// ------------------------------------------------------------------------------------------------------
// Parser

void LinkLogParser::fail(const std::string& what) const {
  throw UsageError(name_ + ":" + std::to_string(line_) + ": " + what);
}

Nanos LinkLogParser::time_field(std::string_view text, const char* what) const {
  const Nanos t = parse_millis(text);
  if (t < 0) fail("bad " + std::string(what) + " " + quote_text(text) + ": expected milliseconds such as 12 or 12.345");
  return t;
}

uint64_t LinkLogParser::count_field(std::string_view text, const char* what) const {
  uint64_t v = 0;
  const bool digits = !text.empty() && text.size() <= 18 && std::all_of(text.begin(), text.end(), is_digit);
  if (!digits) fail("bad " + std::string(what) + " " + quote_text(text) + ": expected a whole number");
  for (char c : text) v = v * 10 + static_cast<uint64_t>(c - '0');
  return v;
}

void LinkLogParser::header(std::string_view line) {
  if (line.substr(0, kBasePrefix.size()) != kBasePrefix) return;  // comments and other tools' headers
  std::string_view value = line.substr(kBasePrefix.size());
  while (!value.empty() && is_blank(value.front())) value.remove_prefix(1);
  while (!value.empty() && is_blank(value.back())) value.remove_suffix(1);
  if (base_line_ != 0) fail("second base timestamp (the first is on line " + std::to_string(base_line_) + ")");
  base_ = time_field(value, "base timestamp");
  base_line_ = line_;
}

bool LinkLogParser::parse(std::string_view line, LogEvent& event) {
  ++line_;
  if (!line.empty() && line.back() == '\r') fail("carriage return at the end of the line (CRLF line endings?)");
  if (line.empty()) fail("empty line");
  if (line.front() == '#') {
    header(line);
    return false;
  }
  std::string_view f[5];
  const size_t n = split(line, f, 5);
  if (n < 3 || f[1].size() != 1)
    fail("expected 'TIME # BYTES', 'TIME + SIZE', 'TIME - SIZE QDELAY' or 'TIME d PACKETS BYTES'");
  const char kind = f[1][0];
  if (kind != '#' && kind != '+' && kind != '-' && kind != 'd')
    fail("unknown event " + quote_text(f[1]) + " (expected #, +, - or d)");
  const size_t want = kind == '-' || kind == 'd' ? 4 : 3;
  if (n != want) fail(std::string(n < want ? "too few" : "too many") + " fields: expected '" + event_shape(kind) + "'");
  if (base_line_ == 0) fail("event before the '# base timestamp:' line");
  event.kind = static_cast<LogEvent::Kind>(kind);
  event.time = time_field(f[0], "time");
  event.packets = kind == 'd' ? count_field(f[2], "packet count") : 1;
  event.bytes = count_field(kind == 'd' ? f[3] : f[2], kind == 'd' ? "byte count" : "size");
  event.delay = kind == '-' ? time_field(f[3], "queueing delay") : 0;
  return true;
}

// ------------------------------------------------------------------------------------------------------
// Delays

void DelayHistogram::add(uint64_t micros) {
  auto& page = pages_[micros / kPage];
  if (!page) page = std::make_unique<uint64_t[]>(kPage);  // zeroed
  ++page[micros % kPage];
  ++count_;
}

uint64_t DelayHistogram::quantile(double q) const {
  const double wanted = std::floor(q * static_cast<double>(count_));
  const uint64_t rank = std::min(count_ - 1, static_cast<uint64_t>(std::max(0.0, wanted)));
  uint64_t below = 0;  // delays before the slot being looked at
  for (const auto& [number, counts] : pages_) {
    for (uint64_t i = 0; i < kPage; ++i) {
      below += counts[i];
      if (below > rank) return number * kPage + i;
    }
  }
  return 0;  // unreachable while count_ > 0
}

// ------------------------------------------------------------------------------------------------------
// Statistics

LinkLogStats::LinkLogStats(Nanos bin_width) : bin_width_(bin_width) {}

LogBin& LinkLogStats::bin_at(Nanos t) {
  const int64_t b = floor_div(t, bin_width_);
  if (bins_.empty()) first_bin_ = b;
  const int64_t low = std::min(first_bin_, b);
  const int64_t high = std::max(first_bin_ + static_cast<int64_t>(bins_.size()) - 1, b);
  if (high - low >= kMaxBins)
    throw UsageError("the log spans more than " + std::to_string(kMaxBins) + " bins: use a wider --bin");
  if (b < first_bin_) {  // lines a little out of order
    bins_.insert(bins_.begin(), static_cast<size_t>(first_bin_ - b), LogBin{});
    first_bin_ = b;
  }
  if (b - first_bin_ >= static_cast<int64_t>(bins_.size())) bins_.resize(static_cast<size_t>(b - first_bin_ + 1));
  return bins_[static_cast<size_t>(b - first_bin_)];
}

void LinkLogStats::add(const LogEvent& e, Nanos base) {
  const Nanos t = e.time - base;
  first_ = events_ == 0 ? t : std::min(first_, t);
  last_ = events_ == 0 ? t : std::max(last_, t);
  ++events_;
  for (LogBin* b : {&bin_at(t), &totals_}) {
    switch (e.kind) {
      case LogEvent::kOpportunity:
        b->capacity_bytes += e.bytes;
        break;
      case LogEvent::kArrival:
        b->arrival_bytes += e.bytes;
        break;
      case LogEvent::kDrop:
        b->drop_packets += e.packets;
        b->drop_bytes += e.bytes;
        break;
      case LogEvent::kDeparture:
        b->departure_bytes += e.bytes;
        b->departures += 1;
        b->delay_sum = saturating_add(b->delay_sum, e.delay);  // a delay may be 285 years: two would wrap
        b->max_delay = std::max(b->max_delay, e.delay);
        break;
    }
  }
  if (e.kind == LogEvent::kDeparture) delays_.add(static_cast<uint64_t>((e.delay + 500) / 1000));
}

namespace {
double mbps(uint64_t bytes, Nanos span) {
  return static_cast<double>(bytes) * 8e3 / static_cast<double>(span);
}
}  // namespace

double LinkLogStats::capacity_mbps() const {
  return mbps(totals_.capacity_bytes, last_ - first_);
}
double LinkLogStats::throughput_mbps() const {
  return mbps(totals_.departure_bytes, last_ - first_);
}
double LinkLogStats::delay_ms(double q) const {
  return static_cast<double>(delays_.quantile(q)) / 1000.0;
}

LinkLogStats read_link_log(LineReader& in, Nanos bin_width) {
  LinkLogParser parser(in.name());
  LinkLogStats stats(bin_width);
  LogEvent event;
  for (std::string_view line; in.next(line);) {
    if (!parser.parse(line, event)) continue;
    try {
      stats.add(event, parser.base());
    } catch (const UsageError& e) {
      parser.fail(e.what());
    }
  }
  const std::string& name = in.name();
  if (parser.line_number() == 0) throw UsageError(name + ": empty log");
  if (stats.events() == 0) throw UsageError(name + ": no events, only header lines");
  if (stats.last() == stats.first())
    throw UsageError(name + ": every event is at the same time: the log spans no time to average over");
  return stats;
}

// ------------------------------------------------------------------------------------------------------
// Report

namespace {

void append_delay(std::string& out, const LinkLogStats& s, int percent) {
  if (s.delays().count() == 0) {
    append_format(out, "%dth percentile per-packet queueing delay: none (no packet departed)\n", percent);
    return;
  }
  append_format(out, "%dth percentile per-packet queueing delay: %.3f ms\n", percent, s.delay_ms(percent / 100.0));
}

}  // namespace

std::string format_summary(const LinkLogStats& s) {
  std::string out;
  const double capacity = s.capacity_mbps(), throughput = s.throughput_mbps();
  append_format(out, "Average capacity: %.2f Mbits/s\n", capacity);
  if (s.totals().capacity_bytes > 0)
    append_format(out, "Average throughput: %.2f Mbits/s (%.1f%% utilization)\n", throughput,
                  100.0 * throughput / capacity);
  else
    append_format(out, "Average throughput: %.2f Mbits/s (no delivery opportunities)\n", throughput);
  for (int percent : {95, 50, 99}) append_delay(out, s, percent);
  append_format(out, "Drops: %" PRIu64 " packets, %" PRIu64 " bytes\n", s.totals().drop_packets, s.totals().drop_bytes);
  return out;
}

}  // namespace tracemod
