// tm-modulate's link with a fake clock: each packet's times follow Noble's model exactly (bottleneck S*Vb in
// FIFO order, then F + S*Vr, loss after the bottleneck), changes apply at their instant, nothing reorders, drops
// are reported with the real packet at the model's instant, and a shared medium serves both directions from
// one queue.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "fake.hh"
#include "modulate/modulated_link.hh"

namespace tracemod::modulate {
namespace {

using fake::CollectSink;
using fake::Conserved;
using fake::ip_id_of;

constexpr Nanos kMs = kMillisecond, kUs = 1000;

// Drops as the observer sees them: (IPv4 ID, when).
class Drops : public DropObserver {
 public:
  void dropped(const Packet& p, Nanos now) override { seen.emplace_back(ip_id_of(p), now); }
  std::vector<std::pair<uint16_t, Nanos>> seen;
};

struct Link {
  BufferPool pool;
  std::shared_ptr<ModulatedLink> link, other;  // other: the downlink's own link when not shared
  std::unique_ptr<Lane> up, down;
  CollectSink out[2];
  Drops drops[2];

  explicit Link(const std::string& schedule, bool shared = false, uint64_t seed = 1, bool once = false,
                std::shared_ptr<ModulateLog> log = nullptr) {
    LinkConfig c;
    c.schedule = std::make_shared<const Schedule>(Schedule::parse(schedule, "test.sched"));
    c.once = once;
    c.seed = seed;
    c.shared = shared;
    c.log = log;
    link = std::make_shared<ModulatedLink>(c, pool);
    other = shared ? link : std::make_shared<ModulatedLink>(c, pool);
    up = std::make_unique<Lane>(link, 0);
    down = std::make_unique<Lane>(other, 1);
    up->set_drop_observer(&drops[0]);
    down->set_drop_observer(&drops[1]);
  }
  Lane& lane(int i) { return i == 0 ? *up : *down; }
  // A packet of IP_BYTES, with ID, whose kernel receive time is T, handed over at T.
  void arrive(int l, uint32_t ip_bytes, Nanos t, uint16_t id = 0) {
    lane(l).enqueue(fake::udp4(pool, ip_bytes - 28, t, id), t);
  }
  // Runs lane L to T; returns the release times of all it has let out so far.
  std::vector<Nanos> run(int l, Nanos t) {
    lane(l).dequeue_ready(t, out[l]);
    std::vector<Nanos> r;
    for (const Packet& p : out[l].got) r.push_back(p.release);
    return r;
  }
};

TEST(ModulateLink, EachPacketFollowsTheModel) {
  // Vb = 8 us/B (1 Mbit/s), Vr = 1 us/B (8 Mbit/s), F = 10 ms.
  Link k("1s delay=10ms rate=1mbit residual=8mbit\n");
  k.arrive(0, 1000, 0, 1);       // served 0..8 ms, then 10 ms + 1 ms: leaves at 19 ms
  k.arrive(0, 500, 1 * kMs, 2);  // waits until 8 ms, served until 12 ms, leaves at 12 + 10 + 0.5 ms
  EXPECT_EQ(k.up->next_event(), 19 * kMs);
  EXPECT_EQ(k.run(0, 19 * kMs - 1), std::vector<Nanos>{});
  EXPECT_EQ(k.run(0, 19 * kMs), std::vector<Nanos>{19 * kMs});
  EXPECT_EQ(k.up->next_event(), 22500 * kUs);
  EXPECT_EQ(k.run(0, 30 * kMs), (std::vector<Nanos>{19 * kMs, 22500 * kUs}));
  EXPECT_EQ(ip_id_of(k.out[0].got[1]), 2);
  EXPECT_EQ(k.up->next_event(), kNever);
  EXPECT_TRUE(Conserved(k.up->stats()));
  EXPECT_EQ(k.up->stats().out_packets, 2u);
}

TEST(ModulateLink, ThePacketInServiceWhenTheRateChangesFinishesAtTheNewRate) {
  // 1500 bytes arriving at 9 ms: 125 served at 1 Mbit/s, 1375 at 2 Mbit/s: the bottleneck is done at 15.5 ms,
  // in the second state, whose F (20 ms) it then takes.
  Link k("10ms rate=1mbit delay=5\n10ms rate=2mbit delay=20\n");
  k.arrive(0, 1500, 9 * kMs);
  EXPECT_EQ(k.run(0, 100 * kMs), std::vector<Nanos>{35500 * kUs});
}

TEST(ModulateLink, ChangesHappenAtTheirInstantsAndTheScheduleLoops) {
  Link k("10ms delay=1\n20ms delay=3\n");
  for (Nanos t : {0 * kMs, 9 * kMs, 10 * kMs, 29 * kMs, 30 * kMs, 45 * kMs}) k.arrive(0, 100, t);
  // The one at 30 ms starts the second loop (F = 1 ms) but leaves behind the one before it.
  EXPECT_EQ(k.run(0, 100 * kMs), (std::vector<Nanos>{1 * kMs, 10 * kMs, 13 * kMs, 32 * kMs, 32 * kMs, 48 * kMs}));
}

TEST(ModulateLink, APacketReadLateIsServedFromItsArrival) {
  Link k("1s delay=20\n");
  k.run(0, 10 * kMs);  // the link has been asked for its releases up to 10 ms
  k.up->enqueue(fake::udp4(k.pool, 100, 5 * kMs, 1), 10500 * kUs);  // received at 5 ms, read at 10.5 ms
  k.up->enqueue(fake::udp4(k.pool, 100, 4 * kMs, 2), 10500 * kUs);  // stamped before it: served after it
  EXPECT_EQ(k.run(0, 100 * kMs), (std::vector<Nanos>{25 * kMs, 25 * kMs}));
}

TEST(ModulateLink, ALatencyDropReordersNothing) {
  // The packet after the change would leave at 12 ms; the one before leaves at 59 ms, so it waits for it.
  Link k("10ms delay=50\n10ms delay=1\n");
  k.arrive(0, 100, 9 * kMs, 1);
  k.arrive(0, 100, 11 * kMs, 2);
  EXPECT_EQ(k.run(0, 100 * kMs), (std::vector<Nanos>{59 * kMs, 59 * kMs}));
  EXPECT_EQ(ip_id_of(k.out[0].got[0]), 1);
}

TEST(ModulateLink, LossHappensAfterTheBottleneckAndIsReportedThen) {
  Link k("1s rate=1mbit loss=1\n");
  k.arrive(0, 1000, 0, 1);
  k.arrive(0, 1000, 0, 2);  // waits for the first, lost or not
  EXPECT_EQ(k.up->next_event(), 8 * kMs);
  EXPECT_EQ(k.run(0, 8 * kMs - 1), std::vector<Nanos>{});
  EXPECT_TRUE(k.drops[0].seen.empty());
  k.run(0, 100 * kMs);
  ASSERT_EQ(k.drops[0].seen.size(), 2u);
  EXPECT_EQ(k.drops[0].seen[0], std::make_pair(uint16_t{1}, 8 * kMs));
  EXPECT_EQ(k.drops[0].seen[1], std::make_pair(uint16_t{2}, 16 * kMs));
  EXPECT_EQ(k.up->stats().dropped_packets, 2u);
  EXPECT_TRUE(Conserved(k.up->stats()));
}

TEST(ModulateLink, DropsAreReportedInTimeOrder) {
  Link k("1s rate=1mbit queue=1pkts loss=1\n");
  k.arrive(0, 1000, 0, 1);        // served until 8 ms, then lost
  k.arrive(0, 1000, 1 * kMs, 2);  // waits; served 8..16 ms, lost
  k.arrive(0, 1000, 2 * kMs, 3);  // the queue is full: refused at 2 ms
  k.run(0, 100 * kMs);
  EXPECT_EQ(k.drops[0].seen, (std::vector<std::pair<uint16_t, Nanos>>{{3, 2 * kMs}, {1, 8 * kMs}, {2, 16 * kMs}}));
  EXPECT_TRUE(Conserved(k.up->stats()));
}

// The IDs of the packets a lane lost among N sent 1 ms apart through a lossy state.
std::vector<uint16_t> lost_ids(Link& k, int lane, int n) {
  for (int i = 0; i < n; ++i) k.arrive(lane, 100, i * kMs, static_cast<uint16_t>(i));
  k.run(lane, (n + 10) * kMs);
  std::vector<uint16_t> ids;
  for (auto [id, t] : k.drops[lane].seen) ids.push_back(id);
  return ids;
}

TEST(ModulateLink, LossFollowsTheStatesModelAndTheSeed) {
  constexpr int kN = 20000;
  Link a("1h loss=10%\n", false, 7), b("1h loss=10%\n", false, 7), c("1h loss=10%\n", false, 8);
  const auto lost = lost_ids(a, 0, kN);
  // Binomial: mean 2000, SD 42; 5 SD either way.
  EXPECT_NEAR(static_cast<double>(lost.size()), 0.1 * kN, 5 * std::sqrt(kN * 0.1 * 0.9));
  EXPECT_EQ(lost_ids(b, 0, kN), lost);  // the same seed, the same drops
  EXPECT_NE(lost_ids(c, 0, kN), lost);
  EXPECT_NE(lost_ids(a, 1, kN), lost);  // the other direction has its own stream
}

TEST(ModulateLink, EachStateHasItsOwnLossAndALoopDoesNotRepeatTheLast) {
  Link k("100ms loss=0\n100ms loss=50%\n");
  for (int i = 0; i < 400; ++i) k.arrive(0, 100, i * kMs, static_cast<uint16_t>(i));
  k.run(0, 500 * kMs);
  std::vector<int> first, second;  // offsets into the lossy state, per loop
  for (auto [id, t] : k.drops[0].seen) {
    ASSERT_TRUE((id >= 100 && id < 200) || (id >= 300 && id < 400)) << id;
    (id < 200 ? first : second).push_back(id % 100);
  }
  EXPECT_GT(first.size(), 25u);
  EXPECT_LT(first.size(), 75u);
  EXPECT_NE(first, second);
}

TEST(ModulateLink, OutagesDropOrHold) {
  Link drop("10ms rate=1mbit\n5ms off\n10ms\n"), hold("10ms rate=1mbit\n5ms off=hold\n10ms\n");
  for (Link* k : {&drop, &hold}) {
    k->arrive(0, 250, 9 * kMs, 1);   // half served when the outage begins
    k->arrive(0, 100, 12 * kMs, 2);  // arrives during it
  }
  EXPECT_EQ(drop.run(0, 50 * kMs), std::vector<Nanos>{});
  EXPECT_EQ(drop.drops[0].seen, (std::vector<std::pair<uint16_t, Nanos>>{{1, 10 * kMs}, {2, 12 * kMs}}));
  EXPECT_EQ(hold.run(0, 50 * kMs), (std::vector<Nanos>{16 * kMs, 16800 * kUs}));
  EXPECT_TRUE(hold.drops[0].seen.empty());
  EXPECT_TRUE(Conserved(drop.up->stats()));
}

// ARP and neighbour discovery are not the modulated link's traffic: they leave as they come, neither held by an
// outage nor queued behind the bottleneck's packets, and draw no loss.
TEST(ModulateLink, LinkControlFramesLeaveAsTheyCome) {
  Link k("10ms rate=1mbit loss=1\n50ms off=hold\n10ms\n");
  std::vector<uint8_t> arp(60, 0);
  arp[12] = 0x08, arp[13] = 0x06;
  k.arrive(0, 1000, 1 * kMs, 1);  // served from 1 to 9 ms, then lost
  k.arrive(0, 1000, 2 * kMs, 2);  // waits, is cut by the outage, and is lost too
  k.lane(0).enqueue(fake::make_packet(k.pool, arp, virtio_net_hdr{}, 3 * kMs), 3 * kMs);
  k.lane(0).enqueue(fake::make_packet(k.pool, arp, virtio_net_hdr{}, 30 * kMs), 30 * kMs);  // during the outage
  EXPECT_EQ(k.run(0, 3 * kMs), std::vector<Nanos>{3 * kMs});
  EXPECT_EQ(k.run(0, 30 * kMs), (std::vector<Nanos>{3 * kMs, 30 * kMs}));
  EXPECT_EQ(k.run(0, 100 * kMs).size(), 2u);
  EXPECT_EQ(k.up->stats().dropped_packets, 2u);
  EXPECT_TRUE(Conserved(k.up->stats()));
}

TEST(ModulateLink, AFullQueueDropsTheArrival) {
  Link k("1s rate=1mbit queue=1pkts\n");
  k.arrive(0, 1000, 0, 1);  // in service
  k.arrive(0, 1000, 0, 2);  // waits
  k.arrive(0, 1000, 0, 3);  // dropped at once
  k.run(0, 0);
  EXPECT_EQ(k.drops[0].seen, (std::vector<std::pair<uint16_t, Nanos>>{{3, 0}}));
  EXPECT_EQ(k.run(0, 100 * kMs), (std::vector<Nanos>{8 * kMs, 16 * kMs}));
}

// At 1 bit/s during 1 ns of every 999 hours, a 100-byte packet would leave after some 10^27 ns, past what an
// int64 holds: it is refused at once, as by a full queue, and no time wraps.
TEST(ModulateLink, APacketThatCouldNotLeaveForCenturiesIsRefused) {
  Link k("1ns rate=1bit\n999h off=hold\n");
  k.arrive(0, 100, 0, 1);
  k.arrive(0, 100, 5 * kMs, 2);
  EXPECT_EQ(k.run(0, 10 * kMs), std::vector<Nanos>{});
  EXPECT_EQ(k.drops[0].seen, (std::vector<std::pair<uint16_t, Nanos>>{{1, 0}, {2, 5 * kMs}}));
  EXPECT_TRUE(Conserved(k.up->stats()));
}

// Departures per lane when each lane sends N 1000-byte packets, all at time 0, in alternation.
std::array<std::vector<Nanos>, 2> saturate(Link& k, const std::vector<int>& lanes, int n) {
  for (int i = 0; i < n; ++i)
    for (int l : lanes) k.arrive(l, 1000, 0, static_cast<uint16_t>(i));
  return {k.run(0, 20 * n * kMs), k.run(1, 20 * n * kMs)};
}

TEST(ModulateLink, ASharedMediumHalvesEachDirectionWhenBothAreBusy) {
  Link shared("1h rate=1mbit\n", true), apart("1h rate=1mbit\n", false), alone("1h rate=1mbit\n", true);
  const auto both = saturate(shared, {0, 1}, 10);
  for (int l = 0; l < 2; ++l) {
    ASSERT_EQ(both[l].size(), 10u);
    for (int i = 0; i < 10; ++i) EXPECT_EQ(both[l][i], (2 * i + 1 + l) * 8 * kMs) << l << " " << i;  // interleaved
  }
  const auto separate = saturate(apart, {0, 1}, 10);
  const auto one = saturate(alone, {1}, 10);
  for (int i = 0; i < 10; ++i) {
    EXPECT_EQ(separate[0][i], (i + 1) * 8 * kMs);
    EXPECT_EQ(separate[1][i], (i + 1) * 8 * kMs);
    EXPECT_EQ(one[1][i], (i + 1) * 8 * kMs);  // the whole rate for a direction alone
  }
  EXPECT_TRUE(one[0].empty());
  EXPECT_TRUE(Conserved(shared.up->stats()));
  EXPECT_TRUE(Conserved(shared.down->stats()));
  EXPECT_EQ(shared.down->stats().out_packets, 10u);
}

TEST(ModulateLink, ASharedMediumTakesArrivalsInTheOrderTheKernelReceivedThem) {
  // The ferry reads the uplink's batch (received at 10, 30, 50 us), then the downlink's (0, 20, 40 us). In
  // arrival order: the downlink's first is served, the next two wait, the rest find the queue full.
  Link k("1h rate=1mbit queue=2pkts\n", true);
  for (Nanos t : {10, 30, 50})
    k.up->enqueue(fake::udp4(k.pool, 1000 - 28, t * kUs, static_cast<uint16_t>(t)), 60 * kUs);
  for (Nanos t : {0, 20, 40})
    k.down->enqueue(fake::udp4(k.pool, 1000 - 28, t * kUs, static_cast<uint16_t>(t)), 60 * kUs);
  EXPECT_EQ(k.up->next_event(), 0);  // due at once: the arrivals are served when both lanes have been read
  k.run(0, 60 * kUs);
  EXPECT_EQ(k.drops[0].seen, (std::vector<std::pair<uint16_t, Nanos>>{{30, 30 * kUs}, {50, 50 * kUs}}));
  EXPECT_EQ(k.run(1, 100 * kMs), (std::vector<Nanos>{8 * kMs, 24 * kMs}));
  EXPECT_EQ(k.drops[1].seen, (std::vector<std::pair<uint16_t, Nanos>>{{40, 40 * kUs}}));
  EXPECT_EQ(k.run(0, 100 * kMs), std::vector<Nanos>{16 * kMs});
}

TEST(ModulateLink, AGsoFrameIsServedAsItsWirePacketsBehindABottleneck) {
  Link slow("1s rate=12mbit\n"), fast("1s delay=1\n");
  for (Link* k : {&slow, &fast}) k->up->enqueue(fake::tcp_gso(k->pool, false, 1460, 4 * 1460, 0), 0);
  // 4 segments of 1500 IP bytes, 1 ms each at 12 Mbit/s.
  EXPECT_EQ(slow.run(0, 10 * kMs), (std::vector<Nanos>{1 * kMs, 2 * kMs, 3 * kMs, 4 * kMs}));
  EXPECT_EQ(fast.run(0, 10 * kMs), std::vector<Nanos>{1 * kMs});  // whole: nothing could tell
  EXPECT_EQ(fast.up->stats().out_packets, 4u);
  EXPECT_TRUE(Conserved(slow.up->stats()));
}

TEST(ModulateLink, APlayedOnceScheduleEndsTheLink) {
  Link k("10ms delay=1\n", false, 1, true);
  EXPECT_FALSE(k.up->finished());
  EXPECT_EQ(k.up->next_event(), 10 * kMs);  // wakes to see the end
  k.arrive(0, 100, 20 * kMs, 9);
  k.run(0, 20 * kMs);
  EXPECT_TRUE(k.up->finished());
  EXPECT_EQ(k.drops[0].seen, (std::vector<std::pair<uint16_t, Nanos>>{{9, 20 * kMs}}));
}

TEST(ModulateLink, LatenessIsMeasured) {
  Link k("1s delay=1\n");
  k.arrive(0, 100, 0);
  k.run(0, 1 * kMs + 30 * kUs);
  EXPECT_EQ(k.link->lateness(0).count(), 1u);
  EXPECT_EQ(k.link->lateness(0).quantile_us(0.5), 30u);
  EXPECT_NE(k.up->summary().find("schedule test.sched: 1 states, 1 s looping; departures late by p50 30 us"),
            std::string::npos)
      << k.up->summary();
}

TEST(ModulateLink, TheLogGivesStatesAndEveryPacketsTimes) {
  char path[] = "/tmp/tm-modulate-log-XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  close(fd);
  {
    auto log = std::make_shared<ModulateLog>(path);
    log->header({"test"}, 0);
    Link k("10ms rate=1mbit delay=2 queue=1pkts\n20ms loss=1\n", true, 1, false, log);
    k.arrive(0, 1000, 1 * kMs);
    k.arrive(1, 1000, 1 * kMs);
    k.arrive(0, 1000, 1 * kMs);  // the queue holds one
    k.arrive(0, 1000, 9 * kMs);  // served 17..25 ms, in the lossy state (as the second, from 9 to 17 ms)
    k.run(0, 40 * kMs);
    k.run(1, 40 * kMs);
  }
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  unlink(path);
  EXPECT_EQ(text.str(),
            "# test\n"
            "# base timestamp: 0.000000\n"
            "0.000000 both state 1 line=1 F=2 Vb=8 Vr=0 L=0 queue=1pkts off=no\n"
            "1.000000 up 1000 start=1.000000 end=9.000000 release=11.000000\n"
            "1.000000 down 1000 start=9.000000 end=17.000000 lost=17.000000\n"
            "1.000000 up 1000 dropped=1.000000 why=queue\n"
            "9.000000 up 1000 start=17.000000 end=25.000000 lost=25.000000\n"
            "10.000000 both state 2 line=2 F=2 Vb=8 Vr=0 L=1 queue=1pkts off=no\n"
            "30.000000 both state 1 line=1 F=2 Vb=8 Vr=0 L=0 queue=1pkts off=no\n"
            "40.000000 both state 2 line=2 F=2 Vb=8 Vr=0 L=1 queue=1pkts off=no\n");
}

}  // namespace
}  // namespace tracemod::modulate
