// Error modes (drop, corrupt, arq) and duplication, alone and through LossQueue, with a fake clock.
#include <gtest/gtest.h>

#include <cmath>
#include <deque>
#include <memory>
#include <vector>

#include "channel/channel_effects.hh"
#include "effects/loss_queue.hh"
#include "fake.hh"
#include "util/error.hh"

namespace tracemod {
namespace {

using namespace fake;  // the frames, sinks and checks every queue test uses

constexpr Nanos kMs = kMillisecond;

// Hits exactly as scripted (then nothing), and remembers the sizes it was asked about.
class Script : public LossModel {
 public:
  explicit Script(std::vector<bool> hits) : hits_(hits.begin(), hits.end()) {}
  bool hit(uint32_t bytes) override {
    asked.push_back(bytes);
    if (hits_.empty()) return false;
    const bool h = hits_.front();
    hits_.pop_front();
    return h;
  }
  std::string describe() const override { return "script"; }
  std::vector<uint32_t> asked;

 private:
  std::deque<bool> hits_;
};

std::string error_of(const std::string& text) {
  try {
    parse_error_mode("--uplink-error-mode", text);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "(accepted)";
}

ChannelEffects effects(ErrorMode::Kind kind, double duplicate = 0, Nanos delay = 0, uint32_t retries = 0) {
  ChannelEffects e;
  e.error.kind = kind;
  e.error.retry_delay = delay;
  e.error.retries = retries;
  e.duplicate = duplicate;
  e.seed = 99;
  return e;
}

TEST(ErrorMode, Forms) {
  EXPECT_EQ(parse_error_mode("x", "drop").describe(), "drop");
  EXPECT_EQ(parse_error_mode("x", "corrupt").describe(), "corrupt");
  const ErrorMode arq = parse_error_mode("x", "arq:delay=5,retries=3");
  EXPECT_EQ(arq.retry_delay, 5 * kMs);
  EXPECT_EQ(arq.retries, 3u);
  EXPECT_EQ(arq.describe(), "arq:delay=5,retries=3");
  EXPECT_EQ(parse_error_mode("x", "arq: retries=0, delay=250us").describe(), "arq:delay=0.25,retries=0");
}

TEST(ErrorMode, Errors) {
  EXPECT_EQ(error_of("lose"), "invalid --uplink-error-mode 'lose': expected drop, corrupt or arq:delay=MS,retries=N");
  EXPECT_EQ(error_of("arq"), "--uplink-error-mode: arq needs delay=MS and retries=N (e.g. arq:delay=5,retries=3)");
  EXPECT_EQ(error_of("arq:delay=5"),
            "--uplink-error-mode: arq needs delay=MS and retries=N (e.g. arq:delay=5,retries=3)");
  EXPECT_EQ(error_of("arq:delay=5,retries=1.5"),
            "invalid --uplink-error-mode (arq retries=) '1.5': expected a whole number from 0 to 1000");
  EXPECT_EQ(error_of("arq:delay=5,retries=2000"),
            "invalid --uplink-error-mode (arq retries=) '2000': expected a whole number from 0 to 1000");
  EXPECT_NE(error_of("arq:delay=x,retries=1").find("invalid --uplink-error-mode (arq delay=) 'x'"), std::string::npos);
  EXPECT_EQ(error_of("arq:delay=5,retries=1,tries=2"),
            "--uplink-error-mode: unknown key 'tries' for arq (expected delay, retries)");
}

// k failures then a success: k retry delays; RETRIES+1 failures: given up, the link busy all the while.
TEST(ArqLink, RetriesCostTheirDelayAndGiveUpAfterTheLast) {
  Script model({true, false, true, true, true});
  ArqLink link(5 * kMs, 3);
  EXPECT_EQ(link.transmit(0, false, model, 100), 0);                 // clean
  EXPECT_EQ(link.transmit(100 * kMs, true, model, 100), 110 * kMs);  // fail, fail (scripted), ok
  EXPECT_EQ(link.transmit(200 * kMs, true, model, 100), kNever);     // fail x4: given up
  EXPECT_EQ(link.retransmissions(), 2u + 3u);
  // The link spent 4 x 5 ms on the one given up: the next packet, at 205 ms, waits until 220 ms.
  EXPECT_EQ(link.transmit(205 * kMs, false, model, 100), 220 * kMs);
  EXPECT_EQ(link.pass(210 * kMs), 220 * kMs);
  EXPECT_EQ(link.pass(300 * kMs), 300 * kMs);
}

TEST(ArqLink, NoRetriesIsDrop) {
  Script model({});
  ArqLink link(5 * kMs, 0);
  EXPECT_EQ(link.transmit(0, true, model, 100), kNever);
  EXPECT_EQ(link.retransmissions(), 0u);
  EXPECT_TRUE(model.asked.empty());
}

// Each packet given up keeps the link busy for 1001 hours: after some 2,600 of them the link's clock would pass
// what an int64 holds. It saturates at kNever instead: nothing after is delivered, and no time wraps into the past.
TEST(ArqLink, ALinkBusyBeyondInt64SaturatesInsteadOfWrapping) {
  IidLoss always(1, RandomStream(1, 0));
  ArqLink link(3600 * 1000 * kMs, 1000);
  for (int i = 0; i < 3000; ++i) ASSERT_EQ(link.transmit(i, true, always, 100), kNever) << i;
  Script clean({});
  EXPECT_EQ(link.transmit(3000, false, clean, 100), kNever);
  EXPECT_EQ(link.pass(3001), kNever);
}

TEST(Clock, SaturatingArithmetic) {
  EXPECT_EQ(saturating_add(5, 7), 12);
  EXPECT_EQ(saturating_add(kNever - 3, 3), kNever);
  EXPECT_EQ(saturating_add(kNever - 3, 4), kNever);
  EXPECT_EQ(saturating_add(kNever, 1000), kNever);
  EXPECT_EQ(ceil_nanos(0), 0);
  EXPECT_EQ(ceil_nanos(1.25), 2);
  EXPECT_EQ(ceil_nanos(3), 3);
  EXPECT_EQ(ceil_nanos(1e30), kNever);
  EXPECT_EQ(ceil_nanos(0x1p63), kNever);
  EXPECT_EQ(ceil_nanos(std::nan("")), kNever);
  EXPECT_EQ(ceil_nanos(0x1p62), Nanos{1} << 62);
}

// A packet being retried holds back those behind it: they leave in order, none before it.
TEST(LossQueueArq, InOrderWithHeadOfLineBlocking) {
  BufferPool pool;
  auto script = std::make_unique<Script>(std::vector<bool>{false, true, true, false});
  LossQueue q(std::move(script), effects(ErrorMode::Kind::kArq, 0, 2 * kMs, 3), pool);
  for (int i = 0; i < 4; ++i) q.enqueue(udp4(pool, 64, i * kMs / 2, static_cast<uint16_t>(i)), i * kMs / 2);
  // Packet 0 leaves at 0; packet 1 (at 0.5 ms) fails twice: 4.5 ms; 2 and 3 wait behind it.
  CollectSink out;
  q.dequeue_ready(4 * kMs, out);
  ASSERT_EQ(out.got.size(), 1u);
  EXPECT_EQ(q.next_event(), 4 * kMs + kMs / 2);
  q.dequeue_ready(4 * kMs + kMs / 2, out);
  ASSERT_EQ(out.got.size(), 4u);
  for (uint16_t i = 0; i < 4; ++i) EXPECT_EQ(ip_id_of(out.got[i]), i);
  EXPECT_EQ(q.stats().dropped_packets, 0u);
  EXPECT_TRUE(Conserved(q.stats()));
  EXPECT_EQ(q.summary(), "script, arq:delay=2,retries=3: 1 hit, 2 retransmissions");
}

// ARP and neighbour discovery are not the emulated link's: they leave at their arrival, not behind a packet the
// link layer is retrying.
TEST(LossQueueArq, LinkControlFramesDoNotWaitForRetries) {
  BufferPool pool;
  LossQueue q(std::make_unique<Script>(std::vector<bool>{true, true, true}),
              effects(ErrorMode::Kind::kArq, 0, 2 * kMs, 3), pool);
  std::vector<uint8_t> arp(60, 0);
  arp[12] = 0x08, arp[13] = 0x06;
  q.enqueue(udp4(pool, 64, 0, 1), 0);  // fails three times: leaves at 6 ms
  q.enqueue(fake::make_packet(pool, arp, virtio_net_hdr{}, kMs), kMs);
  q.enqueue(udp4(pool, 64, 2 * kMs, 2), 2 * kMs);  // waits behind packet 1
  EXPECT_EQ(q.next_event(), kMs);
  CollectSink out;
  q.dequeue_ready(kMs, out);
  ASSERT_EQ(out.got.size(), 1u);
  EXPECT_EQ(out.got[0].frame()[13], 0x06);
  q.dequeue_ready(6 * kMs, out);
  ASSERT_EQ(out.got.size(), 3u);
  EXPECT_EQ(ip_id_of(out.got[1]), 1);
  EXPECT_EQ(ip_id_of(out.got[2]), 2);
  EXPECT_TRUE(Conserved(q.stats()));
}

// An ARQ link that keeps failing holds packets back; their memory is bounded like a delay line's.
TEST(LossQueueArq, MemoryLimitDropsArrivalsBehindAStuckLink) {
  BufferPool pool;
  LossQueue q(std::make_unique<IidLoss>(1, RandomStream(1, 0)), effects(ErrorMode::Kind::kArq, 0, 1000 * kMs, 10), pool,
              3 * 2048);
  for (uint16_t i = 0; i < 5; ++i) q.enqueue(udp4(pool, 64, i, i), i);
  EXPECT_EQ(q.stats().queued_packets, 0u);  // every one given up...
  EXPECT_EQ(q.stats().dropped_packets, 5u);
  LossQueue slow(std::make_unique<Script>(std::vector<bool>{true, false}),
                 effects(ErrorMode::Kind::kArq, 0, 1000 * kMs, 10), pool, 3 * 2048);
  for (uint16_t i = 0; i < 5; ++i) slow.enqueue(udp4(pool, 64, i, i), i);
  EXPECT_EQ(slow.stats().queued_packets, 3u);  // ...or waiting behind the first, up to the limit
  EXPECT_EQ(slow.stats().dropped_packets, 2u);
  EXPECT_TRUE(Conserved(slow.stats()));
}

TEST(LossQueueDuplicate, EveryDeliveredPacketTwiceAndCountersHold) {
  BufferPool pool;
  LossQueue q(std::make_unique<IidLoss>(0, RandomStream(1, 0)), effects(ErrorMode::Kind::kDrop, 1.0), pool);
  CollectSink out;
  for (uint16_t i = 0; i < 10; ++i) q.enqueue(udp4(pool, 64, i, i), i);
  q.dequeue_ready(10, out);
  ASSERT_EQ(out.got.size(), 20u);
  for (uint16_t i = 0; i < 20; ++i) EXPECT_EQ(ip_id_of(out.got[i]), i / 2);
  EXPECT_EQ(q.stats().in_packets, 20u);
  EXPECT_TRUE(Conserved(q.stats()));
}

// Duplication draws from its own stream: turning it on changes nothing about which packets are lost.
TEST(LossQueueDuplicate, DoesNotChangeWhichPacketsAreLost) {
  BufferPool pool;
  const auto lost_ids = [&](double duplicate) {
    LossQueue q(std::make_unique<IidLoss>(0.3, RandomStream(5, 0)), effects(ErrorMode::Kind::kDrop, duplicate), pool);
    CollectSink out;
    for (uint16_t i = 0; i < 2000; ++i) q.enqueue(udp4(pool, 64, i, i), i);
    q.dequeue_ready(2000, out);
    std::vector<bool> seen(2000, false);
    size_t copies = 0;
    for (auto& p : out.got) {
      copies += seen[ip_id_of(p)];
      seen[ip_id_of(p)] = true;
    }
    return std::make_pair(seen, copies);
  };
  const auto plain = lost_ids(0), doubled = lost_ids(0.2);
  EXPECT_EQ(plain.first, doubled.first);
  EXPECT_EQ(plain.second, 0u);
  const double delivered = 2000 * 0.7, sigma = std::sqrt(delivered * 0.2 * 0.8);
  EXPECT_NEAR(static_cast<double>(doubled.second), delivered * 0.2, 5 * sigma);
}

// Corrupt mode delivers what the model hits, damaged; the rest untouched.
TEST(LossQueueCorrupt, HitPacketsArriveWithABadChecksum) {
  BufferPool pool;
  LossQueue q(std::make_unique<Script>(std::vector<bool>{false, true, false}), effects(ErrorMode::Kind::kCorrupt),
              pool);
  for (uint16_t i = 0; i < 3; ++i) {
    Packet p = udp4(pool, 200, i, i);
    fake::wr16(p.frame() + fake::l4_offset({}) + 6, fake::full_l4_checksum(p.frame(), p.frame_size()));
    q.enqueue(std::move(p), i);
  }
  CollectSink out;
  q.dequeue_ready(3, out);
  ASSERT_EQ(out.got.size(), 3u);
  for (uint16_t i = 0; i < 3; ++i) {
    const Packet& p = out.got[i];
    const bool good =
        fake::rd16(p.frame() + fake::l4_offset({}) + 6) == fake::full_l4_checksum(p.frame(), p.frame_size());
    EXPECT_EQ(good, i != 1) << i;
  }
  EXPECT_EQ(q.stats().dropped_packets, 0u);
  EXPECT_EQ(q.summary(), "script, corrupt: 1 hit, 1 delivered corrupt");
}

// A GSO frame whose packets fare differently is split; only the hit segment is damaged, the others keep their
// partial checksums for the receiver to finish.
TEST(LossQueueCorrupt, GsoFrameSplitAndOnlyTheHitSegmentDamaged) {
  BufferPool pool;
  auto script = std::make_unique<Script>(std::vector<bool>{false, false, true, false});
  Script* model = script.get();
  LossQueue q(std::move(script), effects(ErrorMode::Kind::kCorrupt), pool);
  q.enqueue(fake::tcp_gso(pool, false, 1000, 4000, 7), 7);
  EXPECT_EQ(model->asked, (std::vector<uint32_t>{1040, 1040, 1040, 1040}));
  CollectSink out;
  q.dequeue_ready(7, out);
  ASSERT_EQ(out.got.size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    Packet& s = out.got[i];
    ASSERT_FALSE(s.is_gso());
    const uint16_t right = fake::full_l4_checksum(s.frame(), s.frame_size());
    if (i == 2) {
      EXPECT_FALSE(s.vnet().flags & VIRTIO_NET_HDR_F_NEEDS_CSUM);
      EXPECT_NE(fake::rd16(s.frame() + fake::l4_offset({}) + 16), right);
    } else {
      ASSERT_TRUE(s.vnet().flags & VIRTIO_NET_HDR_F_NEEDS_CSUM);
      EXPECT_EQ(fake::complete_partial_checksum(s), right);
    }
  }
  EXPECT_TRUE(Conserved(q.stats()));
}

TEST(LossQueue, FramesFaringAlikeStayWhole) {
  BufferPool pool;
  LossQueue q(std::make_unique<Script>(std::vector<bool>{}), effects(ErrorMode::Kind::kArq, 0, kMs, 2), pool);
  q.enqueue(fake::udp_gso(pool, true, 1200, 6000, 0), 0);
  CollectSink out;
  q.dequeue_ready(0, out);
  ASSERT_EQ(out.got.size(), 1u);
  EXPECT_TRUE(out.got[0].is_gso());
}

TEST(LossQueue, LinkControlFramesAreNeverJudged) {
  BufferPool pool;
  auto script = std::make_unique<Script>(std::vector<bool>{true});
  Script* model = script.get();
  LossQueue q(std::move(script), effects(ErrorMode::Kind::kDrop, 1.0), pool);
  std::vector<uint8_t> arp(60, 0);
  arp[12] = 0x08, arp[13] = 0x06;
  q.enqueue(fake::make_packet(pool, arp, virtio_net_hdr{}, 0), 0);
  EXPECT_TRUE(model->asked.empty());
  EXPECT_EQ(q.stats().out_packets + q.stats().queued_packets, 1u);  // neither judged nor duplicated
}

}  // namespace
}  // namespace tracemod
