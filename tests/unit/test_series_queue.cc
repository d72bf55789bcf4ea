#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "effects/delay_queue.hh"
#include "effects/loss_queue.hh"
#include "packet/series_queue.hh"
#include "fake.hh"

namespace tracemod {
namespace {

using fake::CollectSink;
using fake::Conserved;
using fake::udp4;

constexpr uint64_t kNoLimit = 1ull << 40;

std::unique_ptr<SeriesQueue> two_delays(Nanos first, Nanos second) {
  std::vector<std::unique_ptr<PacketQueue>> stages;
  stages.push_back(std::make_unique<DelayQueue>(first, kNoLimit));
  stages.push_back(std::make_unique<DelayQueue>(second, kNoLimit));
  return std::make_unique<SeriesQueue>(std::move(stages));
}

TEST(SeriesQueue, TheSecondStageRunsFromTheFirstOnesReleaseNotFromTheTurnThatSawIt) {
  BufferPool pool;
  auto q = two_delays(10 * kMillisecond, 5 * kMillisecond);
  CollectSink out;
  q->enqueue(udp4(pool, 100, 1000), 1000);
  EXPECT_EQ(q->next_event(), 1000 + 10 * kMillisecond);
  q->dequeue_ready(1000 + 12 * kMillisecond, out);  // a late turn: the first stage released 2 ms ago
  EXPECT_TRUE(out.got.empty());
  EXPECT_EQ(q->next_event(), 1000 + 15 * kMillisecond);
  q->dequeue_ready(1000 + 15 * kMillisecond, out);
  ASSERT_EQ(out.got.size(), 1u);
  EXPECT_EQ(out.got[0].release, 1000 + 15 * kMillisecond);
}

TEST(SeriesQueue, WhatIsDueAtEveryStageLeavesInOneTurn) {
  BufferPool pool;
  auto q = two_delays(0, 0);
  CollectSink out;
  q->enqueue(udp4(pool, 100, 7), 7);
  q->dequeue_ready(7, out);
  EXPECT_EQ(out.got.size(), 1u);
}

TEST(SeriesQueue, CountsInAtTheFirstOutOfTheLastAndDropsAnywhere) {
  BufferPool pool;
  std::vector<std::unique_ptr<PacketQueue>> stages;
  stages.push_back(std::make_unique<DelayQueue>(kMillisecond, kNoLimit));
  stages.push_back(std::make_unique<LossQueue>(1.0, RandomStream(1, 0), pool));  // drops everything
  stages.push_back(std::make_unique<DelayQueue>(kMillisecond, kNoLimit));
  SeriesQueue q(std::move(stages));
  CollectSink out;
  for (int i = 0; i < 3; ++i) q.enqueue(udp4(pool, 100, i), i);
  EXPECT_EQ(q.stats().in_packets, 3u);
  EXPECT_EQ(q.stats().queued_packets, 3u);
  EXPECT_TRUE(Conserved(q.stats()));
  q.dequeue_ready(10 * kMillisecond, out);
  EXPECT_TRUE(out.got.empty());
  EXPECT_EQ(q.stats().dropped_packets, 3u);
  EXPECT_EQ(q.stats().queued_packets, 0u);
  EXPECT_TRUE(Conserved(q.stats()));
}

// A fused level's live counters are its own stage's: what entered and left it, and how long it held each.
TEST(SeriesQueue, EachStageCountsItsOwnFlowAndStays) {
  BufferPool pool;
  std::vector<std::unique_ptr<PacketQueue>> stages;
  stages.push_back(std::make_unique<DelayQueue>(2 * kMillisecond, kNoLimit));
  stages.push_back(std::make_unique<LossQueue>(1.0, RandomStream(1, 0), pool));  // drops everything
  SeriesQueue q(std::move(stages));
  CollectSink out;
  Packet p = udp4(pool, 100, 1000);
  const uint64_t bytes = wire_ip_bytes(p);
  q.enqueue(std::move(p), 1000);
  q.dequeue_ready(1000 + 3 * kMillisecond, out);  // a late turn: the stay is the release less the arrival
  const FlowCounters& first = q.stage_flow(0);
  EXPECT_EQ(first.in_bytes, bytes);
  EXPECT_EQ(first.out_bytes, bytes);
  EXPECT_EQ(first.departures, 1u);
  EXPECT_EQ(first.sojourn_sum, 2 * kMillisecond);
  EXPECT_EQ(q.take_stage_sojourn_max(0), 2 * kMillisecond);
  EXPECT_EQ(q.take_stage_sojourn_max(0), 0);  // taken: since the last call
  EXPECT_EQ(q.stage_flow(1).in_bytes, bytes);
  EXPECT_EQ(q.stage_flow(1).departures, 0u);  // dropped there
  EXPECT_EQ(q.stage(1).stats().dropped_packets, 1u);
  EXPECT_EQ(q.stats().dropped_by[static_cast<int>(DropCause::kLoss)], 1u);  // the series says why, as its stage
}

// A stall of the loop reaches every stage: a link in a fused stack must not send the missed time in a burst.
TEST(SeriesQueue, AStallReachesEveryStage) {
  struct Stalls : DelayQueue {
    using DelayQueue::DelayQueue;
    void stalled(Nanos from, Nanos to) override { seen += to - from; }
    Nanos seen = 0;
  };
  std::vector<std::unique_ptr<PacketQueue>> stages;
  auto a = std::make_unique<Stalls>(0, kNoLimit), b = std::make_unique<Stalls>(0, kNoLimit);
  Stalls *first = a.get(), *second = b.get();
  stages.push_back(std::move(a));
  stages.push_back(std::move(b));
  SeriesQueue q(std::move(stages));
  q.stalled(kMillisecond, 201 * kMillisecond);
  EXPECT_EQ(first->seen, 200 * kMillisecond);
  EXPECT_EQ(second->seen, 200 * kMillisecond);
}

}  // namespace
}  // namespace tracemod
