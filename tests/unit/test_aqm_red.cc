// RED: its regions, ECN marking, idle aging, and its arguments.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "disciplines/aqm_red.hh"
#include "disciplines/ecn.hh"
#include "disciplines/queue_factory.hh"
#include "fake.hh"
#include "util/error.hh"

namespace tracemod {
namespace {

constexpr Nanos kMs = kMillisecond;

struct Drops : DropSink {
  void dropped(QueuedPacket&& p, Nanos, DropCause) override { packets += p.segments; }
  uint64_t packets = 0;
};

// A 1500-byte IPv4 packet, ECN field ECN.
QueuedPacket packet(BufferPool& pool, Nanos t, uint8_t ecn = kNotEct) {
  Packet p = fake::udp4(pool, 1472, t);
  uint8_t* ip = p.frame() + kEthernetHeaderSize;
  ip[1] = ecn;
  fake::wr16(ip + 10, 0);
  fake::wr16(ip + 10, fake::inet_checksum(ip, 20));
  return QueuedPacket{std::move(p), t, 1500, 1};
}

RedParams params(double min, double max, double probability, double wq = 1, bool gentle = false, bool ecn = false) {
  RedParams r;
  r.limits.packets = 1000;
  r.min = min, r.max = max, r.probability = probability, r.wq = wq, r.gentle = gentle, r.ecn = ecn;
  return r;
}

// Holds the queue at SIZE packets (wq=1: the average is the size) and offers N arrivals, each followed by a
// departure; returns how many were dropped.
uint64_t offered(RedQueue& q, BufferPool& pool, int size, int n, uint8_t ecn = kNotEct) {
  Drops drops;
  while (static_cast<int>(q.packets()) < size) q.enqueue(packet(pool, 0), 0, drops);  // RED may drop some
  const uint64_t before = drops.packets;
  for (int i = 0; i < n; ++i) {
    q.enqueue(packet(pool, i, ecn), i, drops);
    QueuedPacket out;
    if (static_cast<int>(q.packets()) > size) q.dequeue(out, i, drops);
  }
  return drops.packets - before;
}

std::string error_of(const std::string& args) {
  try {
    make_queue_discipline("--uplink-queue-args", "red", args, RandomStream(1, 0));
  } catch (const UsageError& e) {
    return e.what();
  }
  return "(accepted)";
}

TEST(Red, BelowMinNothing) {
  BufferPool pool;
  RedQueue q(params(20, 60, 0.1), RandomStream(1, 0));
  EXPECT_EQ(offered(q, pool, 19, 5000), 0u);
}

TEST(Red, AboveMaxEverything) {
  BufferPool pool;
  RedQueue q(params(20, 60, 0.1), RandomStream(1, 0));
  EXPECT_EQ(offered(q, pool, 60, 500), 500u);
}

// Between min and max, with count spreading the drops out (pa = pb/(1 - count*pb), count reset to 0 by a drop and
// raised before each decision), the gap between drops is uniform on 1..1/pb-1. pb = 0.1 * (40-20)/(60-20) = 0.05
// here; 5 sigma of a renewal count whose gaps have that uniform's mean and SD.
TEST(Red, BetweenMinAndMaxTheSpreadOutProbability) {
  BufferPool pool;
  RedQueue q(params(20, 60, 0.1), RandomStream(2, 0));
  const int n = 200000;
  const double pb = 0.05, gap = 1 / (2 * pb), gap_sd = std::sqrt((std::pow(1 / pb - 1, 2) - 1) / 12);
  const double drops = n / gap, sigma = drops * gap_sd / gap / std::sqrt(drops);
  EXPECT_NEAR(static_cast<double>(offered(q, pool, 40, n)), drops, 5 * sigma);
}

// Gentle: above max, pb rises from probability to 1 at twice max instead of jumping to 1 (where plain RED drops
// every arrival). At avg 66, pb = 0.1 + 0.9 * 6/60 = 0.19, spread out by count: the gap X between drops has
// P(X > n) = prod_{i<=n} (1 - pa_i), pa_i = pb/(1 - i*pb); 5 sigma of the renewal count.
TEST(Red, GentleRisesFromProbabilityToOneBetweenMaxAndTwiceMax) {
  BufferPool pool;
  RedQueue q(params(20, 60, 0.1, 1, true), RandomStream(3, 0));
  const int n = 100000;
  const double pb = 0.19;
  double survive = 1, mean = 0, squares = 0;
  for (int k = 1; survive > 0; ++k) {
    const double pa = 1 - k * pb <= 0 ? 1 : std::min(1.0, pb / (1 - k * pb));
    mean += k * survive * pa, squares += k * k * survive * pa;
    survive *= 1 - pa;
  }
  const double drops = n / mean, sigma = std::sqrt(drops) * std::sqrt(squares - mean * mean) / mean;
  EXPECT_NEAR(static_cast<double>(offered(q, pool, 66, n)), drops, 5 * sigma);
}

// With ECN, what RED picks is marked if it can be, dropped if not; the hard limit drops everything.
TEST(Red, EcnMarksEctPacketsInsteadOfDroppingThem) {
  BufferPool pool;
  RedQueue q(params(20, 60, 0.1, 1, false, true), RandomStream(4, 0));
  EXPECT_EQ(offered(q, pool, 60, 300, kEct0), 0u);
  EXPECT_EQ(q.marks(), 300u);
  RedQueue plain(params(20, 60, 0.1, 1, false, true), RandomStream(4, 0));
  EXPECT_EQ(offered(plain, pool, 60, 300, kNotEct), 300u);
  EXPECT_EQ(plain.marks(), 0u);
  EXPECT_GE(plain.unmarkable(), 300u);  // and those dropped while the queue filled
  RedParams tight = params(2, 4, 0.1, 1, false, true);
  tight.limits.packets = 5;
  RedQueue limited(tight, RandomStream(4, 0));
  Drops drops;
  for (int i = 0; i < 8; ++i) limited.enqueue(packet(pool, 0, kEct1), 0, drops);
  EXPECT_EQ(limited.packets(), 5u);
  EXPECT_EQ(drops.packets, 3u);
  QueuedPacket out;
  ASSERT_TRUE(limited.dequeue(out, 0, drops));
  EXPECT_EQ(ecn_field(out.packet), kEct1);  // the first arrivals found the average below min
  while (limited.dequeue(out, 0, drops)) {
  }
  EXPECT_EQ(ecn_field(out.packet), kCe);
}

// The average ages while the queue is empty: after an idle spell RED forgets a past standing queue.
TEST(Red, AverageDecaysWhileIdle) {
  BufferPool pool;
  RedQueue q(params(20, 60, 0.1, 0.01), RandomStream(5, 0));
  Drops drops;
  for (int i = 0; i < 2000; ++i) {  // a standing queue of 50 packets, served every 1 ms
    q.enqueue(packet(pool, i * kMs), i * kMs, drops);
    QueuedPacket out;
    if (q.packets() > 50) q.dequeue(out, i * kMs, drops);
  }
  EXPECT_GT(q.average(), 30);
  QueuedPacket out;
  const Nanos t = 2000 * kMs;
  while (q.dequeue(out, t, drops)) {
  }
  q.enqueue(packet(pool, t + 1000 * kMs), t + 1000 * kMs, drops);  // 1 s idle: 1000 departure times
  EXPECT_LT(q.average(), 0.01);
}

// An arrival dropped into an empty queue (the average still above max after a short idle spell) does not end
// the idle period: a flow that backs off finds the average aged by the whole of its silence.
TEST(Red, DroppedArrivalsDoNotStopTheAveragesAging) {
  BufferPool pool;
  RedQueue q(params(20, 60, 0.1, 0.01), RandomStream(7, 0));
  Drops drops;
  for (int i = 0; i < 5000; ++i) {  // a standing queue of 100, served every 1 ms: the average passes max
    q.enqueue(packet(pool, i * kMs), i * kMs, drops);
    QueuedPacket out;
    if (q.packets() > 100) q.dequeue(out, i * kMs, drops);
  }
  ASSERT_GT(q.average(), 60);
  QueuedPacket out;
  Nanos t = 5000 * kMs;
  while (q.dequeue(out, t, drops)) t += kMs;
  const uint64_t before = drops.packets;
  q.enqueue(packet(pool, t + 2 * kMs), t + 2 * kMs, drops);  // 2 ms later: still above max, dropped
  EXPECT_EQ(drops.packets, before + 1);
  EXPECT_EQ(q.packets(), 0u);
  q.enqueue(packet(pool, t + 1000 * kMs), t + 1000 * kMs, drops);  // a second later (an RTO): accepted
  EXPECT_EQ(q.packets(), 1u);
  EXPECT_LT(q.average(), 1);
}

TEST(Red, TakesGsoFramesWholeOnlyWhenNoDecisionCanFallOnThem) {
  BufferPool pool;
  RedQueue q(params(20, 60, 0.1, 0.002), RandomStream(6, 0));
  Packet frame = fake::tcp_gso(pool, false, 1448, 1448 * 10, 0);
  QueuedPacket whole{std::move(frame), 0, 10 * 1488, 10};
  EXPECT_TRUE(q.takes_whole(whole));
  Drops drops;
  for (int i = 0; i < 15; ++i) q.enqueue(packet(pool, 0), 0, drops);
  EXPECT_FALSE(q.takes_whole(whole));  // 15 + 10 would reach min
}

TEST(Red, Arguments) {
  const auto describe = [](const std::string& args) {
    return make_queue_discipline("--uplink-queue-args", "red", args, RandomStream(1, 0))->describe();
  };
  EXPECT_EQ(describe("packets=100,min=20,max=60"), "red packets=100 min=20 max=60 probability=0.02 wq=0.002");
  EXPECT_EQ(describe("bytes=150000, min=30000, max=90000, probability=10%, wq=0.01, gentle=1, ecn=1"),
            "red bytes=150000 min=30000 max=90000 probability=0.1 wq=0.01 gentle=1 ecn=1");
  EXPECT_EQ(error_of("min=20,max=60"),
            "--uplink-queue-args: red needs a limit: packets=N and/or bytes=N above 0 (e.g. packets=100)");
  EXPECT_EQ(error_of("packets=100,bytes=1000,min=1,max=2"),
            "--uplink-queue-args: red takes one hard limit, packets=N or bytes=N, whose unit min= and max= share");
  EXPECT_EQ(error_of("packets=100,min=20"),
            "--uplink-queue-args: red needs min=N and max=N (e.g. packets=100,min=20,max=60)");
  EXPECT_EQ(error_of("packets=100,min=60,max=20"), "--uplink-queue-args: red needs min < max <= the hard limit (100)");
  EXPECT_EQ(error_of("packets=100,min=20,max=200"), "--uplink-queue-args: red needs min < max <= the hard limit (100)");
  EXPECT_EQ(error_of("packets=100,min=20,max=60,ecn=yes"),
            "--uplink-queue-args: bad value 'yes' for ecn (expected 0 or 1)");
  EXPECT_EQ(error_of("packets=100,min=20,max=60,probability=0"),
            "--uplink-queue-args: bad value '0' for probability (expected a probability above 0, e.g. 0.02 or 2%)");
  EXPECT_NE(error_of("packets=100,min=20,max=60,wq=2").find("invalid --uplink-queue-args (red wq=) '2'"),
            std::string::npos);
  EXPECT_EQ(error_of("packets=100,min=2.5,max=60"),
            "invalid --uplink-queue-args (red min=) '2.5': expected a whole number of packets (e.g. 100 or 100pkts)");
  EXPECT_EQ(error_of("packets=100,min=20,max=60kB"),
            "invalid --uplink-queue-args (red max=) '60kB': expected a whole number of packets (e.g. 100 or 100pkts)");
  // min= and max= take the hard limit's unit, bare (Mahimahi's) or spelled out.
  EXPECT_EQ(describe("packets=100pkts,min=20pkts,max=60"), "red packets=100 min=20 max=60 probability=0.02 wq=0.002");
  EXPECT_EQ(describe("bytes=150kB,min=30kB,max=90000B"),
            "red bytes=150000 min=30000 max=90000 probability=0.02 wq=0.002");
  EXPECT_EQ(error_of("packets=100,min=20,max=60,target=5"),
            "--uplink-queue-args: unknown key 'target' for red (expected packets, bytes, min, max, probability, wq, "
            "gentle, ecn)");
}

}  // namespace
}  // namespace tracemod
