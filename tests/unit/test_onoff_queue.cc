// On/off links with a fake clock: schedules (random and from a file), drop and hold, hold limits.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "effects/onoff_queue.hh"
#include "fake.hh"
#include "util/error.hh"

namespace tracemod {
namespace {

using namespace fake;  // the frames, sinks and checks every queue test uses

constexpr Nanos kMs = kMillisecond;

std::unique_ptr<OnOffSchedule> constant(Nanos on, Nanos off, Nanos start = 0) {
  return std::make_unique<RandomOnOff>(Distribution::constant(static_cast<double>(on)),
                                       Distribution::constant(static_cast<double>(off)), RandomStream(1, 9), start);
}

std::string load_error(const std::string& text) {
  try {
    FileOnOff::load(fake::scratch_file("schedule.txt", text));
  } catch (const UsageError& e) {
    const std::string what = e.what();
    return what.substr(what.find("schedule.txt"));
  }
  return "(accepted)";
}

TEST(RandomOnOff, StartsOnAndAlternates) {
  auto s = constant(10 * kMs, 5 * kMs, 100 * kMs);
  EXPECT_TRUE(s->on_at(100 * kMs));
  EXPECT_EQ(s->state_ends(), 110 * kMs);
  EXPECT_FALSE(s->on_at(110 * kMs));
  EXPECT_EQ(s->state_ends(), 115 * kMs);
  EXPECT_TRUE(s->on_at(115 * kMs));
  EXPECT_FALSE(s->on_at(1000 * kMs + 12 * kMs));  // 100 + 60 cycles of 15 ms = 1000; off from 1010 to 1015
  EXPECT_TRUE(s->on_at(1015 * kMs));
}

// The on and off times, walked through the schedule, have the configured means: 5 sigma (exponential: SD = mean).
TEST(RandomOnOff, ExponentialMeans) {
  RandomOnOff s(Distribution::exponential(2e6), Distribution::exponential(1e6), RandomStream(3, 9), 0);
  const int n = 100000;
  double on = 0, off = 0;
  Nanos t = 0;
  for (int i = 0; i < n; ++i) {
    EXPECT_TRUE(s.on_at(t));
    on += s.state_ends() - t;
    t = s.state_ends();
    EXPECT_FALSE(s.on_at(t));
    off += s.state_ends() - t;
    t = s.state_ends();
  }
  EXPECT_NEAR(on / n, 2e6, 5 * 2e6 / std::sqrt(n));
  EXPECT_NEAR(off / n, 1e6, 5 * 1e6 / std::sqrt(n));
}

TEST(FileOnOff, FollowsTheScheduleAndStaysInItsLastState) {
  const auto events =
      FileOnOff::load(fake::scratch_file("s.txt", "# a handover\n1.5 off\n1750ms on   # back\n\n3s off\n"));
  FileOnOff s(events, "s.txt", 10 * kMs);
  EXPECT_TRUE(s.on_at(0));
  EXPECT_EQ(s.state_ends(), 1510 * kMs);
  EXPECT_FALSE(s.on_at(1510 * kMs));
  EXPECT_TRUE(s.on_at(1760 * kMs));
  EXPECT_FALSE(s.on_at(3010 * kMs));
  EXPECT_EQ(s.state_ends(), kNever);
  EXPECT_FALSE(s.on_at(kNever - 1));
}

TEST(FileOnOff, BadFilesNameTheLine) {
  EXPECT_EQ(load_error("1 off\nsoon on\n"),
            "schedule.txt:2: invalid time 'soon': expected a duration (a unit is "
            "optional): ns, us, ms, s, min or h (e.g. 200ms or 1.5s)");
  EXPECT_EQ(load_error("1 off\n2 up\n"), "schedule.txt:2: expected TIME on or TIME off (e.g. 12.5s off)");
  EXPECT_EQ(load_error("1 off\n2 on now\n"), "schedule.txt:2: expected TIME on or TIME off (e.g. 12.5s off)");
  EXPECT_EQ(load_error("2 off\n1 on\n"), "schedule.txt:2: time goes back (1)");
  EXPECT_EQ(load_error("1 on\n"), "schedule.txt:1: the link is already on (states alternate; it starts on)");
  EXPECT_EQ(load_error("1 off\n2 off\n"), "schedule.txt:2: the link is already off (states alternate; it starts on)");
  EXPECT_EQ(load_error("# nothing\n"), "schedule.txt: no events (lines such as '12.5s off' and '13s on')");
}

TEST(OnOffQueue, DropModeDropsWhatArrivesWhileOff) {
  BufferPool pool;
  OnOffQueue q(constant(10 * kMs, 10 * kMs), OnOffQueue::OffMode::kDrop, {}, pool);
  CollectSink out;
  for (uint16_t i = 0; i < 40; ++i) {
    q.enqueue(udp4(pool, 64, i * kMs, i), i * kMs);
    q.dequeue_ready(i * kMs, out);
  }
  ASSERT_EQ(out.got.size(), 20u);
  for (size_t k = 0; k < out.got.size(); ++k) EXPECT_EQ(ip_id_of(out.got[k]) / 10 % 2, 0) << k;
  EXPECT_EQ(q.stats().dropped_packets, 20u);
  EXPECT_TRUE(Conserved(q.stats()));
  EXPECT_EQ(q.summary(), "const:10ms on, const:10ms off; off: drop: 20 packets dropped");
}

// Held packets leave, in order, the instant the link returns; those arriving after pass straight on.
TEST(OnOffQueue, HoldReleasesInOrderWhenTheLinkReturns) {
  BufferPool pool;
  OnOffQueue q(constant(10 * kMs, 10 * kMs), OnOffQueue::OffMode::kHold, {1000, 0}, pool);
  CollectSink out;
  for (uint16_t i = 0; i < 25; ++i) q.enqueue(udp4(pool, 64, i * kMs, i), i * kMs);
  q.dequeue_ready(19 * kMs, out);
  EXPECT_EQ(out.got.size(), 10u);
  EXPECT_EQ(q.next_event(), 20 * kMs);
  q.dequeue_ready(20 * kMs, out);
  EXPECT_EQ(out.got.size(), 21u);
  q.dequeue_ready(24 * kMs, out);
  ASSERT_EQ(out.got.size(), 25u);
  for (uint16_t i = 0; i < 25; ++i) EXPECT_EQ(ip_id_of(out.got[i]), i);
  for (uint16_t i = 10; i < 20; ++i) EXPECT_EQ(out.got[i].release, 20 * kMs);
  EXPECT_EQ(q.stats().dropped_packets, 0u);
}

TEST(OnOffQueue, HoldLimitsDropTheExcessAndSplitFrames) {
  BufferPool pool;
  OnOffQueue q(constant(10 * kMs, 10 * kMs), OnOffQueue::OffMode::kHold, {5, 0}, pool);
  for (uint16_t i = 0; i < 3; ++i) q.enqueue(udp4(pool, 64, 11 * kMs, i), 11 * kMs);
  q.enqueue(fake::tcp_gso(pool, false, 1000, 4000, 12 * kMs), 12 * kMs);  // 4 packets: 2 fit
  EXPECT_EQ(q.stats().queued_packets, 5u);
  EXPECT_EQ(q.stats().dropped_packets, 2u);
  OnOffQueue b(constant(10 * kMs, 10 * kMs), OnOffQueue::OffMode::kHold, {0, 200}, pool);
  for (uint16_t i = 0; i < 3; ++i) b.enqueue(udp4(pool, 72, 11 * kMs, i), 11 * kMs);  // 100 IP bytes each
  EXPECT_EQ(b.stats().dropped_packets, 1u);
  EXPECT_TRUE(Conserved(b.stats()));
  EXPECT_EQ(b.summary(), "const:10ms on, const:10ms off; off: hold bytes=200: 2 packets held");
}

// ARP and neighbour discovery are not the emulated link's traffic: while the link is off they pass at once, ahead
// of the packets held (behind them they would wait out the outage, and the kernel would give up resolving), and
// count against no hold limit.
TEST(OnOffQueue, LinkControlFramesPassAheadOfHeldPackets) {
  BufferPool pool;
  OnOffQueue q(constant(10 * kMs, 10 * kMs), OnOffQueue::OffMode::kHold, {1, 0}, pool);
  CollectSink out;
  std::vector<uint8_t> arp(60, 0);
  arp[12] = 0x08, arp[13] = 0x06;
  const auto control = [&](Nanos t) { q.enqueue(fake::make_packet(pool, arp, virtio_net_hdr{}, t), t); };
  control(11 * kMs);
  q.enqueue(udp4(pool, 64, 12 * kMs, 1), 12 * kMs);  // held until 20 ms: the ARP frame takes no room
  control(13 * kMs);
  EXPECT_EQ(q.next_event(), 11 * kMs);
  q.dequeue_ready(13 * kMs, out);
  ASSERT_EQ(out.got.size(), 2u);
  EXPECT_EQ(out.got[0].frame()[13], 0x06);
  EXPECT_EQ(out.got[1].release, 13 * kMs);
  q.enqueue(udp4(pool, 64, 14 * kMs, 2), 14 * kMs);  // the hold queue is full: dropped
  q.dequeue_ready(20 * kMs, out);
  ASSERT_EQ(out.got.size(), 3u);
  EXPECT_EQ(ip_id_of(out.got[2]), 1);
  EXPECT_EQ(out.got[2].release, 20 * kMs);
  EXPECT_EQ(q.stats().dropped_packets, 1u);
  EXPECT_TRUE(Conserved(q.stats()));
}

// A packet read late (its kernel stamp up to 1 s behind) is judged by the state at its stamp, even after the
// queue has been asked to release at a later time.
TEST(OnOffQueue, LateReadPacketsAreJudgedByTheirArrival) {
  BufferPool pool;
  OnOffQueue q(constant(10 * kMs, 10 * kMs), OnOffQueue::OffMode::kDrop, {}, pool);
  CollectSink out;
  q.dequeue_ready(505 * kMs, out);
  q.enqueue(udp4(pool, 64, 5 * kMs), 505 * kMs);  // on at 5 ms, off at 505 ms
  EXPECT_EQ(q.stats().dropped_packets, 0u);
}

}  // namespace
}  // namespace tracemod
