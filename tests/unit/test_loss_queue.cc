#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "effects/loss_queue.hh"
#include "fake.hh"

namespace tracemod {
namespace {

using namespace fake;  // the frames, sinks and checks every queue test uses

// Feeds N small frames (IPv4 ID = serial number) through Q, one at a time; returns the serials that survived.
std::vector<uint16_t> survivors(LossQueue& q, BufferPool& pool, int n) {
  std::vector<uint16_t> kept;
  CollectSink out;
  for (int i = 0; i < n; ++i) {
    q.enqueue(udp4(pool, 64, i, static_cast<uint16_t>(i)), i);
    q.dequeue_ready(i, out);
    for (auto& p : out.got) kept.push_back(ip_id_of(p));
    out.got.clear();
  }
  return kept;
}

TEST(LossQueue, RateZeroDropsNothingAndKeepsGsoFramesWhole) {
  BufferPool pool;
  LossQueue q(0.0, RandomStream(1, 0), pool);
  CollectSink out;
  for (int i = 0; i < 500; ++i) q.enqueue(udp4(pool, 64, i), i);
  q.enqueue(fake::tcp_gso(pool, false, 1000, 8000, 500), 500);
  q.dequeue_ready(500, out);
  ASSERT_EQ(out.got.size(), 501u);
  EXPECT_TRUE(out.got.back().is_gso());
  EXPECT_EQ(q.stats().in_packets, 508u);
  EXPECT_EQ(q.stats().out_packets, 508u);
  EXPECT_EQ(q.stats().dropped_packets, 0u);
}

TEST(LossQueue, RateOneDropsEverything) {
  BufferPool pool;
  LossQueue q(1.0, RandomStream(1, 0), pool);
  CollectSink out;
  for (int i = 0; i < 500; ++i) q.enqueue(udp4(pool, 64, i), i);
  q.enqueue(fake::udp_gso(pool, true, 1000, 8000, 500), 500);
  EXPECT_EQ(q.next_event(), kNever);
  q.dequeue_ready(500, out);
  EXPECT_TRUE(out.got.empty());
  EXPECT_EQ(q.stats().in_packets, 508u);
  EXPECT_EQ(q.stats().dropped_packets, 508u);
  EXPECT_EQ(q.stats().queued_packets, 0u);
}

TEST(LossQueue, SurvivorIsReadyAtItsArrival) {
  BufferPool pool;
  LossQueue q(0.0, RandomStream(1, 0), pool);
  CollectSink out;
  EXPECT_EQ(q.next_event(), kNever);
  q.enqueue(udp4(pool, 64, 5000), 5000);
  EXPECT_EQ(q.next_event(), 5000);
  q.dequeue_ready(5000, out);
  EXPECT_EQ(out.got.size(), 1u);
  EXPECT_EQ(q.next_event(), kNever);
}

TEST(LossQueue, SameSeedGivesIdenticalDropPattern) {
  BufferPool pool;
  LossQueue a(0.2, RandomStream(42, 0), pool), b(0.2, RandomStream(42, 0), pool);
  const auto ka = survivors(a, pool, 5000), kb = survivors(b, pool, 5000);
  EXPECT_EQ(ka, kb);
  EXPECT_LT(ka.size(), 5000u);
}

TEST(LossQueue, DifferentSeedGivesDifferentDropPattern) {
  BufferPool pool;
  LossQueue a(0.2, RandomStream(42, 0), pool), b(0.2, RandomStream(43, 0), pool);
  EXPECT_NE(survivors(a, pool, 5000), survivors(b, pool, 5000));
}

TEST(LossQueue, UplinkAndDownlinkStreamsDiffer) {
  BufferPool pool;
  LossQueue up(0.2, RandomStream(42, 0), pool), down(0.2, RandomStream(42, 1), pool);
  EXPECT_NE(survivors(up, pool, 5000), survivors(down, pool, 5000));
}

TEST(LossQueue, OneDirectionsTrafficDoesNotChangeTheOthersDrops) {
  BufferPool pool;
  LossQueue alone(0.2, RandomStream(9, 1), pool);
  const auto expected = survivors(alone, pool, 3000);

  LossQueue up(0.2, RandomStream(9, 0), pool), down(0.2, RandomStream(9, 1), pool);
  CollectSink out;
  std::vector<uint16_t> got;
  for (int i = 0; i < 3000; ++i) {
    for (int k = 0; k < i % 4; ++k) up.enqueue(udp4(pool, 64, i), i);  // uneven uplink traffic in between
    up.dequeue_ready(i, out);
    out.got.clear();
    down.enqueue(udp4(pool, 64, i, static_cast<uint16_t>(i)), i);
    down.dequeue_ready(i, out);
    for (auto& p : out.got) got.push_back(ip_id_of(p));
    out.got.clear();
  }
  EXPECT_EQ(got, expected);
}

// Observed losses over N packets lie within 5 standard deviations of N*p.
void expect_binomial_rate(double p, uint64_t seed) {
  BufferPool pool;
  LossQueue q(p, RandomStream(seed, 0), pool);
  CollectSink out;
  const int n = 100000;
  for (int i = 0; i < n; ++i) {
    q.enqueue(udp4(pool, 64, i), i);
    q.dequeue_ready(i, out);
    out.got.clear();
  }
  const double mean = n * p, sigma = std::sqrt(n * p * (1 - p));
  const double dropped = static_cast<double>(q.stats().dropped_packets);
  EXPECT_NEAR(dropped, mean, 5 * sigma) << "p=" << p;
  EXPECT_EQ(q.stats().out_packets + q.stats().dropped_packets, static_cast<uint64_t>(n));
}

TEST(LossQueue, ObservedRateWithinBinomialBoundAtOnePercent) {
  expect_binomial_rate(0.01, 2024);
}
TEST(LossQueue, ObservedRateWithinBinomialBoundAtThirtyPercent) {
  expect_binomial_rate(0.3, 7);
}

TEST(LossQueue, GsoFrameIsJudgedPerSegmentAndSplitWhenPartlyLost) {
  // The verdicts are one uniform draw per wire segment, in order: replay the same stream to predict them.
  const double p = 0.4;
  const uint64_t seed = 31337;
  RandomStream oracle(seed, 1);
  BufferPool pool;
  LossQueue q(p, RandomStream(seed, 1), pool);
  CollectSink out;
  const uint16_t mss = 1000;
  int partial_frames = 0;
  for (int frame = 0; frame < 200; ++frame) {
    fake::FrameSpec s;
    s.proto = fake::kTcp;
    s.gso_size = mss;
    s.payload = 9 * mss + 250;  // 10 segments, the last short
    s.seq = 100000u * static_cast<uint32_t>(frame);
    s.pattern = static_cast<uint8_t>(frame);
    std::vector<bool> lost(10);
    int n_lost = 0;
    for (uint32_t i = 0; i < 10; ++i) {
      lost[i] = oracle.uniform() < p;
      n_lost += lost[i] ? 1 : 0;
    }
    q.enqueue(fake::make_frame(pool, s), frame);
    q.dequeue_ready(frame, out);
    if (n_lost == 0) {
      ASSERT_EQ(out.got.size(), 1u);
      EXPECT_TRUE(out.got[0].is_gso());
    } else {
      partial_frames += n_lost < 10;
      size_t k = 0;
      for (uint32_t i = 0; i < 10; ++i) {
        if (lost[i]) continue;
        ASSERT_LT(k, out.got.size()) << "frame " << frame;
        const Packet& g = out.got[k++];
        const uint32_t chunk = i == 9 ? 250 : mss;
        EXPECT_FALSE(g.is_gso());
        EXPECT_EQ(g.frame_size(), fake::payload_offset(s) + chunk);
        EXPECT_EQ(fake::rd32(g.frame() + fake::l4_offset(s) + 4), s.seq + i * mss) << "frame " << frame;
        EXPECT_EQ(g.frame()[fake::payload_offset(s)], fake::payload_byte(i * mss, s.pattern));
      }
      EXPECT_EQ(k, out.got.size()) << "frame " << frame;
    }
    out.got.clear();
  }
  EXPECT_GT(partial_frames, 100);  // the split path was exercised many times
}

TEST(LossQueue, ConservationInWirePacketsAtEveryStep) {
  BufferPool pool;
  LossQueue q(0.3, RandomStream(5, 0), pool);
  CollectSink out;
  uint64_t wire_in = 0, wire_out = 0;
  for (int i = 0; i < 3000; ++i) {
    Packet p = i % 3 == 0   ? fake::tcp_gso(pool, i % 2 == 0, 1448, 1448 * 7 + 3, i)
               : i % 3 == 1 ? fake::udp_gso(pool, i % 2 == 0, 1200, 1200 * 4, i)
                            : udp4(pool, 300, i);
    wire_in += p.segments();
    q.enqueue(std::move(p), i);
    ASSERT_TRUE(Conserved(q.stats())) << "after enqueue " << i;
    if (i % 4 == 0) {
      q.dequeue_ready(i, out);
      ASSERT_TRUE(Conserved(q.stats())) << "after dequeue " << i;
    }
  }
  q.dequeue_ready(3000, out);
  for (auto& p : out.got) wire_out += p.segments();
  EXPECT_EQ(q.stats().in_packets, wire_in);
  EXPECT_EQ(q.stats().out_packets, wire_out);
  EXPECT_EQ(q.stats().queued_packets, 0u);
  EXPECT_EQ(q.stats().queued_bytes, 0u);
  EXPECT_TRUE(Conserved(q.stats()));
}

}  // namespace
}  // namespace tracemod
