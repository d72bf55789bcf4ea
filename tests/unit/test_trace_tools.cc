#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>

#include "link/trace_tools.hh"
#include "util/error.hh"

namespace tracemod {
namespace {

using Lines = std::vector<uint64_t>;

Lines lines_of(const TracePlan& plan) {
  Lines out;
  generate_trace(plan, [&](uint64_t v) { out.push_back(v); });
  return out;
}

TracePlan plan(std::vector<RateSegment> pattern, uint64_t total_ms = 0) {
  TracePlan p{std::move(pattern), total_ms, {}};
  if (p.total_ms == 0)
    for (const RateSegment& s : p.pattern) p.total_ms += s.ms;
  return p;
}

std::string usage_error(const std::function<void()>& f) {
  try {
    f();
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

TEST(TraceToolsDuration, UnitsAndWholeMilliseconds) {
  EXPECT_EQ(parse_duration_ms("--duration", "100ms"), 100u);
  EXPECT_EQ(parse_duration_ms("--duration", "10s"), 10000u);
  EXPECT_EQ(parse_duration_ms("--duration", "10S"), 10000u);
  EXPECT_EQ(parse_duration_ms("--duration", "2min"), 120000u);
  EXPECT_EQ(parse_duration_ms("--duration", "1.5s"), 1500u);
  EXPECT_EQ(parse_duration_ms("--duration", "0.001s"), 1u);
  EXPECT_EQ(parse_duration_ms("--duration", "4294967295ms"), DeliveryTrace::kMaxMillis);
  EXPECT_EQ(usage_error([] { parse_duration_ms("--duration", "1.5ms"); }),
            "invalid --duration '1.5ms': not a whole number of milliseconds");
  EXPECT_EQ(usage_error([] { parse_duration_ms("--window", "10"); }),
            "invalid --window '10': expected a duration and a unit: ns, us, ms, s, min or h (e.g. 200ms or 1.5s)");
  EXPECT_EQ(usage_error([] { parse_duration_ms("--duration", "0s"); }),
            "invalid --duration '0s': must last at least 1 ms");
  EXPECT_EQ(usage_error([] { parse_duration_ms("--duration", "4294967296ms"); }),
            "invalid --duration '4294967296ms': longer than a trace can be (4294967295 ms)");
  for (const char* bad : {"-1s", "1..5s", "s", "10 s", "10sec", "1e3ms", ""})
    EXPECT_NE(usage_error([&] { parse_duration_ms("--duration", bad); }), "") << bad;
}

TEST(TraceToolsSegments, RatesAndDurations) {
  const std::vector<RateSegment> s = parse_segments("--on-off", "12mbit:2s,0:1s,OFF:500ms");
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s[0].bits_per_second, 12000000u);
  EXPECT_EQ(s[0].ms, 2000u);
  EXPECT_EQ(s[1].bits_per_second, 0u);
  EXPECT_EQ(s[1].ms, 1000u);
  EXPECT_EQ(s[2].bits_per_second, 0u);
  EXPECT_EQ(s[2].ms, 500u);
  EXPECT_EQ(usage_error([] { parse_segments("--steps", "12mbit"); }),
            "invalid --steps segment '12mbit': expected RATE:DURATION (e.g. 12mbit:2s or 0:1s)");
  EXPECT_EQ(usage_error([] { parse_segments("--steps", "12mbit:1s,"); }),
            "invalid --steps segment '': expected RATE:DURATION (e.g. 12mbit:2s or 0:1s)");
  EXPECT_EQ(usage_error([] {
              parse_segments("--steps", "12q:1s");
            }).rfind("invalid --steps segment '12q:1s': invalid rate", 0),
            0u);
  EXPECT_EQ(usage_error([] { parse_segments("--steps", "1mbit:1"); }),
            "invalid --steps segment '1mbit:1': expected a duration and a unit: ns, us, ms, s, min or h (e.g. 200ms or "
            "1.5s)");
}

TEST(TraceToolsMake, ConstantRateOnePerMillisecondAt12Mbit) {
  const Lines l = lines_of(plan({{12000000, 10000}}));
  ASSERT_EQ(l.size(), 10000u);
  for (uint64_t i = 0; i < l.size(); ++i) ASSERT_EQ(l[i], i + 1);
}

TEST(TraceToolsMake, OpportunityIAtCeilOfIX12000OverRate) {
  // 7 Mbit/s: 12/7 ms apart; the 7th lands exactly on 12 ms, so the rate does not drift.
  EXPECT_EQ(lines_of(plan({{7000000, 12}})), (Lines{2, 4, 6, 7, 9, 11, 12}));
  EXPECT_EQ(lines_of(plan({{7000000, 24}})), (Lines{2, 4, 6, 7, 9, 11, 12, 14, 16, 18, 19, 21, 23, 24}));
}

TEST(TraceToolsMake, LastLineIsThePeriodEvenWithoutAnOpportunityThere) {
  // 1 Mbit/s: one per 12 ms, 8 of them in 100 ms; the 8th (96) moves to 100 so Mahimahi loops every 100 ms.
  EXPECT_EQ(lines_of(plan({{1000000, 100}})), (Lines{12, 24, 36, 48, 60, 72, 84, 100}));
  // A pattern ending "off": the last opportunity moves to the end of the off time, whose length survives.
  EXPECT_EQ(lines_of(plan({{12000000, 5}, {0, 3}})), (Lines{1, 2, 3, 4, 8}));
}

TEST(TraceToolsMake, StepsFollowEachOther) {
  EXPECT_EQ(lines_of(plan({{12000000, 3}, {6000000, 4}})), (Lines{1, 2, 3, 5, 7}));
}

TEST(TraceToolsMake, OnOffRepeatsUntilTheDurationAndIsCutThere) {
  EXPECT_EQ(lines_of(plan({{12000000, 5}, {0, 3}}, 20)), (Lines{1, 2, 3, 4, 5, 9, 10, 11, 12, 13, 17, 18, 19, 20}));
  EXPECT_EQ(lines_of(plan({{12000000, 5}, {0, 3}}, 3)), (Lines{1, 2, 3}));
}

TEST(TraceToolsMake, NoOpportunityIsAnError) {
  const std::string msg = "the trace would have no opportunity at all: raise a rate or lengthen a segment";
  EXPECT_EQ(usage_error([] { lines_of(plan({{1000000, 10}})); }), msg);
  EXPECT_EQ(usage_error([] { lines_of(plan({{0, 5}, {12000000, 5}}, 3)); }), msg);
}

TEST(TraceToolsMake, RoundTripThroughTheParser) {
  std::string text;
  generate_trace(plan({{5000000, 10000}, {20000000, 10000}, {2000000, 10000}}),
                 [&](uint64_t v) { text += std::to_string(v) + "\n"; });
  const DeliveryTrace t = DeliveryTrace::parse(text, "steps");
  EXPECT_EQ(t.period_ms(), 30000u);
  EXPECT_EQ(t.opportunities(), 4166u + 16666u + 1666u);
}

TracePlan stalled(uint64_t seed, uint64_t burst_bps = 0);

TEST(TraceToolsMake, TheLinesAreCountedBeforeAnyIsWritten) {
  for (const TracePlan& p : {plan({{12000000, 5}, {0, 3}}, 20), plan({{12000000, 5}, {0, 3}}, 3),
                             plan({{5000000, 10000}, {20000000, 10000}, {2000000, 10000}}),
                             plan({{7000000, 7}, {30000000, 2}}, 1000), stalled(1)})
    EXPECT_EQ(trace_lines(p), lines_of(p).size());
  // 1000 Gbit/s for 49.7 days, each within its bounds: 3.9 PB, refused before the file is created.
  const TracePlan huge = plan({{kMaxRate, DeliveryTrace::kMaxMillis}});
  EXPECT_EQ(trace_lines(huge), 357913941250000u);
  const std::string path = "/tmp/tm-trace-test-huge-" + std::to_string(getpid());
  const std::string why = usage_error([&] { write_trace(huge, path); });
  EXPECT_EQ(
      why.rfind("the trace would have 357913941250000 lines, about 3.94 PB: more than 100000000 (about 1 GB); ", 0), 0u)
      << why;
  EXPECT_NE(access(path.c_str(), F_OK), 0);
}

TracePlan stalled(uint64_t seed, uint64_t burst_bps) {
  TracePlan p = plan({{12000000, 20000}});
  p.stalls = {2000, 300, burst_bps, seed};
  return p;
}

TEST(TraceToolsStalls, ParsedAsEveryColonLength) {
  const StallPlan p = parse_stalls("--stalls", "2s:300ms");
  EXPECT_EQ(p.every_ms, 2000u);
  EXPECT_EQ(p.length_ms, 300u);
  EXPECT_EQ(usage_error([] { parse_stalls("--stalls", "2s"); }),
            "invalid --stalls '2s': expected EVERY:LENGTH (e.g. 2s:300ms)");
  EXPECT_EQ(usage_error([] { parse_stalls("--stalls", "2s:0ms"); }), "invalid --stalls '0ms': must last at least 1 ms");
}

TEST(TraceToolsStalls, DrawnWithinHalfToOneAndAHalfTimesTheirMeans) {
  const std::vector<Stall> stalls = plan_stalls(stalled(1));
  ASSERT_GE(stalls.size(), 6u);  // 20 s, about 2.35 s per stall and burst
  uint64_t free_from = 0;
  for (const Stall& s : stalls) {
    EXPECT_GE(s.start_ms - free_from, 1000u);
    EXPECT_LE(s.start_ms - free_from, 3000u);
    EXPECT_GE(s.end_ms - s.start_ms, 150u);
    EXPECT_LE(s.end_ms - s.start_ms, 450u);
    EXPECT_EQ(s.withheld, s.end_ms - s.start_ms);  // 12 Mbit/s: one opportunity per ms
    free_from = s.end_ms + (s.withheld + 7) / 8;   // the burst: 96 Mbit/s on top, 8 per ms
  }
  EXPECT_LT(stalls.back().end_ms, 20000u);
}

TEST(TraceToolsStalls, WithheldOpportunitiesComeBackInABurstOnTopOfTheLink) {
  const TracePlan p = stalled(1);
  const Lines l = lines_of(p);
  EXPECT_EQ(l.size(), 20000u);  // the mean rate is the link's
  EXPECT_EQ(l.back(), 20000u);
  EXPECT_TRUE(std::is_sorted(l.begin(), l.end()));
  const Stall s = plan_stalls(p).front();
  auto count = [&](uint64_t from, uint64_t to) {  // lines in (from, to]
    return std::upper_bound(l.begin(), l.end(), to) - std::upper_bound(l.begin(), l.end(), from);
  };
  EXPECT_EQ(count(s.start_ms - 100, s.start_ms), 100);
  EXPECT_EQ(count(s.start_ms, s.end_ms), 0);
  const uint64_t burst_ms = (s.withheld + 7) / 8;
  EXPECT_EQ(count(s.end_ms, s.end_ms + burst_ms), static_cast<long>(burst_ms + s.withheld));
  EXPECT_EQ(count(s.end_ms + burst_ms, s.end_ms + burst_ms + 100), 100);
}

TEST(TraceToolsStalls, TheBurstRateAndTheSeedChooseTheTrace) {
  EXPECT_EQ(burst_rate(stalled(1)), 96000000u);
  EXPECT_EQ(burst_rate(stalled(1, 24000000)), 24000000u);
  const Stall slow = plan_stalls(stalled(1, 24000000)).front();  // 2 per ms on top of the link's 1
  const Lines l = lines_of(stalled(1, 24000000));
  const auto after = std::upper_bound(l.begin(), l.end(), slow.end_ms);
  EXPECT_EQ(after[0], slow.end_ms + 1);
  EXPECT_EQ(after[1], slow.end_ms + 1);
  EXPECT_EQ(after[2], slow.end_ms + 1);
  EXPECT_EQ(lines_of(stalled(1)), lines_of(stalled(1)));
  EXPECT_NE(lines_of(stalled(1)), lines_of(stalled(2)));
  EXPECT_NE(plan_stalls(stalled(1)).front().start_ms, plan_stalls(stalled(2)).front().start_ms);
}

TEST(TraceToolsStalls, NoneWhoseBurstWouldOutlastTheTrace) {
  TracePlan p = plan({{12000000, 1000}});
  p.stalls = {200, 100, 500000, 1};  // a stall ends by 450 ms; its burst, 24 ms per opportunity, outlasts 1 s
  EXPECT_TRUE(plan_stalls(p).empty());
  EXPECT_EQ(lines_of(p), lines_of(plan({{12000000, 1000}})));
}

TEST(TraceToolsStats, WindowsOverOneLoop) {
  const DeliveryTrace t = DeliveryTrace::parse("1\n1\n150\n200\n", "t");  // the 200 is the next loop's time 0
  const TraceStats s = trace_stats(t, {100, 150, 500});
  EXPECT_EQ(s.period_ms, 200u);
  EXPECT_EQ(s.opportunities, 4u);
  EXPECT_DOUBLE_EQ(s.mean_mbps, 0.24);
  ASSERT_EQ(s.windows.size(), 3u);
  // 100 ms: [0,100) holds 1, 1 and the loop's 0; [100,200) holds 150.
  EXPECT_EQ(s.windows[0].windows, 2u);
  EXPECT_DOUBLE_EQ(s.windows[0].min, 0.12);
  EXPECT_DOUBLE_EQ(s.windows[0].p5, 0.12);
  EXPECT_DOUBLE_EQ(s.windows[0].p50, 0.12);
  EXPECT_DOUBLE_EQ(s.windows[0].p95, 0.36);
  EXPECT_DOUBLE_EQ(s.windows[0].max, 0.36);
  // 150 ms: [0,150) holds 3; [150,300) holds 150 and, from the next loop, 200, 201, 201.
  EXPECT_DOUBLE_EQ(s.windows[1].min, 3 * 12 / 150.0);
  EXPECT_DOUBLE_EQ(s.windows[1].max, 4 * 12 / 150.0);
  // 500 ms, longer than the loop: times 0, 1, 1, 150, 200, 201, 201, 350, 400, 401, 401.
  EXPECT_EQ(s.windows[2].windows, 1u);
  EXPECT_DOUBLE_EQ(s.windows[2].max, 11 * 12 / 500.0);
}

TEST(TraceToolsStats, EmptyWindowsAreCounted) {
  const DeliveryTrace t = DeliveryTrace::parse("1\n1000\n", "t");
  const TraceStats s = trace_stats(t, {100});
  EXPECT_EQ(s.windows[0].windows, 10u);
  EXPECT_DOUBLE_EQ(s.windows[0].min, 0);
  EXPECT_DOUBLE_EQ(s.windows[0].p50, 0);
  EXPECT_DOUBLE_EQ(s.windows[0].p95, 0.24);  // the first window: 1 and the loop's 0
}

TEST(TraceToolsFormat, ValidationLine) {
  const DeliveryTrace t = DeliveryTrace::parse("1\n1\n150\n200\n", "t");
  EXPECT_EQ(format_validation("x.trace", t), "x.trace: ok, 4 opportunities over 200 ms, mean 0.24 Mbit/s\n");
  EXPECT_EQ(format_stats("x.trace", trace_stats(t, {100})),
            "x.trace:\n  duration: 200 ms\n  opportunities: 4\n  mean rate: 0.24 Mbit/s\n"
            "  rate over 100 ms windows (2): min 0.12, p5 0.12, p50 0.12, p95 0.36, max 0.36 Mbit/s\n");
}

}  // namespace
}  // namespace tracemod
