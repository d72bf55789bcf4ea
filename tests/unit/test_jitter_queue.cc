// Jitter with a fake clock: order kept or not, delays never below zero, GSO frames, link-control frames.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "effects/jitter_queue.hh"
#include "fake.hh"

namespace tracemod {
namespace {

using namespace fake;  // the frames, sinks and checks every queue test uses

constexpr Nanos kMs = kMillisecond, kUs = 1000;
constexpr uint64_t kMemory = 256ull << 20;

JitterQueue queue(BufferPool& pool, Nanos base, const Distribution& d, bool reorder, double rho = 0,
                  uint64_t memory = kMemory) {
  return JitterQueue(base, Sampler(d, rho, RandomStream(5, 7)), reorder, pool, memory);
}

struct Departure {
  uint16_t id;
  Nanos at, delay;
};

// Feeds N packets SPACING apart, jumping the clock from event to event, and returns the departures in order.
std::vector<Departure> run(JitterQueue& q, BufferPool& pool, int n, Nanos spacing) {
  std::vector<Departure> d;
  CollectSink out;
  for (int next = 0; next < n || q.next_event() != kNever;) {
    const Nanos arrival = next < n ? next * spacing : kNever, t = std::min(arrival, q.next_event());
    if (arrival == t) {
      q.enqueue(udp4(pool, 64, t, static_cast<uint16_t>(next)), t);
      ++next;
    }
    q.dequeue_ready(t, out);
    for (auto& p : out.got) d.push_back({ip_id_of(p), p.release, p.release - ip_id_of(p) * spacing});
    out.got.clear();
  }
  return d;
}

int inversions(const std::vector<Departure>& d) {
  int n = 0;
  for (size_t i = 1; i < d.size(); ++i) n += d[i].id < d[i - 1].id;
  return n;
}

// Packets far apart do not interact: their delays are BASE + the jitter, whatever the mode.
TEST(JitterQueue, DelaysFollowTheDistributionWhenPacketsAreFarApart) {
  BufferPool pool;
  for (bool reorder : {false, true}) {
    JitterQueue q = queue(pool, 20 * kMs, Distribution::normal(0, 2e6), reorder);
    const auto d = run(q, pool, 4000, 25 * kMs);
    ASSERT_EQ(d.size(), 4000u);
    double sum = 0, squares = 0;
    for (const auto& x : d) sum += x.delay / 1e6, squares += (x.delay / 1e6) * (x.delay / 1e6);
    const double mean = sum / 4000, sd = std::sqrt(squares / 4000 - mean * mean);
    EXPECT_NEAR(mean, 20, 5 * 2 / std::sqrt(4000.0));
    EXPECT_NEAR(sd, 2, 5 * 2 / std::sqrt(8000.0));
    EXPECT_EQ(inversions(d), 0);
    EXPECT_TRUE(Conserved(q.stats()));
  }
}

// Close together, jitter would reorder: without --reorder nothing overtakes and no delay falls below its
// sample's; with it, packets leave in the order of their sampled times.
TEST(JitterQueue, OrderKeptUnlessReorder) {
  BufferPool pool;
  JitterQueue fifo = queue(pool, 10 * kMs, Distribution::uniform(-5e6, 5e6), false);
  JitterQueue heap = queue(pool, 10 * kMs, Distribution::uniform(-5e6, 5e6), true);
  const auto a = run(fifo, pool, 2000, kMs), b = run(heap, pool, 2000, kMs);
  EXPECT_EQ(inversions(a), 0);
  EXPECT_GT(inversions(b), 200);
  for (size_t i = 1; i < a.size(); ++i) EXPECT_GE(a[i].at, a[i - 1].at);
  for (size_t i = 1; i < b.size(); ++i) EXPECT_GE(b[i].at, b[i - 1].at);
  // Same seed, same samples: the in-order delays are each at least the reordered (sampled) ones.
  std::vector<Nanos> sampled(2000), held(2000);
  for (const auto& x : b) sampled[x.id] = x.delay;
  for (const auto& x : a) held[x.id] = x.delay;
  for (int i = 0; i < 2000; ++i) {
    EXPECT_GE(held[i], sampled[i]) << i;
    EXPECT_GE(sampled[i], 5 * kMs);
    EXPECT_LE(sampled[i], 15 * kMs);
  }
}

TEST(JitterQueue, DelaysBelowZeroAreZero) {
  BufferPool pool;
  JitterQueue q = queue(pool, 1 * kMs, Distribution::normal(0, 10e6), true);
  const auto d = run(q, pool, 4000, 50 * kMs);
  int zero = 0;
  for (const auto& x : d) {
    ASSERT_GE(x.delay, 0);
    zero += x.delay == 0;
  }
  const double p = 0.4601722;  // Phi(-0.1)
  EXPECT_NEAR(zero, 4000 * p, 5 * std::sqrt(4000 * p * (1 - p)));
}

TEST(JitterQueue, GsoFramesSplitUnlessTheirPacketsLeaveTogether) {
  BufferPool pool;
  CollectSink out;
  JitterQueue wide = queue(pool, kMs, Distribution::uniform(-1e6, 1e6), false);
  wide.enqueue(fake::tcp_gso(pool, false, 1000, 8000, 0), 0);
  wide.dequeue_ready(10 * kMs, out);
  EXPECT_EQ(out.got.size(), 8u);
  out.got.clear();
  JitterQueue narrow = queue(pool, kMs, Distribution::uniform(-40 * kUs, 40 * kUs), false);
  narrow.enqueue(fake::tcp_gso(pool, false, 1000, 8000, 0), 0);
  narrow.dequeue_ready(10 * kMs, out);
  ASSERT_EQ(out.got.size(), 1u);
  EXPECT_TRUE(out.got[0].is_gso());
  EXPECT_EQ(narrow.stats().out_packets, 8u);
}

// Link-control frames get the base delay and no sample: they do not shift the other packets' delays.
TEST(JitterQueue, LinkControlFramesDrawNothing) {
  BufferPool pool;
  std::vector<uint8_t> arp(60, 0);
  arp[12] = 0x08, arp[13] = 0x06;
  std::vector<Nanos> releases[2];
  for (int with_arp : {0, 1}) {
    JitterQueue q = queue(pool, 10 * kMs, Distribution::uniform(-1e6, 1e6), true);
    CollectSink out;
    for (uint16_t i = 0; i < 50; ++i) {
      if (with_arp && i == 10) q.enqueue(fake::make_packet(pool, arp, virtio_net_hdr{}, i * 20 * kMs), i * 20 * kMs);
      q.enqueue(udp4(pool, 64, i * 20 * kMs, i), i * 20 * kMs);
    }
    q.dequeue_ready(kNever - 1, out);
    for (auto& p : out.got)
      if (p.frame_size() != 60)
        releases[with_arp].push_back(p.release);
      else
        EXPECT_EQ(p.release, 210 * kMs);
  }
  EXPECT_EQ(releases[0], releases[1]);
}

TEST(JitterQueue, MemoryLimitDropsArrivals) {
  BufferPool pool;
  JitterQueue q = queue(pool, 10 * kMs, Distribution::uniform(-1e6, 1e6), false, 0, 3 * 2048);
  for (uint16_t i = 0; i < 5; ++i) q.enqueue(udp4(pool, 64, 0, i), 0);
  EXPECT_EQ(q.stats().dropped_packets, 2u);
  EXPECT_TRUE(Conserved(q.stats()));
}

TEST(JitterQueue, SummarySaysWhatPacketsGot) {
  BufferPool pool;
  JitterQueue q = queue(pool, 10 * kMs, Distribution::constant(2e6), false);
  run(q, pool, 10, kMs);
  EXPECT_EQ(q.summary(), "jitter const:2ms, in order; delays mean 12.000 ms, SD 0.000 ms over 10 packets");
}

}  // namespace
}  // namespace tracemod
