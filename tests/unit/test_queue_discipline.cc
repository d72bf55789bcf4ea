#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "disciplines/aqm_codel.hh"
#include "disciplines/aqm_pie.hh"
#include "disciplines/ecn.hh"
#include "disciplines/queue_factory.hh"
#include "fake.hh"
#include "util/error.hh"

namespace tracemod {
namespace {

constexpr Nanos kMs = kMillisecond;
constexpr Nanos kUs = 1000;
constexpr uint32_t kMss = 1448, kSegmentIpBytes = 40 + kMss;  // IPv4 + TCP headers, then one MSS

// Remembers what a discipline drops.
struct Drops : DropSink {
  void dropped(QueuedPacket&& p, Nanos now, DropCause cause) override {
    packets += p.segments;
    causes.push_back(cause);
    times.push_back(now);
    ids.push_back(fake::ip_id_of(p.packet));
  }
  uint64_t packets = 0;
  std::vector<DropCause> causes;  // what tm-top tells apart: a limit, or the AQM's choice
  std::vector<Nanos> times;
  std::vector<uint16_t> ids;
};

// A plain IPv4/UDP packet of IP_BYTES bytes, serial number ID, arriving at T.
QueuedPacket plain(BufferPool& pool, uint32_t ip_bytes, Nanos t, uint16_t id = 0) {
  return QueuedPacket{fake::udp4(pool, ip_bytes - 28, t, id), t, ip_bytes, 1};
}

// A TCP GSO frame of SEGMENTS full-sized segments arriving at T (frame bytes built once per size).
QueuedPacket gso(BufferPool& pool, uint32_t segments, Nanos t) {
  static std::map<uint32_t, std::pair<std::vector<uint8_t>, virtio_net_hdr>> built;
  auto it = built.find(segments);
  if (it == built.end()) {
    fake::FrameSpec s;
    s.proto = fake::kTcp;
    s.gso_size = kMss;
    s.payload = kMss * segments;
    it = built.emplace(segments, std::make_pair(fake::frame_bytes(s), fake::vnet_for(s))).first;
  }
  Packet p = fake::make_packet(pool, it->second.first, it->second.second, t);
  EXPECT_EQ(p.segments(), segments);
  return QueuedPacket{std::move(p), t, segments * kSegmentIpBytes, segments};
}

std::unique_ptr<QueueDiscipline> make(const std::string& name, const std::string& args, uint64_t seed = 1,
                                      uint64_t memory = QueueDiscipline::kMemoryLimit) {
  return make_queue_discipline("--uplink-queue-args", name, args, RandomStream(seed, 0), memory);
}

std::string error_of(const std::string& name, const std::string& args) {
  try {
    make(name, args);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "(accepted)";
}

// Serial numbers of everything the queue hands out at NOW until it is empty.
std::vector<uint16_t> drain(QueueDiscipline& q, Nanos now, DropSink& drops) {
  std::vector<uint16_t> ids;
  QueuedPacket out;
  while (q.dequeue(out, now, drops)) ids.push_back(fake::ip_id_of(out.packet));
  return ids;
}

// --- Names and arguments ---

TEST(QueueDisciplineArgs, DescribesEffectiveParameters) {
  EXPECT_EQ(make("infinite", "")->describe(), "infinite");
  EXPECT_EQ(make("droptail", "packets=100")->describe(), "droptail packets=100");
  EXPECT_EQ(make("droptail", "bytes=150000")->describe(), "droptail bytes=150000");
  EXPECT_EQ(make("droptail", "bytes=150000, packets=10")->describe(), "droptail packets=10 bytes=150000");
  EXPECT_EQ(make("drophead", "packets=0,bytes=3000")->describe(), "drophead bytes=3000");
}

TEST(QueueDisciplineArgs, UnknownQueueNamesTheQueueOption) {
  const std::string expected = "' (expected infinite, droptail, drophead, codel, pie or red)";
  EXPECT_EQ(error_of("fifo", ""), "--uplink-queue: unknown queue 'fifo" + expected);
  EXPECT_EQ(error_of("DropTail", "packets=1"), "--uplink-queue: unknown queue 'DropTail" + expected);
}

TEST(QueueDisciplineArgs, UnknownRepeatedAndMalformedKeys) {
  EXPECT_EQ(error_of("droptail", "pakets=100"),
            "--uplink-queue-args: unknown key 'pakets' for droptail (expected packets, bytes)");
  EXPECT_EQ(error_of("drophead", "packets=1,target=5"),
            "--uplink-queue-args: unknown key 'target' for drophead (expected packets, bytes)");
  EXPECT_EQ(error_of("droptail", "packets=1,packets=2"), "--uplink-queue-args: key 'packets' given twice");
  EXPECT_EQ(error_of("droptail", "packets"),
            "--uplink-queue-args: 'packets' is not KEY=VALUE (keys for droptail: packets, bytes)");
  EXPECT_EQ(error_of("droptail", "packets=1,"),
            "--uplink-queue-args: '' is not KEY=VALUE (keys for droptail: packets, bytes)");
  EXPECT_EQ(error_of("droptail", "=5"),
            "--uplink-queue-args: '=5' is not KEY=VALUE (keys for droptail: packets, bytes)");
  EXPECT_EQ(error_of("infinite", "packets=5"), "--uplink-queue-args: infinite takes no arguments (got 'packets=5')");
}

TEST(QueueDisciplineArgs, LimitsAreRequiredAndWholeNumbers) {
  const std::string need = " needs a limit: packets=N and/or bytes=N above 0 (e.g. packets=100)";
  EXPECT_EQ(error_of("droptail", ""), "--uplink-queue-args: droptail" + need);
  EXPECT_EQ(error_of("drophead", "packets=0"), "--uplink-queue-args: drophead" + need);
  const std::string whole = "': expected a whole number of packets (e.g. 100 or 100pkts)";
  for (const char* v : {"abc", "-5", "1.5", "", "1e3", "+3", "10 0", "100kB", "100 pkts"})
    EXPECT_EQ(error_of("droptail", std::string("packets=") + v),
              std::string("invalid --uplink-queue-args (droptail packets=) '") + v + whole)
        << v;
  EXPECT_EQ(error_of("droptail", "packets=4611686018427387905"),
            "invalid --uplink-queue-args (droptail packets=) '4611686018427387905': a queue limit must be at most "
            "2^62");
  EXPECT_EQ(error_of("droptail", "bytes=x"),
            "invalid --uplink-queue-args (droptail bytes=) 'x': expected a whole number of bytes (e.g. 150000, 150000B "
            "or 150kB)");
  EXPECT_EQ(error_of("droptail", "bytes=7pkts"),
            "invalid --uplink-queue-args (droptail bytes=) '7pkts': expected a whole number of bytes (e.g. 150000, "
            "150000B or 150kB)");
}

// Limits read as tm-onoff's --hold-* and tm-modulate's queue= read them: Mahimahi's bare numbers, or with a unit
// of the key's kind.
TEST(QueueDisciplineArgs, LimitsTakeTheSharedGrammar) {
  EXPECT_EQ(make("droptail", "packets=1000pkts")->describe(), "droptail packets=1000");
  EXPECT_EQ(make("droptail", "packets=7PACKETS, bytes=150kB")->describe(), "droptail packets=7 bytes=150000");
  EXPECT_EQ(make("drophead", "bytes=64KiB")->describe(), "drophead bytes=65536");
  EXPECT_EQ(make("drophead", "bytes=150000B")->describe(), "drophead bytes=150000");
  EXPECT_EQ(make("codel", "target=5,interval=100,bytes=1MB")->describe(), "codel target=5 interval=100 bytes=1000000");
}

TEST(QueueDisciplineArgs, ErrorsNameTheDownlinkOptionToo) {
  try {
    make_queue_discipline("--downlink-queue-args", "sfq", "", RandomStream(1, 0));
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("--downlink-queue: unknown queue 'sfq'", 0), 0u) << e.what();
  }
}

// --- infinite, droptail, drophead ---

// Five arrivals at a queue of three: droptail drops the last two, drophead the first two.
TEST(QueueDiscipline, PacketLimitDropsTheArrivalsOrTheOldest) {
  struct Case {
    const char* name;
    std::vector<uint16_t> dropped, served;
  };
  for (const Case& c : {Case{"droptail", {4, 5}, {1, 2, 3}}, Case{"drophead", {1, 2}, {3, 4, 5}}}) {
    SCOPED_TRACE(c.name);
    BufferPool pool;
    auto q = make(c.name, "packets=3");
    Drops drops;
    for (uint16_t id = 1; id <= 5; ++id) q->enqueue(plain(pool, 1000, id * kMs, id), id * kMs, drops);
    EXPECT_EQ(drops.ids, c.dropped);
    EXPECT_EQ(drops.times, (std::vector<Nanos>{4 * kMs, 5 * kMs}));
    EXPECT_EQ(drops.causes, (std::vector<DropCause>{DropCause::kQueue, DropCause::kQueue}));
    EXPECT_EQ(q->packets(), 3u);
    EXPECT_EQ(q->bytes(), 3000u);
    EXPECT_EQ(drain(*q, 10 * kMs, drops), c.served);
    EXPECT_TRUE(q->empty());
    EXPECT_EQ(q->bytes(), 0u);
  }
}

TEST(QueueDiscipline, DropTailByteLimitCountsIpBytes) {
  BufferPool pool;
  auto q = make("droptail", "bytes=3000");
  Drops drops;
  q->enqueue(plain(pool, 1500, 0, 1), 0, drops);
  q->enqueue(plain(pool, 1000, 0, 2), 0, drops);
  q->enqueue(plain(pool, 600, 0, 3), 0, drops);  // 3100 > 3000: dropped
  q->enqueue(plain(pool, 500, 0, 4), 0, drops);  // exactly 3000: fits
  q->enqueue(plain(pool, 40, 0, 5), 0, drops);
  EXPECT_EQ(drops.ids, (std::vector<uint16_t>{3, 5}));
  EXPECT_EQ(q->bytes(), 3000u);
  EXPECT_EQ(drain(*q, 0, drops), (std::vector<uint16_t>{1, 2, 4}));
}

TEST(QueueDiscipline, DropTailCountsWirePacketsOfGsoFrames) {
  BufferPool pool;
  auto q = make("droptail", "packets=50");
  Drops drops;
  q->enqueue(gso(pool, 44, 0), 0, drops);
  EXPECT_EQ(q->packets(), 44u);
  q->enqueue(gso(pool, 7, 0), 0, drops);  // 51 > 50
  EXPECT_EQ(drops.packets, 7u);
  q->enqueue(gso(pool, 6, 0), 0, drops);
  EXPECT_EQ(q->packets(), 50u);
  EXPECT_EQ(q->bytes(), 50u * kSegmentIpBytes);
}

TEST(QueueDiscipline, DropHeadDropsAsManyAsTheArrivalNeeds) {
  BufferPool pool;
  auto q = make("drophead", "bytes=3000");
  Drops drops;
  for (uint16_t id = 1; id <= 6; ++id) q->enqueue(plain(pool, 500, 0, id), 0, drops);
  EXPECT_TRUE(drops.ids.empty());
  q->enqueue(plain(pool, 1400, 0, 7), 0, drops);  // needs three 500-byte packets gone
  EXPECT_EQ(drops.ids, (std::vector<uint16_t>{1, 2, 3}));
  EXPECT_EQ(q->bytes(), 2900u);
  q->enqueue(plain(pool, 40, 0, 8), 0, drops);
  EXPECT_EQ(drops.ids.size(), 3u);
  EXPECT_EQ(drain(*q, 0, drops), (std::vector<uint16_t>{4, 5, 6, 7, 8}));
}

TEST(QueueDiscipline, DropHeadDropsAnArrivalThatCouldNeverFit) {
  BufferPool pool;
  auto q = make("drophead", "bytes=1000");
  Drops drops;
  q->enqueue(plain(pool, 800, 0, 1), 0, drops);
  q->enqueue(plain(pool, 1200, 0, 2), 0, drops);
  EXPECT_EQ(drops.ids, (std::vector<uint16_t>{2}));
  EXPECT_EQ(drain(*q, 0, drops), (std::vector<uint16_t>{1}));
}

TEST(QueueDiscipline, InfiniteNeverDropsByPolicyButKeepsTheMemoryBound) {
  BufferPool pool;
  const uint64_t small = BufferPool::kClassSizes[0];
  auto q = make("infinite", "", 1, 10 * small);
  Drops drops;
  for (uint16_t id = 1; id <= 12; ++id) q->enqueue(plain(pool, 1500, 0, id), 0, drops);
  EXPECT_EQ(drops.ids, (std::vector<uint16_t>{11, 12}));
  EXPECT_EQ(q->memory(), 10 * small);
  EXPECT_EQ(q->packets(), 10u);
  QueuedPacket out;
  ASSERT_TRUE(q->dequeue(out, 0, drops));
  q->enqueue(plain(pool, 1500, 0, 13), 0, drops);  // room again
  EXPECT_EQ(drops.ids.size(), 2u);

  auto big = make("infinite", "");
  for (uint16_t i = 0; i < 2000; ++i) big->enqueue(plain(pool, 1500, 0, i), 0, drops);
  EXPECT_EQ(big->packets(), 2000u);
  EXPECT_EQ(drops.ids.size(), 2u);
}

TEST(QueueDiscipline, MemoryBoundAppliesToEveryDiscipline) {
  BufferPool pool;
  const uint64_t small = BufferPool::kClassSizes[0];
  for (const char* name : {"droptail", "drophead"}) {
    auto q = make(name, "packets=1000", 1, 4 * small);
    Drops drops;
    for (uint16_t id = 1; id <= 6; ++id) q->enqueue(plain(pool, 100, 0, id), 0, drops);
    EXPECT_EQ(drops.ids, (std::vector<uint16_t>{5, 6})) << name;  // arrivals beyond the bound
  }
}

TEST(QueueDiscipline, TakesWholeOnlyWhatFitsWithoutADrop) {
  BufferPool pool;
  Drops drops;
  auto inf = make("infinite", "");
  EXPECT_TRUE(inf->takes_whole(gso(pool, 44, 0)));
  auto tight = make("infinite", "", 1, BufferPool::kClassSizes[2] - 1);
  EXPECT_FALSE(tight->takes_whole(gso(pool, 44, 0)));  // its 64 KiB buffer alone is over the bound

  for (const char* name : {"droptail", "drophead"}) {
    auto q = make(name, "packets=100,bytes=100000");
    EXPECT_TRUE(q->takes_whole(gso(pool, 44, 0))) << name;
    for (int i = 0; i < 60; ++i) q->enqueue(plain(pool, 1000, 0), 0, drops);
    EXPECT_FALSE(q->takes_whole(gso(pool, 44, 0))) << name;  // 104 packets
    EXPECT_TRUE(q->takes_whole(gso(pool, 26, 0))) << name;   // 86 packets, 60000 + 38688 bytes
    EXPECT_FALSE(q->takes_whole(gso(pool, 27, 0))) << name;  // 100176 bytes
  }
  EXPECT_TRUE(drops.ids.empty());
}

// --- CoDel ---

// Drives a queue on a fixed grid: 1500-byte arrivals and opportunities, with the sojourn time of what leaves.
struct Driver {
  Driver(BufferPool& p, QueueDiscipline& queue) : pool(p), q(queue) {}
  void arrive(Nanos t) {
    QueuedPacket p = plain(pool, 1500, t, id++);
    if (ect) {  // ECT(0), header checksum made right again
      uint8_t* ip = p.packet.frame() + kEthernetHeaderSize;
      ip[1] = kEct0;
      fake::wr16(ip + 10, 0);
      fake::wr16(ip + 10, fake::inet_checksum(ip, 20));
    }
    q.enqueue(std::move(p), t, drops);
    ++in;
  }
  void fill(int n, Nanos t) {
    for (int i = 0; i < n; ++i) arrive(t);
  }
  bool serve(Nanos t) {
    QueuedPacket out_packet;
    if (!q.dequeue(out_packet, t, drops)) return false;
    ++out;
    last_sojourn = t - out_packet.enqueued;
    sojourn_sum += last_sojourn;
    if (ecn_field(out_packet.packet) == kCe) marked_times.push_back(t);
    return true;
  }
  // Steps of STEP in [FROM, TO): an arrival every ARRIVE_EVERY steps (0: none), an opportunity every
  // SERVE_EVERY steps.
  void run(Nanos from, Nanos to, Nanos step, int arrive_every, int serve_every = 1) {
    for (Nanos t = from; t < to; t += step) {
      if (arrive_every && (t / step) % arrive_every == 0) arrive(t);
      if ((t / step) % serve_every == 0) serve(t);
    }
  }
  bool conserved() const { return in == out + drops.packets + q.packets(); }

  BufferPool& pool;
  QueueDiscipline& q;
  Drops drops;
  uint16_t id = 1;
  uint64_t in = 0, out = 0;
  Nanos last_sojourn = 0, sojourn_sum = 0;
  bool ect = false;                 // arrivals are ECT(0)
  std::vector<Nanos> marked_times;  // when packets marked CE left
};

CodelQueue codel(Nanos target = 5 * kMs, Nanos interval = 100 * kMs) {
  return CodelQueue(CodelParams{target, interval, QueueLimits{100000, 0}});
}

// codel and pie take two times, both required, and a limit.
TEST(QueueDisciplineArgs, AqmTimesAreRequiredMilliseconds) {
  struct Case {
    std::string name, first, first_example, second, second_example;
  };
  for (const Case& c :
       {Case{"codel", "target", "5", "interval", "100"}, Case{"pie", "qdelay_ref", "15", "max_burst", "150"}}) {
    SCOPED_TRACE(c.name);
    const std::string first = c.first + "=" + c.first_example, second = c.second + "=" + c.second_example;
    const std::string prefix = "--uplink-queue-args: " + c.name;
    EXPECT_EQ(make(c.name, first + "," + second + ",packets=1000")->describe(),
              c.name + " " + first + " " + second + " packets=1000");
    EXPECT_EQ(make(c.name, c.second + "=0.5, " + c.first + "=0.125, bytes=90000")->describe(),
              c.name + " " + c.first + "=0.125 " + c.second + "=0.5 bytes=90000");
    EXPECT_EQ(error_of(c.name, second + ",packets=10"), prefix + " needs " + c.first + "=MS (e.g. " + first + ")");
    EXPECT_EQ(error_of(c.name, first + ",packets=10"), prefix + " needs " + c.second + "=MS (e.g. " + second + ")");
    EXPECT_EQ(error_of(c.name, first + "," + second),
              prefix + " needs a limit: packets=N and/or bytes=N above 0 (e.g. packets=100)");
    EXPECT_EQ(error_of(c.name, first + "," + second + ",packets=1,limit=5"),
              "--uplink-queue-args: unknown key 'limit' for " + c.name + " (expected " + c.first + ", " + c.second +
                  ", packets, bytes, ecn)");
    // Times read as tm-delay's: bare milliseconds or a unit, rounded up to the nanosecond, above 0, at most 1 h.
    const std::string named = "invalid --uplink-queue-args (" + c.name + " " + c.second + "=) '";
    const std::string syntax =
        "': expected a duration (a unit is optional): ns, us, ms, s, min or h (e.g. 200ms or "
        "1.5s)";
    for (const char* v : {"-1", "abc", ".", "nan", "", "5 ms", "5sec", "5m"})
      EXPECT_EQ(error_of(c.name, first + ",packets=10," + c.second + "=" + v), named + v + syntax) << v;
    EXPECT_EQ(error_of(c.name, first + ",packets=10," + c.second + "=1e3"),
              named + "1e3': an exponent is not allowed: " + syntax.substr(3));
    for (const char* v : {"0", "0.0", "0ms"})
      EXPECT_EQ(error_of(c.name, first + ",packets=10," + c.second + "=" + v),
                named + v + "': shorter than the smallest allowed, 1 ns")
          << v;
    for (const char* v : {"3600001", "3600000.000001", "61min"})
      EXPECT_EQ(error_of(c.name, first + ",packets=10," + c.second + "=" + v),
                named + v + "': longer than the largest allowed, 1 h")
          << v;
    EXPECT_EQ(make(c.name, c.first + "=.5," + c.second + "=3600000,packets=1")->describe(),
              c.name + " " + c.first + "=0.5 " + c.second + "=3600000 packets=1");
    // The same time in any unit; fractions rounded up (0.0000001 ms is 1 ns, not 0).
    for (const char* v : {"5", "5ms", "5000us", "5.", "0.005s", "5000000ns"})
      EXPECT_EQ(make(c.name, c.first + "=" + v + "," + second + ",packets=1")->describe(),
                c.name + " " + c.first + "=5 " + second + " packets=1")
          << v;
    EXPECT_EQ(make(c.name, c.first + "=0.0000001," + second + ",packets=1")->describe(),
              c.name + " " + c.first + "=0.000001 " + second + " packets=1");
    EXPECT_EQ(make(c.name, c.first + "=2.007," + second + ",packets=1")->describe(),
              c.name + " " + c.first + "=2.007 " + second + " packets=1");
  }
  EXPECT_EQ(error_of("codel", "target=5,interval=100,packets=10,qdelay_ref=5"),
            "--uplink-queue-args: unknown key 'qdelay_ref' for codel (expected target, interval, packets, bytes, ecn)");
}

TEST(Codel, NoDropsWhileSojournBelowTarget) {
  BufferPool pool;
  CodelQueue q = codel();
  Driver d(pool, q);
  d.fill(40, 0);  // 40 packets served every 100 us: 4 ms of sojourn
  d.run(100 * kUs, 2000 * kMs, 100 * kUs, 1);
  EXPECT_EQ(d.drops.packets, 0u);
  EXPECT_EQ(d.last_sojourn, 4 * kMs);
  EXPECT_FALSE(q.dropping());
}

TEST(Codel, NoDropsWithAtMostOneMtuQueued) {
  BufferPool pool;
  CodelQueue q = codel();
  Driver d(pool, q);
  for (Nanos t = 0; t < 2000 * kMs; t += 50 * kMs) {  // one packet at a time, each waiting 50 ms
    d.arrive(t);
    EXPECT_TRUE(d.serve(t + 50 * kMs));
  }
  EXPECT_EQ(d.drops.packets, 0u);
}

// A standing queue: 200 packets at once, then one arrival and one opportunity every 100 us. The sojourn of
// what leaves passes 5 ms at 5 ms (the 50th packet), so dropping is allowed from 105 ms on.
TEST(Codel, FirstDropAfterAnIntervalAboveTargetThenIntervalOverSqrtCount) {
  BufferPool pool;
  CodelQueue q = codel();
  Driver d(pool, q);
  d.fill(200, 0);
  d.run(100 * kUs, 104900 * kUs + 1, 100 * kUs, 1);
  EXPECT_TRUE(d.drops.times.empty());
  d.run(105 * kMs, 1000 * kMs, 100 * kUs, 1);
  ASSERT_GE(d.drops.times.size(), 10u);
  EXPECT_EQ(d.drops.times[0], 105 * kMs);
  EXPECT_EQ(d.drops.causes[0], DropCause::kAqm);
  // Each later drop at the first opportunity at or after drop_next, which advances by interval/sqrt(count).
  double next = 105.0 * kMs;
  for (size_t k = 1; k < 10; ++k) {
    next += 100.0 * kMs / std::sqrt(static_cast<double>(k));
    const Nanos due = static_cast<Nanos>(std::ceil(next / (100 * kUs) - 1e-6)) * 100 * kUs;
    EXPECT_EQ(d.drops.times[k], due) << "drop " << k;
  }
  for (size_t k = 2; k < 10; ++k)
    EXPECT_LT(d.drops.times[k] - d.drops.times[k - 1], d.drops.times[k - 1] - d.drops.times[k - 2]);
  EXPECT_TRUE(q.dropping());
  EXPECT_TRUE(d.conserved());
}

TEST(Codel, LeavesDroppingStateWhenSojournFallsBelowTarget) {
  BufferPool pool;
  CodelQueue q = codel();
  Driver d(pool, q);
  d.fill(200, 0);
  d.run(100 * kUs, 400 * kMs, 100 * kUs, 1);
  ASSERT_TRUE(q.dropping());
  // Half the arrival rate: the backlog drains and the sojourn falls below target.
  Nanos t = 400 * kMs;
  for (; q.dropping(); t += 100 * kUs) {
    if ((t / (100 * kUs)) % 2 == 0) d.arrive(t);
    ASSERT_TRUE(d.serve(t));
    ASSERT_LT(t, 2000 * kMs);
  }
  EXPECT_LT(d.last_sojourn, 5 * kMs);
  const size_t drops = d.drops.times.size();
  d.run(t, t + 2000 * kMs, 100 * kUs, 2);
  EXPECT_EQ(d.drops.times.size(), drops);
  EXPECT_TRUE(d.conserved());
}

// Builds a standing queue from T until CoDel has dropped DROPS packets in one dropping state, then drains it.
Nanos episode(Driver& d, CodelQueue& q, Nanos t, uint32_t drops) {
  d.fill(200, t);
  for (; !(q.dropping() && q.count() >= drops); t += 100 * kUs) {
    d.arrive(t);
    d.serve(t);
  }
  while (d.serve(t)) {
  }
  EXPECT_FALSE(q.dropping());
  return t;
}

// After an episode of 6 drops (5 since entering dropping state) and PAUSE of empty queue, a standing queue
// again: CoDel's count at its first drop, and the time to its second.
struct Reentry {
  uint32_t count;
  Nanos gap;
};
Reentry reenter_after(Nanos pause) {
  BufferPool pool;
  CodelQueue q = codel();
  Driver d(pool, q);
  Nanos t = episode(d, q, 0, 6) + pause;
  const size_t before = d.drops.times.size();
  Reentry r{0, 0};
  d.fill(200, t);
  while (d.drops.times.size() < before + 2) {
    t += 100 * kUs;
    d.arrive(t);
    d.serve(t);
    if (d.drops.times.size() == before + 1 && r.count == 0) r.count = q.count();
  }
  r.gap = d.drops.times[before + 1] - d.drops.times[before];
  EXPECT_TRUE(d.conserved());
  return r;
}

TEST(Codel, ReentrySoonResumesFromTheLastDropRate) {
  const Reentry r = reenter_after(10 * kMs);
  EXPECT_EQ(r.count, 5u);
  EXPECT_NEAR(static_cast<double>(r.gap), 100.0 * kMs / std::sqrt(5.0), 100 * kUs);
}

TEST(Codel, ReentryLongAfterStartsCountingAgain) {
  const Reentry r = reenter_after(2000 * kMs);  // more than 16 intervals
  EXPECT_EQ(r.count, 1u);
  EXPECT_EQ(r.gap, 100 * kMs);
}

TEST(Codel, NeverTakesAGsoFrameWhole) {
  BufferPool pool;
  CodelQueue q = codel();
  EXPECT_FALSE(q.takes_whole(gso(pool, 2, 0)));
  EXPECT_FALSE(make("codel", "target=5,interval=100,packets=1000")->takes_whole(gso(pool, 44, 0)));
}

TEST(Codel, LimitsDropArrivals) {
  BufferPool pool;
  auto q = make("codel", "target=5,interval=100,packets=3");
  Drops drops;
  for (uint16_t id = 1; id <= 5; ++id) q->enqueue(plain(pool, 1000, 0, id), 0, drops);
  EXPECT_EQ(drops.ids, (std::vector<uint16_t>{4, 5}));
  EXPECT_EQ(drops.causes, (std::vector<DropCause>{DropCause::kQueue, DropCause::kQueue}));
}

// --- PIE ---

PieQueue pie(uint64_t seed = 1) {
  return PieQueue(PieParams{15 * kMs, 150 * kMs, QueueLimits{100000, 0}}, RandomStream(seed, 0));
}

// 500 packets at once, then one arrival and one opportunity every 100 us: a standing 50 ms queue.
TEST(Pie, DropProbRisesUnderAStandingQueueAboveTheReference) {
  BufferPool pool;
  PieQueue q = pie();
  Driver d(pool, q);
  d.fill(500, 0);
  double last = 0;
  for (Nanos t = 30 * kMs; t <= 600 * kMs; t += 30 * kMs) {
    d.run(t - 30 * kMs + 100 * kUs, t + 1, 100 * kUs, 1);
    EXPECT_GT(q.drop_prob(), last) << "at " << t / kMs << " ms";
    last = q.drop_prob();
  }
  EXPECT_GT(d.drops.packets, 0u);
  EXPECT_TRUE(d.conserved());
}

TEST(Pie, NoRandomDropsWithinMaxBurstOfTheQueueStarting) {
  BufferPool pool;
  PieQueue q = pie();
  Driver d(pool, q);
  d.run(0, 150 * kMs, 100 * kUs, 1, 2);  // twice as many arrivals as opportunities
  EXPECT_EQ(d.drops.packets, 0u);
  EXPECT_GT(d.last_sojourn, 50 * kMs);
  EXPECT_GT(q.drop_prob(), 0.0);
  d.run(150 * kMs, 400 * kMs, 100 * kUs, 1, 2);
  EXPECT_GT(d.drops.packets, 0u);
  EXPECT_GE(d.drops.times.front(), 150 * kMs);
}

TEST(Pie, DropProbDecaysToZeroOnceTheQueueDrainsAndTheBurstAllowanceReturns) {
  BufferPool pool;
  PieQueue q = pie();
  Driver d(pool, q);
  d.run(0, 2000 * kMs, 100 * kUs, 1, 2);
  ASSERT_GT(q.drop_prob(), 0.1);
  while (d.serve(2000 * kMs)) {
  }
  const double congested = q.drop_prob();
  EXPECT_FALSE(d.serve(2100 * kMs));  // six idle updates
  EXPECT_LT(q.drop_prob(), congested);
  EXPECT_GT(q.drop_prob(), 0.0);
  EXPECT_FALSE(d.serve(60000 * kMs));
  EXPECT_EQ(q.drop_prob(), 0.0);
  EXPECT_EQ(q.burst_allowance(), 150 * kMs);
  // A new burst is let in whole.
  const uint64_t dropped = d.drops.packets;
  d.run(60000 * kMs, 60100 * kMs, 100 * kUs, 1, 2);
  EXPECT_EQ(d.drops.packets, dropped);
  EXPECT_TRUE(d.conserved());
}

// The periodic update runs lazily; a queue asked often (an opportunity every millisecond while idle) and one
// asked rarely must agree on everything.
TEST(Pie, LazyUpdatesMatchFrequentOnes) {
  BufferPool pool;
  PieQueue often = pie(5), rarely = pie(5);
  Driver a(pool, often), b(pool, rarely);
  for (Driver* d : {&a, &b}) d->run(0, 1000 * kMs, 100 * kUs, 1, 2);
  while (a.serve(1000 * kMs)) b.serve(1000 * kMs);
  for (Nanos t = 1000 * kMs; t < 1500 * kMs; t += kMs) a.serve(t);
  b.serve(1500 * kMs);
  a.serve(1500 * kMs);
  EXPECT_EQ(often.drop_prob(), rarely.drop_prob());
  for (Driver* d : {&a, &b}) d->run(1500 * kMs, 3000 * kMs, 100 * kUs, 1, 2);
  EXPECT_EQ(a.drops.times, b.drops.times);
  EXPECT_EQ(often.drop_prob(), rarely.drop_prob());
}

std::vector<Nanos> overload_drops(uint64_t seed) {
  BufferPool pool;
  PieQueue q = pie(seed);
  Driver d(pool, q);
  d.run(0, 3000 * kMs, 100 * kUs, 1, 2);
  return d.drops.times;
}

TEST(Pie, SameSeedSameDrops) {
  const std::vector<Nanos> a = overload_drops(7), b = overload_drops(7), c = overload_drops(8);
  EXPECT_GT(a.size(), 100u);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
}

// Arrivals every 100 us, opportunities every 125 us: once PIE has settled it drops the excess fifth of the
// arrivals and holds the queueing delay near the reference.
TEST(Pie, SteadyOverloadDropsTheExcessAndHoldsTheReferenceDelay) {
  BufferPool pool;
  PieQueue q = pie(3);
  Driver d(pool, q);
  const Nanos step = 25 * kUs;
  d.run(0, 5000 * kMs, step, 4, 5);
  const uint64_t in = d.in, dropped = d.drops.packets, out = d.out;
  const Nanos sojourns = d.sojourn_sum;
  d.run(5000 * kMs, 15000 * kMs, step, 4, 5);
  const double drop_rate = static_cast<double>(d.drops.packets - dropped) / static_cast<double>(d.in - in);
  EXPECT_NEAR(drop_rate, 0.2, 0.01);
  const double mean_delay_ms = static_cast<double>(d.sojourn_sum - sojourns) / static_cast<double>(d.out - out) / kMs;
  EXPECT_GT(mean_delay_ms, 12.0);
  EXPECT_LT(mean_delay_ms, 18.0);
  EXPECT_TRUE(d.conserved());
}

TEST(Pie, NeverTakesAGsoFrameWholeAndLimitsDropArrivals) {
  BufferPool pool;
  EXPECT_FALSE(pie().takes_whole(gso(pool, 2, 0)));
  auto q = make("pie", "qdelay_ref=15,max_burst=150,packets=3");
  EXPECT_FALSE(q->takes_whole(gso(pool, 44, 0)));
  Drops drops;
  for (uint16_t id = 1; id <= 5; ++id) q->enqueue(plain(pool, 1000, 0, id), 0, drops);
  EXPECT_EQ(drops.ids, (std::vector<uint16_t>{4, 5}));
}

// --- Conservation: in = out + dropped + queued, in wire packets, under a random workload ---

struct Tally {
  uint64_t in = 0, out = 0;
};

// Random arrivals (plain packets and GSO frames, split where the discipline asks) and opportunities.
void random_workload(QueueDiscipline& q, uint32_t seed, Tally& tally, Drops& drops) {
  BufferPool pool;
  std::mt19937 rng(seed);
  Nanos now = 0;
  QueuedPacket out;
  for (int step = 0; step < 3000; ++step) {
    now += std::uniform_int_distribution<Nanos>(0, 300 * kUs)(rng);
    const int arrivals = std::uniform_int_distribution<int>(0, 3)(rng);
    for (int a = 0; a < arrivals; ++a) {
      if (rng() % 8 == 0) {
        QueuedPacket f = gso(pool, 2 + rng() % 43, now);
        tally.in += f.segments;
        if (q.takes_whole(f)) {
          q.enqueue(std::move(f), now, drops);
        } else {
          for (uint32_t s = 0; s < f.segments; ++s) q.enqueue(plain(pool, kSegmentIpBytes, now), now, drops);
        }
      } else {
        tally.in += 1;
        q.enqueue(plain(pool, 40 + rng() % 1461, now), now, drops);
      }
    }
    for (int d = std::uniform_int_distribution<int>(0, 4)(rng); d > 0 && q.dequeue(out, now, drops); --d)
      tally.out += out.segments;
    ASSERT_EQ(tally.in, tally.out + drops.packets + q.packets()) << q.describe() << " step " << step;
  }
  while (q.dequeue(out, now, drops)) tally.out += out.segments;
  EXPECT_EQ(tally.in, tally.out + drops.packets) << q.describe();
  EXPECT_EQ(q.packets(), 0u);
  EXPECT_EQ(q.bytes(), 0u);
  EXPECT_EQ(q.memory(), 0u);
}

TEST(QueueDiscipline, ConservationUnderRandomWorkload) {
  const std::vector<std::pair<std::string, std::string>> setups = {
      {"infinite", ""},
      {"droptail", "packets=100"},
      {"droptail", "bytes=60000"},
      {"drophead", "packets=80,bytes=100000"},
      {"codel", "target=5,interval=100,packets=200"},
      {"codel", "target=0.5,interval=10,bytes=100000"},
      {"pie", "qdelay_ref=15,max_burst=150,packets=200"},
      {"pie", "qdelay_ref=1,max_burst=5,bytes=100000"},
      {"red", "packets=200,min=20,max=100"},
      {"red", "bytes=100000,min=20000,max=80000,gentle=1,wq=0.02"},
  };
  for (const auto& s : setups) {
    for (uint32_t seed = 1; seed <= 2; ++seed) {
      SCOPED_TRACE(s.first + " " + s.second);
      auto q = make(s.first, s.second, seed, s.first == "infinite" ? 3000000 : QueueDiscipline::kMemoryLimit);
      Tally tally;
      Drops drops;
      random_workload(*q, seed, tally, drops);
      if (s.first != "infinite") {
        EXPECT_GT(drops.packets, 0u);
      }
      EXPECT_GT(tally.out, 0u);
    }
  }
}

// --- ECN ---

// With ecn=1, CoDel marks ECN-capable packets where it would drop them, at the same times, and drops nothing.
TEST(CodelEcn, MarksWhereItWouldDrop) {
  BufferPool pool;
  const auto standing = [&](CodelQueue& q, bool ect) {  // 200 packets at once, then one in and one out per 100 us
    Driver d(pool, q);
    d.ect = ect;
    d.fill(200, 0);
    d.run(100 * kUs, 1000 * kMs, 100 * kUs, 1);
    return d;
  };
  CodelQueue dropping = codel();
  const Driver a = standing(dropping, false);
  CodelQueue marking(CodelParams{5 * kMs, 100 * kMs, QueueLimits{100000, 0}, true});
  const Driver b = standing(marking, true);
  EXPECT_EQ(b.drops.packets, 0u);
  ASSERT_GE(b.marked_times.size(), 5u);
  EXPECT_EQ(b.marked_times[0], a.drops.times[0]);  // 105 ms: the first drop's time
  EXPECT_EQ(marking.marks(), b.marked_times.size());
  EXPECT_EQ(marking.describe(), "codel target=5 interval=100 packets=100000 ecn=1");
  // Not-ECT packets are still dropped, as without ECN.
  CodelQueue mixed(CodelParams{5 * kMs, 100 * kMs, QueueLimits{100000, 0}, true});
  EXPECT_EQ(standing(mixed, false).drops.times, a.drops.times);
  EXPECT_EQ(mixed.marks(), 0u);
}

// PIE marks instead of dropping while its drop probability is at most 10% (RFC 8033 5.1), drops above that.
TEST(PieEcn, MarksBelowTenPercentDropsAbove) {
  BufferPool pool;
  PieQueue q(PieParams{15 * kMs, 150 * kMs, QueueLimits{100000, 0}, true}, RandomStream(1, 0));
  Driver d(pool, q);
  d.ect = true;
  d.fill(500, 0);
  bool dropped_below = false, marked_above = false;
  for (Nanos t = 100 * kUs; t < 3000 * kMs; t += 100 * kUs) {
    const uint64_t drops = d.drops.packets, marks = q.marks();
    const double prob = q.drop_prob();
    d.arrive(t);
    d.serve(t);
    if (d.drops.packets > drops && q.drop_prob() <= PieQueue::kMarkEcnThreshold && prob <= PieQueue::kMarkEcnThreshold)
      dropped_below = true;
    if (q.marks() > marks && q.drop_prob() > PieQueue::kMarkEcnThreshold) marked_above = true;
  }
  EXPECT_GT(q.marks(), 0u);
  EXPECT_FALSE(dropped_below);
  EXPECT_FALSE(marked_above);
  // Every drop was one above the threshold, and is counted so (-v reports it beside the marks).
  EXPECT_GT(d.drops.packets, 0u);
  EXPECT_EQ(q.over_threshold(), d.drops.packets);
}

}  // namespace
}  // namespace tracemod
