// Corruption: one bit flipped where the receiver's checksum covers it, and a partial checksum completed first.
#include <gtest/gtest.h>

#include <vector>

#include "channel/corrupt.hh"
#include "fake.hh"

namespace tracemod {
namespace {

using fake::FrameSpec;

// Offsets of the bytes that differ between A and B, and how many bits differ in all.
struct Diff {
  std::vector<uint32_t> at;
  int bits = 0;
};
Diff diff(const Packet& a, const Packet& b) {
  Diff d;
  for (uint32_t i = 0; i < a.frame_size(); ++i) {
    const uint8_t x = a.frame()[i] ^ b.frame()[i];
    if (x) d.at.push_back(i), d.bits += __builtin_popcount(x);
  }
  return d;
}

Packet copy(BufferPool& pool, const Packet& p) {
  return fake::make_packet(pool, std::vector<uint8_t>(p.frame(), p.frame() + p.frame_size()), p.vnet(), p.arrival);
}

uint32_t checksum_field(const FrameSpec& s) {
  return fake::l4_offset(s) + (s.proto == fake::kTcp ? 16 : 6);
}

// A frame whose L4 checksum is complete and right (as one that crossed a real NIC).
Packet complete(BufferPool& pool, const FrameSpec& s) {
  Packet p = fake::make_frame(pool, s);
  fake::wr16(p.frame() + checksum_field(s), fake::full_l4_checksum(p.frame(), p.frame_size()));
  return p;
}

// The sender's kernel left the checksum to the "hardware": NEEDS_CSUM, the field holding the pseudo-header sum.
Packet partial(BufferPool& pool, const FrameSpec& s) {
  Packet p = complete(pool, s);
  auto* h = reinterpret_cast<virtio_net_hdr*>(p.buf.data());
  h->flags = VIRTIO_NET_HDR_F_NEEDS_CSUM;
  h->csum_start = static_cast<uint16_t>(fake::l4_offset(s));
  h->csum_offset = static_cast<uint16_t>(checksum_field(s) - fake::l4_offset(s));
  // Field = ~(full checksum over L4 with field 0) minus the L4 bytes' own sum = the pseudo-header's sum: set the
  // field to 0, then to what makes a receiver's completion give the right value.
  fake::wr16(p.frame() + checksum_field(s), 0);
  const uint16_t l4_sum =
      fake::fold16(fake::add_words(p.frame() + fake::l4_offset(s), p.frame_size() - fake::l4_offset(s)));
  const uint16_t full = fake::full_l4_checksum(p.frame(), p.frame_size());
  // complete: ~(pseudo + l4) == full  =>  pseudo = ~full - l4 (ones' complement)
  const uint16_t pseudo =
      fake::fold16(static_cast<uint16_t>(~full) + static_cast<uint32_t>(static_cast<uint16_t>(~l4_sum)));
  fake::wr16(p.frame() + checksum_field(s), pseudo);
  Packet check = copy(pool, p);
  EXPECT_EQ(fake::complete_partial_checksum(check), full);
  return p;
}

bool checksum_ok(const Packet& p, const FrameSpec& s) {
  return fake::rd16(p.frame() + checksum_field(s)) == fake::full_l4_checksum(p.frame(), p.frame_size());
}

TEST(Corrupter, OneBitOfThePayloadAndTheChecksumNoLongerMatches) {
  BufferPool pool;
  Corrupter c(RandomStream(1, 2));
  for (bool v6 : {false, true}) {
    for (uint8_t proto : {fake::kUdp, fake::kTcp}) {
      FrameSpec s;
      s.v6 = v6, s.proto = proto, s.payload = 300;
      for (int i = 0; i < 200; ++i) {
        Packet p = complete(pool, s), before = copy(pool, p);
        c.corrupt(p);
        const Diff d = diff(before, p);
        ASSERT_EQ(d.bits, 1);
        EXPECT_GE(d.at[0], fake::payload_offset(s));
        EXPECT_FALSE(checksum_ok(p, s));
      }
    }
  }
}

// With NEEDS_CSUM the checksum is filled in over the undamaged bytes and the flag cleared, so the receiving
// kernel checks it (and fails), instead of trusting a CHECKSUM_PARTIAL packet.
TEST(Corrupter, CompletesAPartialChecksumBeforeTheFlip) {
  BufferPool pool;
  Corrupter c(RandomStream(2, 2));
  for (bool v6 : {false, true}) {
    for (uint8_t proto : {fake::kUdp, fake::kTcp}) {
      FrameSpec s;
      s.v6 = v6, s.proto = proto, s.payload = 500;
      Packet p = partial(pool, s);
      const uint16_t right = fake::full_l4_checksum(p.frame(), p.frame_size());
      c.corrupt(p);
      EXPECT_FALSE(p.vnet().flags & VIRTIO_NET_HDR_F_NEEDS_CSUM);
      EXPECT_EQ(fake::rd16(p.frame() + checksum_field(s)), right);  // the undamaged packet's
      EXPECT_FALSE(checksum_ok(p, s));
    }
  }
}

TEST(Corrupter, WithoutPayloadTheChecksumItselfIsHit) {
  BufferPool pool;
  Corrupter c(RandomStream(3, 2));
  FrameSpec s;
  s.proto = fake::kTcp, s.payload = 0, s.tcp_option_bytes = 12;
  for (int i = 0; i < 50; ++i) {
    Packet p = complete(pool, s), before = copy(pool, p);
    c.corrupt(p);
    const Diff d = diff(before, p);
    ASSERT_EQ(d.bits, 1);
    EXPECT_TRUE(d.at[0] == checksum_field(s) || d.at[0] == checksum_field(s) + 1) << d.at[0];
    EXPECT_FALSE(checksum_ok(p, s));
  }
}

// Over many draws every payload byte is hit now and then, and nothing else ever is.
TEST(Corrupter, BitsSpreadOverThePayload) {
  BufferPool pool;
  Corrupter c(RandomStream(4, 2));
  FrameSpec s;
  s.payload = 16;
  std::vector<int> hits(16, 0);
  for (int i = 0; i < 4000; ++i) {
    Packet p = complete(pool, s), before = copy(pool, p);
    c.corrupt(p);
    ++hits.at(diff(before, p).at[0] - fake::payload_offset(s));
  }
  for (int h : hits) EXPECT_NEAR(h, 250, 5 * std::sqrt(250.0));
}

}  // namespace
}  // namespace tracemod
