// ECN marking on IPv4 (checksum kept right) and IPv6, on plain packets and GSO frames.
#include <gtest/gtest.h>

#include <vector>

#include "disciplines/ecn.hh"
#include "fake.hh"
#include "packet/segmenter.hh"

namespace tracemod {
namespace {

constexpr uint32_t kL3 = kEthernetHeaderSize;

// Sets the ECN field of P's IP header (IPv4: with a fresh header checksum).
void set_ecn(Packet& p, uint8_t ecn) {
  uint8_t* ip = p.frame() + kL3;
  if (ip[0] >> 4 == 6) {
    ip[1] = static_cast<uint8_t>((ip[1] & 0xcf) | ecn << 4);
    return;
  }
  ip[1] = static_cast<uint8_t>((ip[1] & 0xfc) | ecn);
  fake::wr16(ip + 10, 0);
  fake::wr16(ip + 10, fake::inet_checksum(ip, 20));
}

bool ipv4_checksum_ok(const Packet& p) {
  return fake::inet_checksum(p.frame() + kL3, 20) == 0;
}

TEST(Ecn, FieldOfEachKind) {
  BufferPool pool;
  for (bool v6 : {false, true}) {
    fake::FrameSpec s;
    s.v6 = v6;
    for (uint8_t e : {kNotEct, kEct1, kEct0, kCe}) {
      Packet p = fake::make_frame(pool, s);
      set_ecn(p, e);
      EXPECT_EQ(ecn_field(p), e) << v6;
    }
  }
}

TEST(Ecn, MarksEctPacketsAndKeepsTheIpv4ChecksumRight) {
  BufferPool pool;
  for (uint8_t e : {kEct1, kEct0, kCe}) {
    for (uint8_t tos_high : {0x00, 0xb8, 0xfc}) {  // DSCP bits must survive
      Packet p = fake::udp4(pool, 100);
      p.frame()[kL3 + 1] = tos_high;
      set_ecn(p, e);
      ASSERT_TRUE(mark_ce(p));
      EXPECT_EQ(ecn_field(p), kCe);
      EXPECT_EQ(p.frame()[kL3 + 1] & 0xfc, tos_high);
      EXPECT_TRUE(ipv4_checksum_ok(p)) << int(e) << " " << int(tos_high);
    }
  }
}

TEST(Ecn, LeavesNotEctPacketsAlone) {
  BufferPool pool;
  Packet p = fake::udp4(pool, 100);
  const std::vector<uint8_t> before(p.frame(), p.frame() + p.frame_size());
  EXPECT_FALSE(mark_ce(p));
  EXPECT_EQ(std::vector<uint8_t>(p.frame(), p.frame() + p.frame_size()), before);
  std::vector<uint8_t> arp(60, 0);
  arp[12] = 0x08, arp[13] = 0x06;
  Packet a = fake::make_packet(pool, arp, virtio_net_hdr{});
  EXPECT_FALSE(mark_ce(a));
}

TEST(Ecn, Ipv6TrafficClassOnlyItsEcnBits) {
  BufferPool pool;
  fake::FrameSpec s;
  s.v6 = true;
  Packet p = fake::make_frame(pool, s);
  p.frame()[kL3] = 0x6b, p.frame()[kL3 + 1] = 0x8f;  // traffic class 0xb8 (DSCP 46), flow label 0xf....
  set_ecn(p, kEct0);
  ASSERT_TRUE(mark_ce(p));
  EXPECT_EQ(p.frame()[kL3], 0x6b);
  EXPECT_EQ(p.frame()[kL3 + 1], 0xbf);
}

// A GSO frame is marked once, and every segment made from it carries CE (with a right IPv4 checksum), as the
// kernel's segmentation copies the IP header into each.
TEST(Ecn, GsoFrameMarkedOnceForAllItsSegments) {
  BufferPool pool;
  for (bool v6 : {false, true}) {
    Packet p = fake::tcp_gso(pool, v6, 1000, 5000);
    set_ecn(p, kEct0);
    ASSERT_TRUE(mark_ce(p));
    int segments = 0;
    ASSERT_TRUE(segment_gso(p, pool, [&](Packet&& s) {
      ++segments;
      EXPECT_EQ(ecn_field(s), kCe);
      if (!v6) {
        EXPECT_TRUE(ipv4_checksum_ok(s));
      }
    }));
    EXPECT_EQ(segments, 5);
  }
}

}  // namespace
}  // namespace tracemod
