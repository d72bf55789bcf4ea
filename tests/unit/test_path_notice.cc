// notice='s schedule: when a path's endpoints leave MPTCP, from its traces alone.
#include <gtest/gtest.h>

#include <initializer_list>
#include <utility>
#include <vector>

#include "shell/path_notice.hh"

namespace tracemod {
namespace {

constexpr Nanos ms = kMillisecond;

// A direction whose trace has an opportunity every ms of each [from, to] in ON (ms), and its last line at PERIOD.
NoticeWindows windows(Nanos notice, std::initializer_list<std::pair<uint64_t, uint64_t>> on, uint64_t period,
                      bool once = false) {
  NoticeWindows w(notice, period, once);
  for (auto [from, to] : on)
    for (uint64_t t = from; t <= to; ++t) w.opportunity(t);
  w.opportunity(period);
  return w;
}

NoticeSchedule schedule(Nanos notice, std::vector<NoticeWindows> dirs) {
  return NoticeSchedule(notice, std::move(dirs));
}

TEST(PathNotice, AGapShorterThanTheNoticeNeverFires) {
  const NoticeSchedule s = schedule(500 * ms, {windows(500 * ms, {{1, 1000}, {1400, 1999}}, 2000)});
  EXPECT_EQ(s.next_change(0), kNever);
  EXPECT_FALSE(s.withdrawn_at(1200 * ms));
}

TEST(PathNotice, ALongerGapFiresAtItsStartPlusTheNoticeAndEndsWithIt) {
  // Off from 4 s to 9 s, as the integration test's trace.
  const NoticeSchedule s = schedule(500 * ms, {windows(500 * ms, {{1, 4000}, {9001, 29999}}, 30000)});
  EXPECT_EQ(s.next_change(0), 4500 * ms);
  EXPECT_FALSE(s.withdrawn_at(4500 * ms - 1));
  EXPECT_TRUE(s.withdrawn_at(4500 * ms));
  EXPECT_TRUE(s.withdrawn_at(9001 * ms - 1));
  EXPECT_EQ(s.next_change(4500 * ms), 9001 * ms);
  EXPECT_FALSE(s.withdrawn_at(9001 * ms));
  EXPECT_EQ(s.next_change(9001 * ms), 34500 * ms);  // the next loop's outage
}

TEST(PathNotice, TheWrapAroundGapFiresInEveryLoop) {
  // On from 3 s to 10 s (its last line): from 10 s to 13 s, the next loop's first line, 3 s without one.
  const NoticeSchedule s = schedule(1000 * ms, {windows(1000 * ms, {{3000, 9999}}, 10000)});
  EXPECT_EQ(s.next_change(0), 1000 * ms);  // the link's start counts as the previous opportunity
  EXPECT_EQ(s.next_change(1000 * ms), 3000 * ms);
  EXPECT_EQ(s.next_change(3000 * ms), 11000 * ms);
  EXPECT_TRUE(s.withdrawn_at(12000 * ms));
  EXPECT_EQ(s.next_change(11000 * ms), 13000 * ms);
  EXPECT_TRUE(s.withdrawn_at(100 * 10000 * ms + 2000 * ms));  // loop 100
  EXPECT_FALSE(s.withdrawn_at(100 * 10000 * ms + 3000 * ms));
}

TEST(PathNotice, OverlappingGapsOfTheTwoDirectionsAreOneWithdrawal) {
  // Uplink off 4-9 s, downlink 6-12 s: withdrawn from 4.5 s to 12 s, with no restore at 9 s between.
  const NoticeSchedule s = schedule(500 * ms, {windows(500 * ms, {{1, 4000}, {9001, 19999}}, 20000),
                                               windows(500 * ms, {{1, 6000}, {12001, 19999}}, 20000)});
  EXPECT_EQ(s.next_change(0), 4500 * ms);
  EXPECT_EQ(s.next_change(4500 * ms), 12001 * ms);
  EXPECT_TRUE(s.withdrawn_at(9001 * ms));
  EXPECT_TRUE(s.withdrawn_at(9200 * ms));
  EXPECT_FALSE(s.withdrawn_at(12001 * ms));
  EXPECT_EQ(s.next_change(12001 * ms), 24500 * ms);  // the next loop
}

TEST(PathNotice, AConstantRateDirectionNeverFires) {
  const NoticeSchedule s = schedule(500 * ms, {NoticeWindows(500 * ms, 0, false), NoticeWindows(500 * ms, 0, false)});
  EXPECT_EQ(s.next_change(0), kNever);
  EXPECT_FALSE(s.withdrawn_at(5000 * ms));
}

TEST(PathNotice, ATracePlayedOnceHasNoWrapAround) {
  // Off from 4 s to its end at 10 s: no next loop, so no gap from 10 s to its first line.
  const NoticeSchedule s = schedule(1000 * ms, {windows(1000 * ms, {{3000, 4000}}, 10000, true)});
  EXPECT_EQ(s.next_change(0), 1000 * ms);
  EXPECT_EQ(s.next_change(1000 * ms), 3000 * ms);
  EXPECT_EQ(s.next_change(3000 * ms), 5000 * ms);
  EXPECT_EQ(s.next_change(5000 * ms), 10000 * ms);
  EXPECT_EQ(s.next_change(10000 * ms), kNever);
  EXPECT_FALSE(s.withdrawn_at(12000 * ms));
}

TEST(PathNotice, EndpointIdsAreTwoPerPath) {
  EXPECT_EQ(endpoint_id(0, false), 1);
  EXPECT_EQ(endpoint_id(0, true), 2);
  EXPECT_EQ(endpoint_id(1, false), 3);
  EXPECT_EQ(endpoint_id(7, true), 16);
}

}  // namespace
}  // namespace tracemod
