// tm-record's window control, driven by a fake clock: the Saturator rule, delay relative to the minimum,
// loss detection, and a simulated droptail bottleneck that the window must keep busy without overflowing.
#include <gtest/gtest.h>

#include <algorithm>
#include <deque>
#include <vector>

#include "saturator/dry_queue.hh"
#include "saturator/rate_limiter.hh"
#include "saturator/window.hh"

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
  Sim(const WindowParams& p, size_t queue) : window(p), link(queue) {}
  WindowControl window;
  Bottleneck link;
  std::deque<std::tuple<Nanos, uint64_t, Nanos, Nanos>> acks;  // due, seq, send, recv
  uint64_t seq = 0;
  std::vector<std::pair<Nanos, Nanos>> arrivals;                   // send, receive
  Nanos max_qdelay_after = kNever, max_qdelay = 0;                 // of the queue, from that time on
  Nanos feedback_stall_from = kNever, feedback_stall_to = kNever;  // acknowledgements held back meanwhile

  // Runs until END with opportunities every GAP; counts idle ones after WARMUP.
  void run(Nanos from, Nanos end, Nanos gap, Nanos warmup) {
    Nanos next_opportunity = from + gap;
    for (Nanos now = from; now < end; now += kMs / 10) {
      const bool feedback_stalled = now >= feedback_stall_from && now < feedback_stall_to;
      while (!feedback_stalled && !acks.empty() && std::get<0>(acks.front()) <= now) {
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
          arrivals.push_back({link.queue.front().second, now});
          if (now >= max_qdelay_after) max_qdelay = std::max(max_qdelay, now - link.queue.front().second);
          link.queue.pop_front();
          ++link.served;
        }
        next_opportunity += gap;
      }
    }
  }
};

TEST(RecordWindow, KeepsA12MbitDroptailLinkBusyWithoutOverflow) {
  Sim sim(wifi_window(), 1000);
  sim.run(0, 10000 * kMs, kMs, 2000 * kMs);  // 12 Mbit/s: one opportunity per ms
  EXPECT_EQ(sim.link.idle, 0u);
  EXPECT_EQ(sim.link.drops, 0u);
  EXPECT_GT(sim.link.served, 9990u);
}

TEST(RecordWindow, FollowsAStepFrom2To20Mbit) {
  Sim sim(wifi_window(), 1000);
  sim.run(0, 5000 * kMs, 6 * kMs, 2000 * kMs);  // 2 Mbit/s
  const uint64_t idle_slow = sim.link.idle;
  sim.run(5000 * kMs, 10000 * kMs, 6 * kMs / 10, 7000 * kMs);  // 20 Mbit/s
  EXPECT_EQ(idle_slow, 0u);
  EXPECT_LE(sim.link.idle, 5u) << "opportunities lost more than 2 s after the step";
  EXPECT_EQ(sim.link.drops, 0u);
}

// Every second: 700 ms at one opportunity per ms, a stall, then a burst of BURST opportunities over the last
// BURST_MS ms (by default what the stall held back, at 37.5 per ms). Returns the idle opportunities of the
// first WARMUP seconds.
uint64_t run_bursty(Sim& sim, int seconds, int warmup, int burst = 300, int burst_ms = 8) {
  uint64_t idle_in_warmup = 0;
  for (int second = 0; second < seconds; ++second) {
    const Nanos t0 = second * 1000 * kMs, burst_from = t0 + (1000 - burst_ms) * kMs;
    sim.run(t0, t0 + 700 * kMs, kMs, 0);
    sim.run(t0 + 700 * kMs, burst_from, 1000 * kMs, 0);  // no opportunity
    sim.run(burst_from, t0 + 1000 * kMs, burst_ms * kMs / burst, 0);
    if (second + 1 == warmup) idle_in_warmup = sim.link.idle;
  }
  return idle_in_warmup;
}

TEST(RecordWindow, TheLteProfileFillsBurstsAfterStalls) {
  Sim sim(lte_window(), 5000);
  const uint64_t idle_in_warmup = run_bursty(sim, 8, 3, 40, 1);
  EXPECT_EQ(sim.link.idle, idle_in_warmup) << "idle opportunities after 3 s";
  EXPECT_EQ(sim.link.drops, 0u);
}

TEST(RecordWindow, TheWifiProfileMissesBurstsAfterStalls) {
  Sim sim(wifi_window(), 5000);
  const uint64_t idle_in_warmup = run_bursty(sim, 8, 3);
  EXPECT_GE(sim.link.idle - idle_in_warmup, 5u * 100) << "each burst of 300 finds at most 80 packets queued";
}

TEST(RecordWindow, TheAutoProfileRisesAtTheFirstBurstThatEmptiesTheQueueAndFillsTheNext) {
  Sim sim(auto_window(), 5000);
  const uint64_t idle_in_warmup = run_bursty(sim, 8, 2);
  EXPECT_EQ(sim.link.idle, idle_in_warmup) << "idle opportunities after 2 s";
  EXPECT_LE(idle_in_warmup, 300u) << "only the first burst may be missed";
  EXPECT_EQ(sim.link.drops, 0u);
  ASSERT_EQ(sim.window.changes().size(), 1u);
  const ThresholdChange& c = sim.window.changes()[0];
  EXPECT_GT(c.at, 992 * kMs);  // at the first burst
  EXPECT_LT(c.at, 1001 * kMs);
  EXPECT_GE(c.queued, 300 * kMs);  // the stall's 300 ms and the queue before it
  EXPECT_EQ(c.low, 750 * kMs);     // twice that is beyond LTE's thresholds: LTE's
  EXPECT_EQ(c.high, 3000 * kMs);
  EXPECT_EQ(sim.window.params().max_window, 16384u);
}

TEST(RecordWindow, TheAutoProfileKeepsWifiThresholdsOnASteadyLink) {
  Sim sim(auto_window(), 1000);
  sim.max_qdelay_after = 2000 * kMs;
  sim.run(0, 10000 * kMs, kMs, 2000 * kMs);  // 12 Mbit/s
  EXPECT_EQ(sim.link.idle, 0u);
  EXPECT_TRUE(sim.window.changes().empty());
  EXPECT_LE(sim.max_qdelay, 81 * kMs) << "the queue stays as short as the wifi profile keeps it";
}

TEST(RecordWindow, TheAutoProfileKeepsWifiThresholdsThroughAStepUp) {
  Sim sim(auto_window(), 1000);
  sim.run(0, 5000 * kMs, 6 * kMs, 2000 * kMs);                 // 2 Mbit/s
  sim.run(5000 * kMs, 10000 * kMs, 6 * kMs / 10, 7000 * kMs);  // 20 Mbit/s
  EXPECT_TRUE(sim.window.changes().empty());
  EXPECT_LE(sim.link.idle, 5u);
}

TEST(RecordWindow, TheAutoProfileIgnoresAQueueDrainedByAStalledSender) {
  // The sender hears nothing for 200 ms (its machine was busy, or the feedback path stalled): the queue
  // empties although the link is steady. That says nothing about the link.
  Sim sim(auto_window(), 1000);
  sim.feedback_stall_from = 3000 * kMs;
  sim.feedback_stall_to = 3200 * kMs;
  sim.run(0, 6000 * kMs, kMs, 0);
  EXPECT_GT(sim.link.idle, 50u) << "the queue did run dry";
  EXPECT_TRUE(sim.window.changes().empty());
}

TEST(RecordWindow, TheAutoProfileIgnoresDryMomentsWhileGrowing) {
  // Starting on a fast link, the window grows from 16 while the queue runs dry: the thresholds are not at
  // fault.
  Sim sim(auto_window(), 1000);
  sim.run(0, 2000 * kMs, kMs / 100, 0);  // 1.2 Gbit/s
  EXPECT_GT(sim.link.idle, 0u);
  EXPECT_TRUE(sim.window.changes().empty());
}

TEST(RecordWindow, TheAutoProfileRisesByDoublingsAtMostToLte) {
  WindowControl w(auto_window());
  uint64_t seq = fill(w, 0, 0), next = 1;
  Nanos r = 0;  // the latest receive time
  // A stall of Q, through which a packet queued; then the next packet, sent after it came out, finds the
  // queue dry.
  auto round = [&](Nanos queued) {
    w.on_ack(next++, r, r + queued, r + queued);
    r += queued + kMs;
    w.on_ack(next++, r, r, r);
    seq = fill(w, seq, r);
  };
  w.on_ack(0, 0, 0, 0);  // the path's own delay: 0
  EXPECT_TRUE(w.params().loss_shrinks);
  round(30 * kMs);  // 60 ms wanted: 80/320 ms
  ASSERT_EQ(w.changes().size(), 1u);
  EXPECT_FALSE(w.params().loss_shrinks) << "deeper than Wi-Fi's, the queue is allowed to overflow";
  EXPECT_EQ(w.params().low_delay, 80 * kMs);
  EXPECT_EQ(w.params().high_delay, 320 * kMs);
  EXPECT_EQ(w.params().max_window, 8192u);
  round(50 * kMs);  // shorter than the low threshold now: not a stall, no change
  EXPECT_EQ(w.changes().size(), 1u);
  round(2000 * kMs);  // LTE's at most
  ASSERT_EQ(w.changes().size(), 2u);
  EXPECT_EQ(w.params().low_delay, 750 * kMs);
  EXPECT_EQ(w.params().high_delay, 3000 * kMs);
  EXPECT_EQ(w.params().max_window, 16384u);
  round(3000 * kMs);
  EXPECT_EQ(w.changes().size(), 2u);
  EXPECT_EQ(w.changes()[1].queued, 2000 * kMs);
}

// A stall of 100 ms, then a packet finding the queue dry; the acknowledgement that freed the window for it
// reached the sender LATE after the fastest one. Returns whether the thresholds rose.
bool rises_after_a_stall(Nanos late) {
  WindowControl w(auto_window());
  fill(w, 0, 0);
  w.on_ack(0, 0, 0, 0);                         // path and acknowledgement: 0
  w.on_ack(1, 0, 100 * kMs, 100 * kMs);         // queued 100 ms through a stall
  w.on_ack(2, 0, 101 * kMs, 101 * kMs + late);  // frees the window...
  const Nanos sent = 101 * kMs + late + kMs / 2;
  const uint64_t next = fill(w, 16, sent) - 1;  // ...for this one, which finds the queue dry
  w.on_ack(next, sent, sent + kMs, sent + kMs);
  return !w.changes().empty();
}

TEST(RecordWindow, TheAutoProfileIgnoresADryQueueItsSenderLearntOfLate) {
  EXPECT_TRUE(rises_after_a_stall(0));
  EXPECT_TRUE(rises_after_a_stall(49 * kMs));
  EXPECT_FALSE(rises_after_a_stall(50 * kMs)) << "half of what the stall queued: the sender could have caused it";
}

TEST(RecordWindow, FixedProfilesDoNotAdapt) {
  Sim sim(wifi_window(), 5000);
  run_bursty(sim, 3, 1);
  EXPECT_TRUE(sim.window.changes().empty());
  EXPECT_EQ(sim.window.params().low_delay, 20 * kMs);
}

TEST(RecordWindow, ALossShrinksTheWindowAndPausesGrowthForARoundTrip) {
  WindowParams p = params();
  p.loss_shrinks = true;  // the wifi profile's
  WindowControl w(p);
  fill(w, 0, 0);
  w.on_ack(0, 0, 0, 10 * kMs);  // RTT 10 ms, no queueing: grows
  EXPECT_EQ(w.window(), 11u);
  w.on_ack(4, 0, 0, 10 * kMs);  // grows, then 1 is lost: shrinks
  EXPECT_EQ(w.lost(), 1u);
  EXPECT_EQ(w.window(), 11u);
  w.on_ack(2, 0, 0, 19 * kMs);  // within a round trip of the loss: no growth
  EXPECT_EQ(w.window(), 11u);
  w.on_ack(3, 0, 0, 20 * kMs);
  EXPECT_EQ(w.window(), 12u);
  EXPECT_EQ(w.lost(), 1u);
}

TEST(RecordWindow, WithLteThresholdsALossChangesNothing) {
  WindowParams p = lte_window();
  p.initial_window = 10;
  WindowControl w(p);
  fill(w, 0, 0);
  w.on_ack(4, 0, 0, 10 * kMs);  // 0 and 1 lost
  EXPECT_EQ(w.lost(), 2u);
  EXPECT_EQ(w.window(), 11u);
  w.on_ack(2, 0, 0, 11 * kMs);
  EXPECT_EQ(w.window(), 12u);
}

TEST(RecordWindow, AShallowDroptailQueueIsNotFlooded) {
  // 30 packets at 2 Mbit/s hold 180 ms: the window must stay near them instead of growing without end.
  Sim sim(wifi_window(), 30);
  sim.run(0, 20000 * kMs, 6 * kMs, 0);
  EXPECT_LT(sim.link.drops * 20, sim.link.served) << "losses above 5%";
  EXPECT_LE(sim.window.window(), 60u);
}

// What ShortfallEstimate makes of a simulated recording's arrivals.
double estimated_shortfall(const Sim& sim) {
  DryQueue dry;
  ShortfallEstimate estimate;
  for (const auto& [send, recv] : sim.arrivals) estimate.add(recv, dry.add(send, recv));
  estimate.finish();
  return estimate.missed();
}

TEST(RecordWindow, TheShortfallEstimateFindsWhatAShortQueueMissed) {
  Sim sim(wifi_window(), 5000);
  run_bursty(sim, 8, 0);
  const double truth = static_cast<double>(sim.link.idle);
  EXPECT_GT(truth, 500);
  // It sees the milliseconds after the queue ran dry, not the opportunities within them; low rather than high.
  EXPECT_GE(estimated_shortfall(sim), 0.6 * truth);
  EXPECT_LE(estimated_shortfall(sim), 1.1 * truth);
}

TEST(RecordWindow, TheShortfallEstimateIsZeroWhenNothingWasMissed) {
  Sim steady(wifi_window(), 1000);
  steady.run(0, 10000 * kMs, kMs, 0);
  ASSERT_EQ(steady.link.idle, 0u);
  EXPECT_EQ(estimated_shortfall(steady), 0);
  Sim bursty(lte_window(), 5000);
  run_bursty(bursty, 8, 0);
  ASSERT_EQ(bursty.link.idle, 0u);
  EXPECT_EQ(estimated_shortfall(bursty), 0);
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
