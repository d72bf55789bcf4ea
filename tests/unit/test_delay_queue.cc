#include <gtest/gtest.h>

#include "effects/delay_queue.hh"
#include "fake.hh"

namespace tracemod {
namespace {

using namespace fake;  // the frames, sinks and checks every queue test uses

constexpr uint64_t kNoLimit = 1ull << 40;
constexpr uint64_t kSmall = BufferPool::kClassSizes[0];  // what one small frame's buffer costs

TEST(DelayQueue, HoldsUntilArrivalPlusDelayAndNotOneNanosecondLess) {
  BufferPool pool;
  DelayQueue q(40 * kMillisecond, kNoLimit);
  CollectSink out;
  const Nanos arrival = 123456789;
  q.enqueue(udp4(pool, 100, arrival), arrival);
  const Nanos release = arrival + 40 * kMillisecond;
  q.dequeue_ready(release - 1, out);
  EXPECT_TRUE(out.got.empty());
  q.dequeue_ready(release, out);
  ASSERT_EQ(out.got.size(), 1u);
  EXPECT_EQ(out.got[0].arrival, arrival);
  EXPECT_EQ(out.got[0].release, release);
}

TEST(DelayQueue, DelayRunsFromArrivalNotFromEnqueueCall) {
  BufferPool pool;
  DelayQueue q(10 * kMillisecond, kNoLimit);
  CollectSink out;
  q.enqueue(udp4(pool, 100, 1000), 1000 + 3 * kMillisecond);  // handed over 3 ms after it arrived
  EXPECT_EQ(q.next_event(), 1000 + 10 * kMillisecond);
  q.dequeue_ready(1000 + 10 * kMillisecond, out);
  EXPECT_EQ(out.got.size(), 1u);
}

TEST(DelayQueue, SubMillisecondDelayIsExactToTheNanosecond) {
  BufferPool pool;
  DelayQueue q(250 * 1000 + 7, kNoLimit);  // 0.250007 ms
  CollectSink out;
  q.enqueue(udp4(pool, 64, 5), 5);
  q.dequeue_ready(5 + 250007 - 1, out);
  EXPECT_TRUE(out.got.empty());
  q.dequeue_ready(5 + 250007, out);
  EXPECT_EQ(out.got.size(), 1u);
}

TEST(DelayQueue, FractionalMillisecondDelay) {
  BufferPool pool;
  DelayQueue q(1500 * 1000, kNoLimit);  // 1.5 ms
  CollectSink out;
  q.enqueue(udp4(pool, 64, kMillisecond), kMillisecond);
  EXPECT_EQ(q.next_event(), 2500 * 1000);
  q.dequeue_ready(2500 * 1000 - 1, out);
  EXPECT_TRUE(out.got.empty());
  q.dequeue_ready(2500 * 1000, out);
  EXPECT_EQ(out.got.size(), 1u);
}

TEST(DelayQueue, ZeroDelayReleasesAtArrival) {
  BufferPool pool;
  DelayQueue q(0, kNoLimit);
  CollectSink out;
  q.enqueue(udp4(pool, 64, 777), 777);
  EXPECT_EQ(q.next_event(), 777);
  q.dequeue_ready(776, out);
  EXPECT_TRUE(out.got.empty());
  q.dequeue_ready(777, out);
  ASSERT_EQ(out.got.size(), 1u);
  EXPECT_EQ(out.got[0].release, 777);
}

TEST(DelayQueue, NextEventIsNeverWhenEmptyThenHeadRelease) {
  BufferPool pool;
  DelayQueue q(5000, kNoLimit);
  CollectSink out;
  EXPECT_EQ(q.next_event(), kNever);
  q.enqueue(udp4(pool, 64, 100), 100);
  q.enqueue(udp4(pool, 64, 300), 300);
  EXPECT_EQ(q.next_event(), 5100);
  q.dequeue_ready(5100, out);
  EXPECT_EQ(q.next_event(), 5300);
  q.dequeue_ready(5300, out);
  EXPECT_EQ(q.next_event(), kNever);
  EXPECT_EQ(out.got.size(), 2u);
}

TEST(DelayQueue, ReleasesInArrivalOrderAcrossPartialDequeues) {
  BufferPool pool;
  DelayQueue q(1000, kNoLimit);
  CollectSink out;
  for (uint16_t i = 0; i < 200; ++i) q.enqueue(udp4(pool, 64, i * 10, i), i * 10);
  // Release in uneven steps; each step must hand out exactly the packets that are due, in order.
  for (Nanos now = 0; now <= 1000 + 2000; now += 37) {
    q.dequeue_ready(now, out);
    const size_t due = now < 1000 ? 0 : std::min<size_t>(200, static_cast<size_t>((now - 1000) / 10 + 1));
    ASSERT_EQ(out.got.size(), due) << "at " << now;
  }
  ASSERT_EQ(out.got.size(), 200u);
  for (uint16_t i = 0; i < 200; ++i) EXPECT_EQ(ip_id_of(out.got[i]), i);
}

TEST(DelayQueue, DropsArrivalsPastMemoryLimit) {
  BufferPool pool;
  DelayQueue q(kMillisecond, 3 * kSmall);  // room for exactly three small frames
  CollectSink out;
  for (uint16_t i = 0; i < 5; ++i) q.enqueue(udp4(pool, 64, 0, i), 0);
  EXPECT_EQ(q.stats().in_packets, 5u);
  EXPECT_EQ(q.stats().queued_packets, 3u);
  EXPECT_EQ(q.stats().dropped_packets, 2u);
  EXPECT_EQ(q.stats().queued_bytes, 3 * kSmall);
  q.dequeue_ready(kMillisecond, out);
  ASSERT_EQ(out.got.size(), 3u);
  for (uint16_t i = 0; i < 3; ++i) EXPECT_EQ(ip_id_of(out.got[i]), i);  // the first three kept, later dropped
  EXPECT_EQ(q.stats().queued_bytes, 0u);
}

TEST(DelayQueue, RoomFreedByReleaseIsReusable) {
  BufferPool pool;
  DelayQueue q(100, kSmall);
  CollectSink out;
  q.enqueue(udp4(pool, 64, 0), 0);
  q.enqueue(udp4(pool, 64, 0), 0);  // dropped: the queue is full
  q.dequeue_ready(100, out);
  q.enqueue(udp4(pool, 64, 100), 100);  // fits again
  EXPECT_EQ(q.stats().dropped_packets, 1u);
  EXPECT_EQ(q.stats().queued_packets, 1u);
  EXPECT_TRUE(Conserved(q.stats()));
}

TEST(DelayQueue, GsoFrameCountsAsItsSegmentsInStats) {
  BufferPool pool;
  DelayQueue q(100, kNoLimit);
  CollectSink out;
  q.enqueue(fake::tcp_gso(pool, false, 1000, 4500, 0), 0);  // 5 wire packets
  EXPECT_EQ(q.stats().in_packets, 5u);
  EXPECT_EQ(q.stats().queued_packets, 5u);
  q.dequeue_ready(100, out);
  ASSERT_EQ(out.got.size(), 1u);  // the delay line does not split it
  EXPECT_TRUE(out.got[0].is_gso());
  EXPECT_EQ(q.stats().out_packets, 5u);
  EXPECT_EQ(q.stats().queued_packets, 0u);
}

TEST(DelayQueue, DroppedGsoFrameCountsAllItsSegments) {
  BufferPool pool;
  DelayQueue q(100, kSmall);                               // a GSO frame needs a larger buffer than this
  q.enqueue(fake::udp_gso(pool, true, 1200, 6000, 0), 0);  // 5 wire packets
  EXPECT_EQ(q.stats().in_packets, 5u);
  EXPECT_EQ(q.stats().dropped_packets, 5u);
  EXPECT_EQ(q.next_event(), kNever);
}

TEST(DelayQueue, ConservationHoldsAtEveryStep) {
  BufferPool pool;
  DelayQueue q(3 * kMillisecond, 25 * kSmall);
  CollectSink out;
  uint64_t wire_out = 0;
  Nanos now = 0;
  for (int step = 0; step < 2000; ++step) {
    now += 13 * 1000 + (step % 7) * 50 * 1000;
    if (step % 5 == 0)
      q.enqueue(fake::tcp_gso(pool, step % 2 == 0, 1448, 1448 * 3 + 7, now), now);
    else
      q.enqueue(udp4(pool, 200, now), now);
    ASSERT_TRUE(Conserved(q.stats())) << "after enqueue " << step;
    if (step % 3 == 0) {
      q.dequeue_ready(now, out);
      ASSERT_TRUE(Conserved(q.stats())) << "after dequeue " << step;
      for (auto& p : out.got) wire_out += p.segments();
      out.got.clear();
    }
  }
  q.dequeue_ready(kNever - 1, out);
  for (auto& p : out.got) wire_out += p.segments();
  EXPECT_TRUE(Conserved(q.stats()));
  EXPECT_EQ(q.stats().queued_packets, 0u);
  EXPECT_EQ(q.stats().out_packets, wire_out);
  EXPECT_GT(q.stats().dropped_packets, 0u);  // the limit was reached, so the drop path was exercised
}

}  // namespace
}  // namespace tracemod
