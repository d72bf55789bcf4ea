#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <vector>

#include "disciplines/queue_factory.hh"
#include "fake.hh"
#include "link/link_queue.hh"

namespace tracemod {
namespace {

using namespace fake;  // the frames, sinks and checks every queue test uses

constexpr Nanos kMs = kMillisecond;
constexpr uint32_t kFullPayload = 1500 - 28;  // UDP payload of a 1500-byte IPv4 packet

// Opportunities at the given times (ns from the link's time 0), then none.
class ListSource : public OpportunitySource {
 public:
  explicit ListSource(std::vector<Nanos> times) : times_(std::move(times)) {}
  Nanos next() override { return i_ < times_.size() ? times_[i_++] : kNever; }
  uint64_t skip_before(Nanos t) override {
    uint64_t n = 0;
    while (i_ < times_.size() && times_[i_] < t) ++i_, ++n;
    return n;
  }

 private:
  std::vector<Nanos> times_;
  size_t i_ = 0;
};

std::vector<Nanos> every(Nanos step, int count, Nanos first) {
  std::vector<Nanos> v;
  for (int i = 0; i < count; ++i) v.push_back(first + i * step);
  return v;
}

struct Link {
  BufferPool pool;
  std::unique_ptr<LinkQueue> q;
  CollectSink out;
  explicit Link(std::vector<Nanos> times, const std::string& queue = "infinite", const std::string& args = "",
                std::shared_ptr<LinkLog> log = nullptr, Nanos start = 0) {
    const Nanos end = times.empty() ? 0 : times.back();
    q = std::make_unique<LinkQueue>(std::make_unique<ListSource>(std::move(times)), start, end,
                                    make_queue_discipline("--uplink-queue-args", queue, args, RandomStream(1, 0)), pool,
                                    std::move(log));
  }
  void arrive(uint32_t payload, Nanos t, uint16_t id = 0) { q->enqueue(udp4(pool, payload, t, id), t); }
  // Runs the link to T and returns the release times of what left.
  std::vector<Nanos> run(Nanos t) {
    q->dequeue_ready(t, out);
    std::vector<Nanos> r;
    for (const Packet& p : out.got) r.push_back(p.release);
    return r;
  }
};

TEST(LinkQueue, OneFullPacketPerOpportunity) {
  Link k(every(kMs, 3, kMs));
  for (uint16_t i = 0; i < 3; ++i) k.arrive(kFullPayload, 0, i);
  EXPECT_EQ(k.q->next_event(), kMs);
  EXPECT_EQ(k.run(kMs - 1), std::vector<Nanos>{});
  EXPECT_EQ(k.run(10 * kMs), (std::vector<Nanos>{kMs, 2 * kMs, 3 * kMs}));
  EXPECT_EQ(ip_id_of(k.out.got[2]), 2);
  EXPECT_TRUE(Conserved(k.q->stats()));
  EXPECT_EQ(k.q->stats().out_packets, 3u);
}

TEST(LinkQueue, AStallCarriesNothingAndTheQueueDrainsAfterItAtTheLinksRate) {
  // The ferry was stopped from 1.5 ms to 10 ms: three packets queued before it and four that arrived during it
  // (read late) leave one per opportunity from 10 ms on, not all at 10 ms; a one-packet-a-ms link stays one.
  Link k(every(kMs, 30, kMs), "droptail", "packets=5");
  for (uint16_t i = 0; i < 3; ++i) k.arrive(kFullPayload, 0, i);
  EXPECT_EQ(k.run(1500 * 1000), std::vector<Nanos>{kMs});
  k.q->stalled(1500 * 1000, 10 * kMs);
  for (uint16_t i = 3; i < 7; ++i) k.q->enqueue(udp4(k.pool, kFullPayload, 2 * kMs + i * kMs, i), 10 * kMs);
  EXPECT_EQ(k.q->stats().dropped_packets, 1u) << "five fit in the queue: two from before, three of the four";
  EXPECT_EQ(k.run(20 * kMs), (std::vector<Nanos>{kMs, 11 * kMs, 12 * kMs, 13 * kMs, 14 * kMs, 15 * kMs}));
  EXPECT_TRUE(Conserved(k.q->stats()));
  EXPECT_NE(k.q->summary().find("ferry stalls: 1, 8 ms in all"), std::string::npos) << k.q->summary();
}

TEST(LinkQueue, SeveralSmallPacketsShareOneOpportunity) {
  Link k(every(kMs, 2, kMs));
  for (int i = 0; i < 16; ++i) k.arrive(100 - 28, 0);  // 16 packets of 100 IP bytes
  // 15 fit in the first 1500 bytes; the 16th needs the second opportunity.
  const auto r = k.run(5 * kMs);
  ASSERT_EQ(r.size(), 16u);
  EXPECT_EQ(r[14], kMs);
  EXPECT_EQ(r[15], 2 * kMs);
}

TEST(LinkQueue, CreditLeftOverCarriesPartOfTheNextPacket) {
  Link k(every(kMs, 3, kMs));
  k.arrive(1000 - 28, 0);
  k.arrive(1000 - 28, 0);  // 500 bytes in the first opportunity, 500 in the second
  k.arrive(1000 - 28, 0);  // 1000 bytes of the second's credit remain: it fits there too
  EXPECT_EQ(k.run(5 * kMs), (std::vector<Nanos>{kMs, 2 * kMs, 2 * kMs}));
}

TEST(LinkQueue, UnusedCreditIsLost) {
  Link k(every(kMs, 3, kMs));
  k.arrive(100 - 28, 0);  // uses 100 bytes of the first opportunity; the rest is wasted
  EXPECT_EQ(k.run(1500 * 1000), std::vector<Nanos>{kMs});
  k.arrive(kFullPayload, 1500 * 1000);  // arrives after the first: needs a whole opportunity of its own
  EXPECT_EQ(k.run(5 * kMs), (std::vector<Nanos>{kMs, 2 * kMs}));
}

TEST(LinkQueue, OpportunitiesBeforeAnArrivalCannotCarryIt) {
  Link k(every(kMs, 5, kMs));
  // Handed over late (at 3.5 ms) but received by the kernel at 2.5 ms: the 3 ms opportunity is usable,
  // the 1 and 2 ms ones are not.
  k.q->enqueue(udp4(k.pool, kFullPayload, 2500 * 1000), 3500 * 1000);
  EXPECT_EQ(k.run(10 * kMs), std::vector<Nanos>{3 * kMs});
}

// Packets arrive at random times, on average one per 1.5 opportunities, and are handed to the link up to 3 ms after the
// kernel received them (the ferry reads late); the link is run at random times. Each packet leaves at an
// opportunity no earlier than its arrival and no later than the run that released it, in order.
TEST(LinkQueue, NeverReleasesBeforeItsArrivalOrItsOpportunity) {
  Link k(every(kMs, 400, kMs));
  RandomStream r(7, 0);
  std::vector<std::pair<Nanos, Nanos>> pending;  // (arrival, handed over), in the kernel's order
  for (Nanos t = 0, handed = 0; t < 300 * kMs; t += static_cast<Nanos>(r.uniform() * 3 * kMs)) {
    handed = std::max(handed, t + static_cast<Nanos>(r.uniform() * 3 * kMs));
    pending.push_back({t, handed});
  }
  std::vector<Nanos> arrival_of;  // by IP ID
  size_t next = 0;
  for (Nanos now = 0; now < 500 * kMs; now += static_cast<Nanos>(r.uniform() * 700 * 1000)) {
    for (; next < pending.size() && pending[next].second <= now; ++next) {
      arrival_of.push_back(pending[next].first);
      k.q->enqueue(udp4(k.pool, kFullPayload, pending[next].first, static_cast<uint16_t>(arrival_of.size() - 1)), now);
    }
    const size_t before = k.out.got.size();
    k.q->dequeue_ready(now, k.out);
    for (size_t i = before; i < k.out.got.size(); ++i) {
      const Packet& p = k.out.got[i];
      EXPECT_GE(p.release, arrival_of[ip_id_of(p)]) << "packet " << ip_id_of(p);
      EXPECT_LE(p.release, now);
      EXPECT_EQ(p.release % kMs, 0);
      if (i > 0) {
        EXPECT_GT(p.release, k.out.got[i - 1].release);  // one full packet per opportunity
      }
    }
  }
  EXPECT_EQ(next, pending.size());
  EXPECT_EQ(k.out.got.size(), pending.size());
  EXPECT_TRUE(Conserved(k.q->stats()));
}

TEST(LinkQueue, IdleLinkSkipsItsOpportunities) {
  Link k(every(kMs, 1000, kMs));
  EXPECT_EQ(k.q->next_event(), 1000 * kMs);  // nothing waits: no reason to wake up before the end
  k.run(500 * kMs);
  k.arrive(kFullPayload, 500 * kMs);
  EXPECT_EQ(k.q->next_event(), 501 * kMs);
  EXPECT_EQ(k.run(600 * kMs), std::vector<Nanos>{501 * kMs});
}

TEST(LinkQueue, OpportunityTimesCountFromTheLinkStart) {
  BufferPool pool;
  Link k(every(kMs, 3, kMs), "infinite", "", nullptr, 7 * kMs);
  k.arrive(kFullPayload, 7 * kMs);
  EXPECT_EQ(k.run(20 * kMs), std::vector<Nanos>{8 * kMs});
}

TEST(LinkQueue, FinishedWhenTheSourceEnds) {
  Link k(every(kMs, 2, kMs));
  EXPECT_FALSE(k.q->finished());
  k.arrive(kFullPayload, 0);
  k.run(2 * kMs);
  EXPECT_TRUE(k.q->finished());
}

TEST(LinkQueue, AnIdleLinkWakesAtTheEndOfAFiniteSource) {
  Link k(every(kMs, 3, kMs));
  EXPECT_EQ(k.q->next_event(), 3 * kMs);  // nothing to send, but the end must be seen
  k.run(3 * kMs);
  EXPECT_TRUE(k.q->finished());
  EXPECT_EQ(k.q->next_event(), kNever);
}

TEST(LinkQueue, DroptailDropsArrivalsBeyondTheLimitAndConserves) {
  Link k(every(kMs, 10, kMs), "droptail", "packets=3");
  for (uint16_t i = 0; i < 6; ++i) k.arrive(kFullPayload, 0, i);
  EXPECT_EQ(k.q->stats().dropped_packets, 3u);
  EXPECT_TRUE(Conserved(k.q->stats()));
  k.run(20 * kMs);
  ASSERT_EQ(k.out.got.size(), 3u);
  EXPECT_EQ(ip_id_of(k.out.got[2]), 2);
  EXPECT_TRUE(Conserved(k.q->stats()));
  EXPECT_EQ(k.q->stats().queued_packets, 0u);
}

TEST(LinkQueue, GsoFrameAtALowRateLeavesAsItsWirePackets) {
  Link k(every(kMs, 5, kMs));
  k.q->enqueue(fake::tcp_gso(k.pool, false, 1448, 3 * 1448, 0), 0);  // 3 segments of 1500 IP bytes
  EXPECT_EQ(k.q->stats().in_packets, 3u);
  const auto r = k.run(10 * kMs);
  EXPECT_EQ(r, (std::vector<Nanos>{kMs, 2 * kMs, 3 * kMs}));
  for (const Packet& p : k.out.got) EXPECT_FALSE(p.is_gso());
  EXPECT_EQ(k.q->stats().out_packets, 3u);
}

TEST(LinkQueue, GsoFrameAtAHighRateLeavesWholeAtItsLastOpportunity) {
  Link k(every(1200, 50, 1200));  // 10 Gbit/s: an opportunity every 1.2 us
  k.q->enqueue(fake::tcp_gso(k.pool, false, 1448, 40 * 1448, 0), 0);
  const auto r = k.run(kMs);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0], 40 * 1200);
  EXPECT_TRUE(k.out.got[0].is_gso());
  EXPECT_EQ(k.q->stats().out_packets, 40u);
  EXPECT_TRUE(Conserved(k.q->stats()));
}

// The keep/split boundary itself: a frame whose opportunities span exactly kMaxGsoSpread leaves whole at the
// last of them; one nanosecond more and each wire packet leaves at its own opportunity.
TEST(LinkQueue, GsoFrameSpanningExactlyTheMaximumSpreadStaysWhole) {
  constexpr Nanos kStart = 5 * kMs, kHalf = LinkQueue::kMaxGsoSpread / 2;
  Link k({kStart, kStart + kHalf, kStart + 2 * kHalf});
  k.q->enqueue(fake::tcp_gso(k.pool, false, 1448, 3 * 1448, 0), 0);  // 3 segments of 1500 IP bytes
  ASSERT_EQ(k.run(10 * kMs), std::vector<Nanos>{kStart + LinkQueue::kMaxGsoSpread});
  EXPECT_TRUE(k.out.got[0].is_gso());
  EXPECT_EQ(k.q->stats().out_packets, 3u);
}

TEST(LinkQueue, GsoFrameSpanningOneNanosecondMoreIsSplit) {
  constexpr Nanos kStart = 5 * kMs, kHalf = LinkQueue::kMaxGsoSpread / 2;
  Link k({kStart, kStart + kHalf, kStart + 2 * kHalf + 1});
  k.q->enqueue(fake::tcp_gso(k.pool, false, 1448, 3 * 1448, 0), 0);
  EXPECT_EQ(k.run(10 * kMs), (std::vector<Nanos>{kStart, kStart + kHalf, kStart + 2 * kHalf + 1}));
  for (const Packet& p : k.out.got) EXPECT_FALSE(p.is_gso());
  EXPECT_EQ(k.q->stats().out_packets, 3u);
}

TEST(LinkQueue, ALinkWithoutDeparturesReportsNoLateness) {
  Link k(every(kMs, 2, kMs));
  EXPECT_EQ(k.q->lateness().quantile_us(0.99), 0u);
  EXPECT_EQ(k.q->summary(), "infinite; no departures");
}

TEST(LinkQueue, LateDeparturesAreMeasured) {
  Link k(every(kMs, 2, kMs));
  k.arrive(kFullPayload, 0);
  k.run(kMs + 30 * 1000);  // handed to the kernel 30 us after its opportunity
  EXPECT_EQ(k.q->lateness().count(), 1u);
  EXPECT_EQ(k.q->lateness().quantile_us(0.99), 30u);
}

// A link driven by a real Mahimahi trace.
std::unique_ptr<LinkQueue> traced(BufferPool& pool, const std::string& text, bool once) {
  const DeliveryTrace trace = DeliveryTrace::parse(text, "t");
  const Nanos end = once ? static_cast<Nanos>(trace.period_ms()) * kMs : kNever;
  return std::make_unique<LinkQueue>(trace.cursor(once), 0, end,
                                     make_queue_discipline("--uplink-queue-args", "infinite", "", RandomStream(1, 0)),
                                     pool, nullptr);
}

TEST(LinkQueue, TraceLoopsWithItsLastValueAsPeriodAndRepeatsGiveSeveralOpportunities) {
  BufferPool pool;
  auto q = traced(pool, "1\n3\n3\n", false);  // 1 at 1 ms, 2 at 3 ms; period 3 ms
  for (int i = 0; i < 7; ++i) q->enqueue(udp4(pool, kFullPayload, 0), 0);
  CollectSink out;
  q->dequeue_ready(20 * kMs, out);
  std::vector<Nanos> r;
  for (const Packet& p : out.got) r.push_back(p.release / kMs);
  EXPECT_EQ(r, (std::vector<Nanos>{1, 3, 3, 4, 6, 6, 7}));
  EXPECT_FALSE(q->finished());
}

TEST(LinkQueue, OnceEndsAtTheLastLine) {
  BufferPool pool;
  auto q = traced(pool, "1\n3\n", true);
  for (int i = 0; i < 3; ++i) q->enqueue(udp4(pool, kFullPayload, 0), 0);
  CollectSink out;
  q->dequeue_ready(20 * kMs, out);
  EXPECT_EQ(out.got.size(), 2u);  // the third never gets an opportunity
  EXPECT_TRUE(q->finished());
  EXPECT_EQ(q->stats().queued_packets, 1u);
  EXPECT_TRUE(Conserved(q->stats()));
}

TEST(LinkQueue, ConservationUnderEveryDisciplineWithGsoAndSmallPackets) {
  const std::pair<const char*, const char*> disciplines[] = {{"infinite", ""},
                                                             {"droptail", "packets=20"},
                                                             {"drophead", "bytes=30000"},
                                                             {"codel", "target=5,interval=100,packets=1000"},
                                                             {"pie", "qdelay_ref=15,max_burst=150,packets=1000"}};
  for (auto [name, args] : disciplines) {
    Link k(every(kMs / 4, 4000, kMs / 4), name, args);
    RandomStream r(3, 0);
    for (Nanos t = 0; t < 1000 * kMs; t += 50 * 1000) {
      const double u = r.uniform();
      if (u < 0.3)
        k.q->enqueue(fake::tcp_gso(k.pool, u < 0.1, 1448, 1 + static_cast<uint32_t>(u * 20000), t), t);
      else if (u < 0.8)
        k.arrive(static_cast<uint32_t>(u * kFullPayload), t);
      k.q->dequeue_ready(t, k.out);
      ASSERT_TRUE(Conserved(k.q->stats())) << name;
    }
    EXPECT_GT(k.q->stats().out_packets, 0u) << name;
  }
}

// What a link writes to its log when two full packets arrive at ARRIVAL into a one-packet drop-tail queue and the
// link runs to RUN_TO, with opportunities every ms from START + 1 ms (COUNT of them).
std::string logged(LinkLog::Format format, Nanos start, int count, Nanos arrival, Nanos run_to) {
  char path[] = "/tmp/tm-link-log-XXXXXX";
  const int fd = mkstemp(path);
  if (fd < 0) return "mkstemp failed";
  close(fd);
  {
    auto log = std::make_shared<LinkLog>(path, format);
    log->header({"test"}, start);
    Link k(every(kMs, count, kMs), "droptail", "packets=1", log, start);
    k.arrive(kFullPayload, arrival);
    k.arrive(kFullPayload, arrival);  // dropped: the queue holds one
    k.run(run_to);
  }
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  std::remove(path);
  return text.str();
}

TEST(LinkQueue, LogsInMahimahiGrammar) {
  EXPECT_EQ(logged(LinkLog::Format::kTracemod, 5 * kMs, 3, 5 * kMs + 250 * 1000, 9 * kMs),
            "# test\n# base timestamp: 5.000\n"
            "5.250 + 1500\n5.250 + 1500\n5.250 d 1 1500\n"
            "6.000 # 1500\n6.000 - 1500 0.750\n7.000 # 1500\n8.000 # 1500\n");
}

TEST(LinkQueue, MahimahiLogFormatHasWholeMillisecondsAndNoDropLines) {
  // The delay is the difference of the whole-ms times (6 - 5), as Mahimahi computes it.
  EXPECT_EQ(logged(LinkLog::Format::kMahimahi, 5 * kMs + 400 * 1000, 2, 5 * kMs + 900 * 1000, 8 * kMs),
            "# test\n# base timestamp: 5\n5 + 1500\n5 + 1500\n6 # 1500\n6 - 1500 1\n7 # 1500\n");
}

TEST(LinkQueue, ItsLogReachesTheFileWithinASecondWhileItRuns) {
  fake::TempDir dir;
  auto log = std::make_shared<LinkLog>(dir / "up.log", LinkLog::Format::kTracemod);
  Link k({kMs}, "infinite", "", log);  // one opportunity, then idle for ever
  k.arrive(kFullPayload, 0);
  k.run(2 * kMs);
  EXPECT_EQ(fake::contents(dir / "up.log"), "");  // a megabyte is not yet gathered
  // An idle link would never wake again: it does once more, to write its lines.
  EXPECT_EQ(k.q->next_event(), 2 * kMs + KeepCurrent::kEvery);
  k.run(2 * kMs + KeepCurrent::kEvery);
  EXPECT_EQ(fake::contents(dir / "up.log"), "0.000 + 1500\n1.000 # 1500\n1.000 - 1500 1.000\n");
  EXPECT_EQ(k.q->next_event(), kNever);
}

}  // namespace
}  // namespace tracemod
