// tm-record's window control, driven by a fake clock: the Saturator rule, delay relative to the minimum,
// loss detection, and a simulated droptail bottleneck that the window must keep busy without overflowing.
#include <gtest/gtest.h>

#include <deque>

#include "record/rate_limiter.hh"
#include "record/window.hh"

namespace tracemod::record {
namespace {

constexpr Nanos kMs = kMillisecond;

WindowParams params() {
  WindowParams p;
  p.low_delay = 20 * kMs;
  p.high_delay = 80 * kMs;
  p.min_window = 2;
  p.max_window = 100;
  p.initial_window = 10;
  p.loss_timeout = 300 * kMs;
  return p;
}

// Sends up to the window at NOW, returns the next sequence number.
uint64_t fill(WindowControl& w, uint64_t seq, Nanos now) {
  while (w.can_send()) w.on_sent(seq++, now);
  return seq;
}

TEST(RecordWindow, GrowsBelowLowHoldsBetweenShrinksAbove) {
  WindowControl w(params());
  uint64_t seq = fill(w, 0, 0);
  EXPECT_EQ(w.window(), 10u);
  EXPECT_EQ(w.in_flight(), 10u);
  w.on_ack(0, 0, 5 * kMs, 6 * kMs);  // the first sample defines the minimum: no queueing
  EXPECT_EQ(w.window(), 11u);
  w.on_ack(1, 0, 5 * kMs + 50 * kMs, 60 * kMs);  // 50 ms above the minimum: in the band
  EXPECT_EQ(w.window(), 11u);
  w.on_ack(2, 0, 5 * kMs + 90 * kMs, 100 * kMs);  // above the high threshold
  EXPECT_EQ(w.window(), 10u);
  EXPECT_EQ(w.queueing_delay(), 90 * kMs);
  EXPECT_EQ(w.in_flight(), 7u);
  (void)seq;
}

TEST(RecordWindow, StaysWithinItsBounds) {
  WindowParams p = params();
  WindowControl w(p);
  uint64_t seq = 0;
  for (int round = 0; round < 200; ++round) {
    const uint64_t first = seq;
    seq = fill(w, seq, round * kMs);
    for (uint64_t s = first; s < seq; ++s) w.on_ack(s, 0, 1 * kMs, round * kMs);
  }
  EXPECT_EQ(w.window(), p.max_window);
  w.on_ack(seq - 1, 0, 0, 0);  // duplicate: nothing changes
  for (int round = 0; round < 200; ++round) {
    const uint64_t first = seq;
    seq = fill(w, seq, round * kMs);
    for (uint64_t s = first; s < seq; ++s) w.on_ack(s, 0, 1 * kMs + 500 * kMs, round * kMs);
  }
  EXPECT_EQ(w.window(), p.min_window);
}

TEST(RecordWindow, UnsynchronisedClocksStillGiveQueueingDelay) {
  WindowControl w(params());
  fill(w, 0, 0);
  const Nanos offset = -3600000 * kMs;  // the receiver's clock is an hour behind
  w.on_ack(0, 1 * kMs, 1 * kMs + 7 * kMs + offset, 10 * kMs);
  w.on_ack(1, 2 * kMs, 2 * kMs + 7 * kMs + 30 * kMs + offset, 40 * kMs);
  EXPECT_EQ(w.queueing_delay(), 30 * kMs);
}

TEST(RecordWindow, AGapOfThreeMeansLoss) {
  WindowControl w(params());
  fill(w, 0, 0);
  w.on_ack(4, 0, 1 * kMs, 2 * kMs);  // 0 and 1 are three or more behind: lost; 2 and 3 may be reordered
  EXPECT_EQ(w.lost(), 2u);
  EXPECT_EQ(w.in_flight(), 7u);
  w.on_ack(2, 0, 1 * kMs, 2 * kMs);
  w.on_ack(3, 0, 1 * kMs, 2 * kMs);
  EXPECT_EQ(w.lost(), 2u);
  EXPECT_EQ(w.acked(), 3u);
}

TEST(RecordWindow, UnacknowledgedPacketsExpireAndFreeTheWindow) {
  WindowControl w(params());
  fill(w, 0, 0);
  EXPECT_FALSE(w.can_send());
  EXPECT_EQ(w.next_expiry(), 300 * kMs);
  EXPECT_EQ(w.expire(299 * kMs), 0u);
  EXPECT_EQ(w.expire(300 * kMs), 10u);
  EXPECT_EQ(w.in_flight(), 0u);
  EXPECT_TRUE(w.can_send());
  EXPECT_EQ(w.next_expiry(), kNever);
}

TEST(RecordWindow, TheLossTimeoutFollowsTheLargestRecentRtt) {
  WindowControl w(params());
  fill(w, 0, 0);
  w.on_ack(0, 0, 1 * kMs, 400 * kMs);  // an RTT of 400 ms: losses wait for 800 ms
  EXPECT_EQ(w.loss_deadline(), 800 * kMs);
  EXPECT_EQ(w.expire(700 * kMs), 0u);
  EXPECT_EQ(w.expire(800 * kMs), 9u);
}

TEST(RecordWindow, ALateAcknowledgementUndoesALoss) {
  WindowControl w(params());
  fill(w, 0, 0);
  w.on_ack(5, 0, 1 * kMs, 2 * kMs);  // 0, 1, 2 declared lost
  EXPECT_EQ(w.lost(), 3u);
  w.on_ack(9, 0, 1 * kMs, 2 * kMs);  // 3..6 lost; 0..2 trimmed
  EXPECT_EQ(w.lost(), 6u);
  w.on_ack(6, 0, 1 * kMs, 2 * kMs);  // 6 was only late
  EXPECT_EQ(w.lost(), 5u);
  EXPECT_EQ(w.acked(), 3u);
}

// A droptail bottleneck serving one 1500-byte packet at each opportunity, feedback 1 ms after delivery.
struct Bottleneck {
  explicit Bottleneck(size_t packets) : capacity(packets) {}
  size_t capacity;
  std::deque<std::pair<uint64_t, Nanos>> queue;  // seq, send time
  uint64_t drops = 0, idle = 0, served = 0;
};

struct Sim {
  WindowControl window;
  Bottleneck link;
  std::deque<std::tuple<Nanos, uint64_t, Nanos, Nanos>> acks;  // due, seq, send, recv
  uint64_t seq = 0;

  // Runs until END with opportunities every GAP; counts idle ones after WARMUP.
  void run(Nanos from, Nanos end, Nanos gap, Nanos warmup) {
    Nanos next_opportunity = from + gap;
    for (Nanos now = from; now < end; now += kMs / 10) {
      while (!acks.empty() && std::get<0>(acks.front()) <= now) {
        const auto [due, s, send, recv] = acks.front();
        window.on_ack(s, send, recv, now);
        acks.pop_front();
      }
      window.expire(now);
      while (window.can_send()) {
        if (link.queue.size() < link.capacity)
          link.queue.push_back({seq, now});
        else
          ++link.drops;
        window.on_sent(seq++, now);
      }
      while (next_opportunity <= now) {
        if (link.queue.empty())
          link.idle += next_opportunity >= warmup;
        else {
          acks.push_back({now + kMs, link.queue.front().first, link.queue.front().second, now});
          link.queue.pop_front();
          ++link.served;
        }
        next_opportunity += gap;
      }
    }
  }
};

TEST(RecordWindow, KeepsA12MbitDroptailLinkBusyWithoutOverflow) {
  Sim sim{WindowControl(wifi_window()), Bottleneck(1000), {}, 0};
  sim.run(0, 10000 * kMs, kMs, 2000 * kMs);  // 12 Mbit/s: one opportunity per ms
  EXPECT_EQ(sim.link.idle, 0u);
  EXPECT_EQ(sim.link.drops, 0u);
  EXPECT_GT(sim.link.served, 9990u);
}

TEST(RecordWindow, FollowsAStepFrom2To20Mbit) {
  Sim sim{WindowControl(wifi_window()), Bottleneck(1000), {}, 0};
  sim.run(0, 5000 * kMs, 6 * kMs, 2000 * kMs);  // 2 Mbit/s
  const uint64_t idle_slow = sim.link.idle;
  sim.run(5000 * kMs, 10000 * kMs, 6 * kMs / 10, 7000 * kMs);  // 20 Mbit/s
  EXPECT_EQ(idle_slow, 0u);
  EXPECT_LE(sim.link.idle, 5u) << "opportunities lost more than 2 s after the step";
  EXPECT_EQ(sim.link.drops, 0u);
}

TEST(RecordWindow, TheLteProfileFillsBurstsAfterStalls) {
  // Every second: 700 ms at one opportunity per ms, a 300 ms stall, then a burst of 40 in one ms.
  Sim sim{WindowControl(lte_window()), Bottleneck(5000), {}, 0};
  uint64_t idle_after_warmup = 0;
  for (int second = 0; second < 8; ++second) {
    const Nanos t0 = second * 1000 * kMs;
    sim.run(t0, t0 + 700 * kMs, kMs, 3000 * kMs);
    sim.run(t0 + 700 * kMs, t0 + 999 * kMs, 1000 * kMs, 3000 * kMs);  // no opportunity
    sim.run(t0 + 999 * kMs, t0 + 1000 * kMs, kMs / 40, 3000 * kMs);
    if (second == 2) idle_after_warmup = sim.link.idle;
  }
  EXPECT_EQ(sim.link.idle, idle_after_warmup) << "idle opportunities after 3 s";
  EXPECT_EQ(sim.link.drops, 0u);
}

TEST(RecordRateLimiter, HoldsTheRateOverTime) {
  RateLimiter cap(12000000, 1500);  // 1000 packets per second
  uint64_t sent = 0;
  for (Nanos now = 0; now < 1000 * kMs; now += kMs / 10) {
    while (cap.allows(1500, now)) cap.take(1500), ++sent;
  }
  EXPECT_NEAR(static_cast<double>(sent), 1000.0, 5.0);
  while (cap.allows(1500, 1000 * kMs)) cap.take(1500);
  EXPECT_GT(cap.ready_at(1500, 1000 * kMs), 1000 * kMs);
  EXPECT_LE(cap.ready_at(1500, 1000 * kMs), 1001 * kMs + 1);
  RateLimiter none(0, 1500);
  EXPECT_TRUE(none.allows(1500, 0));
}

}  // namespace
}  // namespace tracemod::record
