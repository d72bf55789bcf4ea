// tm-modulate's schedules: both line forms, what a keyed line keeps from the state before, the errors a bad
// file gives (FILE:LINE), the timeline's loop, and the bottleneck's service as the schedule changes under it.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>

#include "modulate/bottleneck.hh"
#include "modulate/schedule.hh"
#include "util/error.hh"

namespace tracemod::modulate {
namespace {

constexpr Nanos kMs = kMillisecond, kUs = 1000;

std::string error_of(const std::string& text) {
  try {
    Schedule::parse(text, "s.sched");
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

TEST(ModulateSchedule, NobleTuplesInTheirUnits) {
  const Schedule s = Schedule::parse("# d F Vb Vr L\n1000 2.5 0.5 0.125 0.01\n\n500.5 100 4 0 0\n", "s");
  ASSERT_EQ(s.states().size(), 2u);
  const State& a = s.states()[0];
  EXPECT_EQ(a.duration, 1000 * kMs);
  EXPECT_EQ(a.delay, 2500 * kUs);
  EXPECT_DOUBLE_EQ(a.byte_cost, 500);  // ns per byte
  EXPECT_DOUBLE_EQ(a.residual_cost, 125);
  EXPECT_EQ(a.loss, "0.01");
  EXPECT_EQ(a.line, 2u);
  EXPECT_EQ(s.states()[1].duration, 500500 * kUs);
  EXPECT_EQ(s.states()[1].line, 4u);
  EXPECT_EQ(s.period(), 1500500 * kUs);
  EXPECT_EQ(s.begin(1), 1000 * kMs);
}

TEST(ModulateSchedule, KeyedLinesKeepWhatTheyDoNotName) {
  const Schedule s = Schedule::parse(
      "40s delay=200ms rate=9600bit loss=1% queue=7pkts  # Seawind\n"
      "60s loss=10%\n"
      "300ms off=hold\n"
      "1s residual=8mbit rate=unlimited queue=unlimited delay=5\n"
      "2s off\n"
      "1000 1 2 3 0.5\n",
      "s");
  ASSERT_EQ(s.states().size(), 6u);
  const auto& st = s.states();
  EXPECT_EQ(st[0].delay, 200 * kMs);
  EXPECT_NEAR(st[0].byte_cost, 8e9 / 9600, 1e-6);
  EXPECT_EQ(st[0].loss, "1%");
  EXPECT_EQ(st[0].queue.packets, 7u);
  EXPECT_EQ(st[0].off, Outage::kNone);
  EXPECT_EQ(st[1].delay, 200 * kMs);  // kept
  EXPECT_NEAR(st[1].byte_cost, 8e9 / 9600, 1e-6);
  EXPECT_EQ(st[1].loss, "10%");
  EXPECT_EQ(st[1].queue.packets, 7u);
  EXPECT_EQ(st[2].off, Outage::kHold);
  EXPECT_EQ(st[2].duration, 300 * kMs);
  EXPECT_EQ(st[3].off, Outage::kNone);  // off belongs to its own line
  EXPECT_EQ(st[3].delay, 5 * kMs);      // a bare number is milliseconds, as tm-delay reads it
  EXPECT_EQ(st[3].byte_cost, 0);
  EXPECT_DOUBLE_EQ(st[3].residual_cost, 1000);
  EXPECT_EQ(st[3].queue.packets, 0u);
  EXPECT_EQ(st[4].off, Outage::kDrop);  // a bare off drops, as Mahimahi's mm-onoff does
  EXPECT_EQ(st[5].queue.packets, 0u);   // a tuple keeps the queue limit
  EXPECT_DOUBLE_EQ(st[5].byte_cost, 2000);
  EXPECT_EQ(st[0].describe(), "F=200 Vb=833.333333 Vr=0 L=1% queue=7pkts off=no");
  EXPECT_EQ(st[2].describe(), "F=200 Vb=833.333333 Vr=0 L=10% queue=7pkts off=hold");
}

TEST(ModulateSchedule, TheFirstStateStartsFromAPlainLink) {
  const State s = Schedule::parse("10s\n", "s").states()[0];
  EXPECT_EQ(s.delay, 0);
  EXPECT_EQ(s.byte_cost, 0);
  EXPECT_EQ(s.residual_cost, 0);
  EXPECT_EQ(s.loss, "0");
  EXPECT_EQ(s.queue.packets + s.queue.bytes, 0u);
}

TEST(ModulateSchedule, BadLinesNameFileAndLine) {
  EXPECT_EQ(error_of("1s\n2s delay=1x\n"),
            "s.sched:2: invalid delay '1x': expected a duration (a unit is optional): ns, us, ms, s, min or h (e.g. "
            "200ms or 1.5s)");
  EXPECT_EQ(error_of("5s speed=1mbit\n"),
            "s.sched:1: unknown key 'speed': expected delay, rate, residual, loss, queue or off");
  EXPECT_EQ(error_of("\n\n5s rate=1mbit rate=2mbit\n"), "s.sched:3: 'rate' is given twice");
  EXPECT_EQ(error_of("5s delay\n"),
            "s.sched:1: 'delay' is not key=value: expected delay, rate, residual, loss, "
            "queue or off");
  EXPECT_EQ(error_of("0s\n"), "s.sched:1: a state must last longer than 0");
  EXPECT_EQ(error_of("5s off=maybe\n"), "s.sched:1: invalid off 'maybe': expected off, off=drop or off=hold");
  EXPECT_EQ(error_of("1000 1 2 3 1.5\n"), "s.sched:1: invalid L '1.5': expected a loss fraction from 0 to 1");
  EXPECT_EQ(error_of("1000 1 -2 3 0\n"), "s.sched:1: invalid Vb '-2': expected microseconds per byte from 0 to 1e+09");
  EXPECT_EQ(error_of("1000 1 2 3\n").rfind("s.sched:1: '1' is not key=value", 0), 0u);  // four fields: no tuple
  EXPECT_EQ(error_of("5s rate=12\n").rfind("s.sched:1: rate: invalid rate '12'", 0), 0u);
  EXPECT_EQ(error_of("5s queue=7\n").rfind("s.sched:1: invalid queue '7'", 0), 0u);
  EXPECT_EQ(error_of("5s loss=2\n").rfind("s.sched:1: invalid loss '2'", 0), 0u);
  EXPECT_EQ(error_of("# nothing\n\n"), "s.sched: no state: expected lines 'd F Vb Vr L' or 'DURATION key=value...'");
  EXPECT_EQ(error_of("5s off\n2s off=hold\n"), "s.sched: every state is off: the link would never carry anything");
  try {
    Schedule::load("/nonexistent/x.sched");
    ADD_FAILURE() << "loaded a missing file";
  } catch (const UsageError& e) {
    EXPECT_EQ(std::string(e.what()), "/nonexistent/x.sched: cannot open: No such file or directory");
  }
}

std::shared_ptr<const Schedule> schedule(const std::string& text) {
  return std::make_shared<const Schedule>(Schedule::parse(text, "s"));
}

TEST(ModulateTimeline, LoopsOrEndsOnce) {
  const auto s = schedule("10ms\n30ms\n");
  const Timeline loop(s, 1000 * kMs, false), once(s, 1000 * kMs, true);
  auto seg = loop.at(1000 * kMs);
  EXPECT_EQ(seg.state, 0u);
  EXPECT_EQ(seg.end, 1010 * kMs);
  seg = loop.at(1039 * kMs);
  EXPECT_EQ(seg.state, 1u);
  EXPECT_EQ(seg.begin, 1010 * kMs);
  seg = loop.at(1040 * kMs + 5 * kMs);  // second loop
  EXPECT_EQ(seg.state, 0u);
  EXPECT_EQ(seg.begin, 1040 * kMs);
  EXPECT_EQ(loop.end(), kNever);
  EXPECT_EQ(once.at(1039 * kMs).state, 1u);
  EXPECT_EQ(once.at(1040 * kMs).state, Timeline::kNone);
  EXPECT_EQ(once.end(), 1040 * kMs);
}

struct Server {
  std::shared_ptr<const Schedule> s;
  Timeline timeline;
  Bottleneck b;
  explicit Server(const std::string& text, bool once = false) : s(schedule(text)), timeline(s, 0, once), b(timeline) {}
};

TEST(ModulateBottleneck, ARateChangeAppliesToTheBytesStillUnserved) {
  // 1 Mbit/s (8 us per byte) for 10 ms, then 2 Mbit/s. A 1500-byte packet arriving at 9 ms has 125 bytes served
  // by 10 ms; its 1375 others take 5.5 ms at the new rate: it leaves at 15.5 ms, not at 21 or 15 ms.
  Server k("10ms rate=1mbit\n10ms rate=2mbit\n");
  const Service sv = k.b.serve(9 * kMs, 1500, 1);
  ASSERT_EQ(sv.fate, Service::kServed);
  EXPECT_EQ(sv.start, 9 * kMs);
  EXPECT_EQ(sv.end, 15500 * kUs);
  EXPECT_EQ(sv.state, 1u);
  EXPECT_EQ(sv.state_begin, 10 * kMs);
  // The next one waits for it, then is served at 2 Mbit/s.
  const Service next = k.b.serve(9 * kMs + 1, 100, 1);
  EXPECT_EQ(next.start, 15500 * kUs);
  EXPECT_EQ(next.end, 15900 * kUs);
}

TEST(ModulateBottleneck, AHoldingOutagePausesServiceAndLosesNothing) {
  Server k("10ms rate=1mbit\n5ms off=hold\n10ms\n");
  const Service a = k.b.serve(9 * kMs, 250, 1);  // 125 bytes before the outage, 125 after it
  EXPECT_EQ(a.start, 9 * kMs);
  EXPECT_EQ(a.end, 16 * kMs);
  const Service b = k.b.serve(12 * kMs, 125, 1);  // arrives during it: waits
  EXPECT_EQ(b.fate, Service::kServed);
  EXPECT_EQ(b.start, 16 * kMs);
  EXPECT_EQ(b.end, 17 * kMs);
}

TEST(ModulateBottleneck, ADroppingOutageLosesWhatItFindsAndWhatArrivesDuringIt) {
  Server k("10ms rate=1mbit\n5ms off\n10ms\n");
  const Service done = k.b.serve(0, 1000, 1);  // leaves at 8 ms, before the outage
  EXPECT_EQ(done.end, 8 * kMs);
  const Service cut = k.b.serve(9 * kMs, 250, 1);  // in service when the outage begins
  EXPECT_EQ(cut.fate, Service::kOutage);
  EXPECT_EQ(cut.dropped, 10 * kMs);
  const Service waiting = k.b.serve(9500 * kUs, 10, 1);  // waiting then: it could have left, had it not waited
  EXPECT_EQ(waiting.fate, Service::kOutage);
  EXPECT_EQ(waiting.dropped, 10 * kMs);
  const Service during = k.b.serve(12 * kMs, 10, 1);
  EXPECT_EQ(during.fate, Service::kOutage);
  EXPECT_EQ(during.dropped, 12 * kMs);
  const Service after = k.b.serve(15 * kMs, 125, 1);
  EXPECT_EQ(after.fate, Service::kServed);
  EXPECT_EQ(after.start, 15 * kMs);
  EXPECT_EQ(after.end, 16 * kMs);
}

TEST(ModulateBottleneck, TheQueueLimitCountsPacketsWaitingNotTheOneInService) {
  Server k("1s rate=1mbit queue=2pkts\n1s queue=250B\n");
  EXPECT_EQ(k.b.serve(0, 125, 1).end, 1 * kMs);  // in service until 1 ms
  EXPECT_EQ(k.b.serve(0, 125, 1).fate, Service::kServed);
  EXPECT_EQ(k.b.serve(0, 125, 1).fate, Service::kServed);
  EXPECT_EQ(k.b.serve(0, 125, 1).fate, Service::kQueueFull);  // two already wait
  const Service later = k.b.serve(1 * kMs, 125, 1);           // one has started since
  EXPECT_EQ(later.fate, Service::kServed);
  EXPECT_EQ(later.end, 4 * kMs);
  Server bytes("1s rate=1mbit queue=250B\n");
  bytes.b.serve(0, 1000, 1);
  EXPECT_EQ(bytes.b.serve(0, 200, 1).fate, Service::kServed);
  EXPECT_EQ(bytes.b.serve(0, 51, 1).fate, Service::kQueueFull);
  EXPECT_EQ(bytes.b.serve(0, 50, 1).fate, Service::kServed);
}

TEST(ModulateBottleneck, ALongWaitSkipsWholePeriodsExactly) {
  // 1 byte per ms for 1 ms, then 99 ms of outage: 1 byte per 100 ms period. 1000 bytes need 999 whole periods
  // and one more byte.
  Server k("1ms rate=8kbit\n99ms off=hold\n");
  const Service sv = k.b.serve(0, 1000, 1);
  EXPECT_EQ(sv.end, 999 * 100 * kMs + 1 * kMs);
  EXPECT_EQ(sv.state, 0u);
  EXPECT_EQ(sv.state_begin, 999 * 100 * kMs);
}

TEST(ModulateBottleneck, NothingLeavesAfterAScheduleThatEnds) {
  Server k("10ms rate=1mbit\n", true);
  EXPECT_EQ(k.b.serve(9 * kMs, 1000, 1).fate, Service::kEnded);
  EXPECT_EQ(k.b.serve(11 * kMs, 1, 1).fate, Service::kEnded);
}

TEST(ModulateBottleneck, NoBottleneckServesAtOnce) {
  Server k("10ms delay=5\n");
  const Service sv = k.b.serve(3 * kMs, 64000, 1);
  EXPECT_EQ(sv.start, 3 * kMs);
  EXPECT_EQ(sv.end, 3 * kMs);
}

}  // namespace
}  // namespace tracemod::modulate
