// tm-link --shared-medium with a fake clock: one trace's opportunities serve both directions from one queue in
// arrival order; each direction keeps its own counters, drops and departures.
#include <gtest/gtest.h>

#include "disciplines/queue_factory.hh"
#include "fake.hh"
#include "link/link_queue.hh"

namespace tracemod {
namespace {

using fake::Conserved;
using fake::ip_id_of;

constexpr Nanos kMs = kMillisecond;
constexpr uint32_t kFullPayload = 1500 - 28;

class Drops : public DropObserver {
 public:
  void dropped(const Packet& p, Nanos) override { ids.push_back(ip_id_of(p)); }
  std::vector<uint16_t> ids;
};

struct SharedLink {
  BufferPool pool;
  std::shared_ptr<LinkQueue> link;
  std::unique_ptr<Lane> lanes[2];
  fake::CollectSink out[2];
  Drops drops[2];
  explicit SharedLink(const std::string& queue = "infinite", const std::string& args = "") {
    link = std::make_shared<LinkQueue>(std::make_unique<ConstantRate>(12000000), 0, kNever,
                                       make_queue_discipline("--uplink-queue-args", queue, args, RandomStream(1, 0)),
                                       pool, nullptr);
    for (int l = 0; l < 2; ++l) {
      lanes[l] = std::make_unique<Lane>(link, l);
      lanes[l]->set_drop_observer(&drops[l]);
    }
  }
  void arrive(int l, Nanos t, uint16_t id) { lanes[l]->enqueue(fake::udp4(pool, kFullPayload, t, id), t); }
  std::vector<Nanos> run(int l, Nanos t) {
    lanes[l]->dequeue_ready(t, out[l]);
    std::vector<Nanos> r;
    for (const Packet& p : out[l].got) r.push_back(p.release);
    return r;
  }
};

TEST(LinkSharedMedium, BothDirectionsBusyShareTheOpportunitiesInArrivalOrder) {
  SharedLink k;
  for (uint16_t i = 0; i < 5; ++i) {
    k.arrive(0, 0, i);
    k.arrive(1, 0, static_cast<uint16_t>(100 + i));
  }
  // Arrivals wait until both directions have been read (the loop asks for releases then): due at once.
  EXPECT_EQ(k.lanes[0]->next_event(), 0);
  EXPECT_EQ(k.run(1, 0), std::vector<Nanos>{});
  // 12 Mbit/s: an opportunity each ms, taken in turn by the uplink's and the downlink's packets.
  EXPECT_EQ(k.lanes[0]->next_event(), 1 * kMs);
  EXPECT_EQ(k.lanes[1]->next_event(), 1 * kMs);
  EXPECT_EQ(k.run(0, 20 * kMs), (std::vector<Nanos>{1 * kMs, 3 * kMs, 5 * kMs, 7 * kMs, 9 * kMs}));
  EXPECT_EQ(k.run(1, 20 * kMs), (std::vector<Nanos>{2 * kMs, 4 * kMs, 6 * kMs, 8 * kMs, 10 * kMs}));
  EXPECT_EQ(ip_id_of(k.out[1].got[0]), 100);
  for (int l = 0; l < 2; ++l) {
    EXPECT_EQ(k.lanes[l]->stats().in_packets, 5u);
    EXPECT_EQ(k.lanes[l]->stats().out_packets, 5u);
    EXPECT_TRUE(Conserved(k.lanes[l]->stats()));
  }
  EXPECT_NE(k.lanes[0]->summary().find("(shared medium)"), std::string::npos) << k.lanes[0]->summary();
}

TEST(LinkSharedMedium, ADirectionAloneHasTheWholeLink) {
  SharedLink k;
  for (uint16_t i = 0; i < 5; ++i) k.arrive(1, 0, i);
  EXPECT_EQ(k.run(1, 20 * kMs), (std::vector<Nanos>{1 * kMs, 2 * kMs, 3 * kMs, 4 * kMs, 5 * kMs}));
  EXPECT_EQ(k.run(0, 20 * kMs), std::vector<Nanos>{});
  EXPECT_EQ(k.lanes[0]->stats().in_packets, 0u);
}

TEST(LinkSharedMedium, OneQueueLimitForBothAndEachDropCountedOnItsOwnDirection) {
  SharedLink k("droptail", "packets=3");
  k.arrive(0, 0, 1);
  k.arrive(1, 0, 2);
  k.arrive(0, 0, 3);
  k.arrive(1, 0, 4);  // the fourth in one queue of three: dropped, and it is the downlink's
  k.arrive(0, 0, 5);
  k.run(0, 10 * kMs);
  k.run(1, 10 * kMs);
  EXPECT_EQ(k.drops[1].ids, std::vector<uint16_t>{4});
  EXPECT_EQ(k.drops[0].ids, std::vector<uint16_t>{5});
  EXPECT_EQ(k.lanes[0]->stats().dropped_packets, 1u);
  EXPECT_EQ(k.lanes[1]->stats().dropped_packets, 1u);
  EXPECT_EQ(k.out[0].got.size(), 2u);
  EXPECT_EQ(k.out[1].got.size(), 1u);
  EXPECT_TRUE(Conserved(k.lanes[0]->stats()));
  EXPECT_TRUE(Conserved(k.lanes[1]->stats()));
}

TEST(LinkSharedMedium, ArrivalsJoinTheQueueInTheOrderTheKernelReceivedThem) {
  // The ferry reads the uplink's batch (received at 10, 30, 50 us), then the downlink's (0, 20, 40 us): the
  // queue of three must hold the three earliest, of both directions, not the uplink's three.
  SharedLink k("droptail", "packets=3");
  for (Nanos t : {10, 30, 50}) k.lanes[0]->enqueue(fake::udp4(k.pool, kFullPayload, t * 1000, 1), 60 * 1000);
  for (Nanos t : {0, 20, 40}) k.lanes[1]->enqueue(fake::udp4(k.pool, kFullPayload, t * 1000, 2), 60 * 1000);
  k.run(0, 60 * 1000);
  EXPECT_EQ(k.lanes[0]->stats().dropped_packets, 2u);  // at 30 and 50 us
  EXPECT_EQ(k.lanes[1]->stats().dropped_packets, 1u);  // at 40 us
  EXPECT_EQ(k.run(1, 10 * kMs), (std::vector<Nanos>{1 * kMs, 3 * kMs}));
  EXPECT_EQ(k.run(0, 10 * kMs), std::vector<Nanos>{2 * kMs});
}

TEST(LinkSharedMedium, ALinkAloneIsItsOwnUplink) {
  BufferPool pool;
  LinkQueue q(std::make_unique<ConstantRate>(12000000), 0, kNever,
              make_queue_discipline("--uplink-queue-args", "infinite", "", RandomStream(1, 0)), pool, nullptr);
  q.enqueue(fake::udp4(pool, kFullPayload, 0, 1), 0);
  fake::CollectSink out;
  q.dequeue_ready(5 * kMs, out);
  EXPECT_EQ(out.got.size(), 1u);
  EXPECT_EQ(q.stats().out_packets, 1u);
  EXPECT_EQ(q.summary().find("(shared medium)"), std::string::npos);
}

}  // namespace
}  // namespace tracemod
