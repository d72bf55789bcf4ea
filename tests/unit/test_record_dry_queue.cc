// When the bottleneck queue ran dry, and what that cost a recording: DryQueue and ShortfallEstimate on
// arrivals made by hand (the window tests check the estimate against simulated links).
#include <gtest/gtest.h>

#include <algorithm>

#include "saturator/dry_queue.hh"

namespace tracemod::record {
namespace {

constexpr Nanos kMs = kMillisecond, kUs = 1000;

TEST(RecordDryQueue, APacketThatReachedTheQueueAfterThePreviousOneLeftFoundItDry) {
  DryQueue d;
  const Nanos path = 5 * kMs, offset = 1000000 * kMs;  // the receiver's clock is far ahead: it cancels
  EXPECT_FALSE(d.add(0, path + offset).dry);
  // Sent 1 ms later, queued behind nothing: dry from the previous arrival until it could have arrived.
  const DryQueue::Arrival a = d.add(7 * kMs, 7 * kMs + path + offset);
  EXPECT_TRUE(a.dry);
  EXPECT_EQ(a.dry_from, path + offset);
  EXPECT_EQ(a.dry_to, 7 * kMs + path + offset);
  EXPECT_EQ(a.qdelay, 0);
  // Sent 1 ms later, reaching the queue 1 ms after that one left; it then waits 3 ms (a slow opportunity), so
  // it is still there when the next one reaches the queue 1 ms later: that one is not dry.
  EXPECT_TRUE(d.add(8 * kMs, 11 * kMs + path + offset).dry);
  const DryQueue::Arrival b = d.add(9 * kMs, 12 * kMs + path + offset);
  EXPECT_FALSE(b.dry);
  EXPECT_EQ(b.qdelay, 3 * kMs);
}

TEST(RecordDryQueue, ABatchLeftWhenItsFirstPacketArrived) {
  DryQueue d;
  d.add(0, 10 * kMs);  // the path: 10 ms
  // A batch of 5 leaves at 20 ms and crosses the wire 50 us apart; a packet sent at 10.1 ms reached the
  // queue at 20.1 ms, after the batch left though before its last packet was received.
  for (int i = 0; i < 5; ++i) EXPECT_FALSE(d.add(i * kUs, 20 * kMs + i * 50 * kUs).dry) << i;
  const DryQueue::Arrival a = d.add(10 * kMs + 100 * kUs, 21 * kMs);
  EXPECT_TRUE(a.dry);
  EXPECT_EQ(a.dry_from, 20 * kMs);
  EXPECT_EQ(a.dry_to, 20 * kMs + 100 * kUs);
  EXPECT_EQ(a.gap, 1 * kMs - 4 * 50 * kUs);
}

TEST(RecordDryQueue, ArrivalsFurtherApartAreNotOneBatch) {
  auto after = [](Nanos send) {
    DryQueue d;
    d.add(0, 10 * kMs);
    d.add(1 * kMs, 20 * kMs);
    d.add(2 * kMs, 20 * kMs + DryQueue::kBatchGap);  // its own batch, which left when it arrived
    return d.add(send, 22 * kMs).dry;
  };
  EXPECT_FALSE(after(10 * kMs + DryQueue::kBatchGap - kUs));
  EXPECT_TRUE(after(10 * kMs + DryQueue::kBatchGap + kUs));
  auto spanning = [](Nanos send) {  // arrivals 100 us apart: a new batch every kBatchSpan
    DryQueue d;
    d.add(0, 10 * kMs);
    for (Nanos t = 0; t <= DryQueue::kBatchSpan; t += 100 * kUs) d.add(kMs, 20 * kMs + t);
    return d.add(send, 22 * kMs).dry;
  };
  EXPECT_FALSE(spanning(10 * kMs + DryQueue::kBatchSpan - kUs));
  EXPECT_TRUE(spanning(10 * kMs + DryQueue::kBatchSpan + kUs));
}

// A link delivering RATE packets at each whole ms from FROM_MS to TO_MS, 1 us apart; the path takes 1 ms and a
// packet is sent 21 ms before it arrives, but not before NOT_BEFORE.
void deliver(DryQueue& d, ShortfallEstimate& e, Nanos from_ms, Nanos to_ms, int rate, Nanos not_before = -kNever) {
  for (Nanos ms = from_ms; ms < to_ms; ++ms)
    for (int i = 0; i < rate; ++i) {
      const Nanos recv = ms * kMs + i * kUs;
      e.add(recv, d.add(std::max(recv - 21 * kMs, not_before), recv));
    }
}

TEST(RecordShortfall, NothingMissedWhileTheQueueStaysBacklogged) {
  DryQueue d;
  ShortfallEstimate e;
  e.add(0, d.add(-kMs, 0));  // the path's own delay: 1 ms
  deliver(d, e, 1, 2000, 3);
  e.finish();
  EXPECT_EQ(e.moments(), 0u);
  EXPECT_EQ(e.missed(), 0);
}

TEST(RecordShortfall, AMillisecondAfterWhichTheQueueRanDryMissedTheRecentRateLessItsArrivals) {
  DryQueue d;
  ShortfallEstimate e;
  e.add(0, d.add(-kMs, 0));
  deliver(d, e, 1, 100, 10);  // 10 per ms
  // For 3 ms the queue holds only 4 of ours at each delivery: each batch of 4 reached it 0.5 ms after the
  // batch before had left. Then the sender sends plenty at 101.5 ms, reaching the queue at 102.5 ms.
  for (Nanos ms = 100; ms < 103; ++ms) deliver(d, e, ms, ms + 1, 4, (ms - 1) * kMs + 500 * kUs - kMs);
  deliver(d, e, 103, 200, 10, 101 * kMs + 500 * kUs);
  e.finish();
  // Dry after the batches of 99 (all 10 delivered: nothing missed), 100, 101 and 102 ms (6 missed each).
  EXPECT_EQ(e.moments(), 4u);
  EXPECT_DOUBLE_EQ(e.missed(), 3 * (10 - 4));
  EXPECT_EQ(e.dry_time(), 4 * 500 * kUs);
}

TEST(RecordShortfall, TheRateComesFromAtLeast32ArrivalsOfMillisecondsThatDidNotRunDry) {
  DryQueue d;
  ShortfallEstimate e;
  e.add(0, d.add(-kMs, 0));
  deliver(d, e, 1, 300, 1);    // 1 per ms
  deliver(d, e, 310, 320, 2);  // after a 10 ms stall (the queue holding ours: it counts, as 0 per ms), 2
  // The packet after them was sent 4.5 ms after the last batch arrived: dry from 319 to 324.5 ms.
  e.add(325 * kMs, d.add(320 * kMs + 4500 * kUs - kMs, 325 * kMs));
  e.finish();
  EXPECT_EQ(e.moments(), 1u);
  // The rate of 286..318 ms: 32 arrivals (18 in 310..318, none in the stall, 14 in 286..299) over 33 ms.
  // But the link delivered 2 in each of the 3 ms before 319..322: 2 for those (319 had its 2, 320..322
  // none); 323 and 324 have only empty milliseconds in their 3 before: the rate.
  EXPECT_DOUBLE_EQ(e.missed(), 3 * 2 + 2 * 32.0 / 33);
}

TEST(RecordShortfall, ABurstCountsAtWhatTheLinkWasSeenDelivering) {
  DryQueue d;
  ShortfallEstimate e;
  e.add(0, d.add(-kMs, 0));
  deliver(d, e, 1, 300, 1);  // 1 per ms; then a 300 ms stall, the queue holding 30 of ours
  // The burst after it: 30 in the first ms, the queue ran dry then; 5 in each of the next 4, each sent after
  // the batch before had left.
  for (int i = 0; i < 30; ++i) e.add(600 * kMs + i * kUs, d.add(290 * kMs, 600 * kMs + i * kUs));
  for (Nanos ms = 601; ms < 605; ++ms) deliver(d, e, ms, ms + 1, 5, (ms - 1) * kMs + 500 * kUs - kMs);
  e.finish();
  // 600 ran dry and delivered all 30 it had: nothing known missing there; 601..603, each followed by a dry
  // moment, missed 30 - 5 each (604 was not). The rate over time alone (32 arrivals spread over the stall)
  // would have found nothing.
  EXPECT_EQ(e.moments(), 4u);
  EXPECT_DOUBLE_EQ(e.missed(), 3 * 25);
}

TEST(RecordShortfall, AGapOfAnyLengthMissesTheRecentRateEachMillisecondWithoutHoldingIt) {
  // A gap shorter than ShortfallEstimate::kSameAfter is closed a millisecond at a time, a longer one in bulk:
  // the same count either way. A month of them once allocated a bin per millisecond (fuzz/regressions/record-raw).
  for (const Nanos gap : {Nanos{900}, Nanos{90000}, Nanos{30} * 86400 * 1000}) {
    DryQueue d;
    ShortfallEstimate e;
    e.add(0, d.add(-kMs, 0));  // the path's own delay: 1 ms
    deliver(d, e, 1, 300, 2);  // 2 per ms; the last batch at 299 ms
    // Then nothing for GAP ms, and a packet the queue had to wait for: dry from 299 ms until it arrived.
    const Nanos t = (300 + gap) * kMs;
    e.add(t, d.add(t - kMs - 500 * kUs, t));
    e.finish();
    EXPECT_EQ(e.moments(), 1u);
    EXPECT_EQ(e.dry_time(), t - 500 * kUs - 299 * kMs);
    EXPECT_DOUBLE_EQ(e.missed(), 2.0 * static_cast<double>(gap)) << gap;  // 299 ms delivered its 2
  }
}

}  // namespace
}  // namespace tracemod::record
