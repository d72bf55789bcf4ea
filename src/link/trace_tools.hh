// What tm-trace computes, apart from its command line: durations and rate segments as the user writes them,
// synthetic traces, statistics, and the one-line verdict of `validate`.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "link/trace.hh"

namespace tracemod {

// "100ms", "10s", "2min", "1.5s" (any case) -> milliseconds: a unit is required, the result must be a whole
// number of ms from 1 to DeliveryTrace::kMaxMillis. Throws UsageError("invalid OPTION 'TEXT': ...").
uint64_t parse_duration_ms(const std::string& option, std::string_view text);

// A stretch of a synthetic trace at one rate; 0 bit/s is a stretch without opportunities.
struct RateSegment {
  uint64_t bits_per_second = 0;
  uint64_t ms = 0;
};

// "12mbit:2s,0:1s" -> segments. A rate is parse_rate's, or "0"/"off"; the duration parse_duration_ms's.
std::vector<RateSegment> parse_segments(const std::string& option, std::string_view text);

// Stalls laid over a trace, as a cellular link has them: no opportunity during a stall, then the
// opportunities it withheld arrive at burst_bits_per_second on top of the link's own, so the mean rate stays
// the trace's. Each stall starts a time drawn uniformly from [every_ms/2, 3 every_ms/2] after the previous
// burst ended (or after time 0) and lasts a time drawn from [length_ms/2, 3 length_ms/2] (at least 1 ms),
// from RandomStream(seed, 0); a stall whose burst would not end before the trace does is not made.
struct StallPlan {
  uint64_t every_ms = 0, length_ms = 0;  // every_ms 0: no stalls
  uint64_t burst_bits_per_second = 0;    // 0: see burst_rate()
  uint64_t seed = 0;
};

// One stall: no opportunity at times in (start_ms, end_ms]; the WITHHELD opportunities that fell there come
// after end_ms, opportunity i at end_ms + ceil(i * 12000 / burst rate) ms.
struct Stall {
  uint64_t start_ms = 0, end_ms = 0, withheld = 0;
};

// "2s:300ms" -> every_ms and length_ms (durations as parse_duration_ms reads them).
StallPlan parse_stalls(const std::string& option, std::string_view text);

// The segments played in turn, over and over, until total_ms, with stalls if any.
struct TracePlan {
  std::vector<RateSegment> pattern;
  uint64_t total_ms = 0;
  StallPlan stalls;
};

// The rate at which PLAN's withheld opportunities come back: burst_bits_per_second, or if that is 0, eight
// times the highest rate of the pattern.
uint64_t burst_rate(const TracePlan& plan);

// Where PLAN's stalls fall (empty without stalls).
std::vector<Stall> plan_stalls(const TracePlan& plan);

// Calls EMIT with each line of PLAN's trace, in order. Within a segment starting at S, opportunity i falls at
// S + ceil(i * 12000 / rate) ms (i = 1, 2, ...), so that its rate is exact over any whole number of
// opportunities; stalls then move opportunities as StallPlan says. The last line is always total_ms, the
// period Mahimahi will read: if no opportunity falls there, the last one moves there (the count stays as
// computed). Throws UsageError if PLAN has none.
void generate_trace(const TracePlan& plan, const std::function<void(uint64_t ms)>& emit);

// The lines of PLAN's trace, one per opportunity (stalls move opportunities, never add or drop any).
uint64_t trace_lines(const TracePlan& plan);

// generate_trace() written as text to PATH (created or truncated), or to standard output if PATH is empty.
// A plan without opportunities, or with more than kMaxTraceLines (about a gigabyte of text: rates and durations
// each within their bounds can ask for petabytes), throws UsageError before PATH is touched; failing to write
// throws Error.
constexpr uint64_t kMaxTraceLines = 100000000;
void write_trace(const TracePlan& plan, const std::string& path);

// The mean rate of N opportunities spread over MS milliseconds.
double mean_mbps(uint64_t opportunities, uint64_t ms);

// Rates over consecutive windows of one period (the last window runs on into the next loop), in Mbit/s;
// percentiles by nearest rank.
struct WindowStats {
  uint64_t window_ms = 0, windows = 0;
  double min = 0, p5 = 0, p50 = 0, p95 = 0, max = 0;
};

struct TraceStats {
  uint64_t period_ms = 0, opportunities = 0;
  double mean_mbps = 0;
  std::vector<WindowStats> windows;
};

TraceStats trace_stats(const DeliveryTrace& trace, const std::vector<uint64_t>& windows_ms);

// What `tm-trace stats` and `tm-trace validate` print for one file.
std::string format_stats(const std::string& name, const TraceStats& stats);
std::string format_validation(const std::string& name, const DeliveryTrace& trace);

}  // namespace tracemod
