#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "fake.hh"
#include "packet/segmenter.hh"

namespace tracemod {
namespace {

using fake::FrameSpec;
using fake::rd16;
using fake::rd32;

// Splits P; records whether segment_gso said it could.
std::vector<Packet> split(BufferPool& pool, const Packet& p, bool* ok = nullptr) {
  std::vector<Packet> segs;
  const bool r = segment_gso(p, pool, [&](Packet&& s) { segs.push_back(std::move(s)); });
  if (ok) *ok = r;
  return segs;
}

uint8_t expected_flags(uint8_t original, size_t index, size_t count) {
  uint8_t f = original;
  if (index + 1 != count) f &= static_cast<uint8_t>(~(fake::kFin | fake::kPsh));
  if (index != 0) f &= static_cast<uint8_t>(~fake::kCwr);
  return f;
}

// Every property a wire segment of the super-frame described by S must have.
void expect_wire_segments(const FrameSpec& s, std::vector<Packet>& segs) {
  const bool tcp = s.proto == fake::kTcp;
  const uint32_t mss = s.gso_size, l3 = fake::l3_offset(), l4 = fake::l4_offset(s), pay = fake::payload_offset(s);
  const size_t count = (s.payload + mss - 1) / mss;
  const std::vector<uint8_t> original = fake::frame_bytes(s);
  ASSERT_EQ(segs.size(), count);
  std::vector<uint8_t> joined;
  for (size_t i = 0; i < count; ++i) {
    SCOPED_TRACE("segment " + std::to_string(i) + " of " + std::to_string(count));
    Packet& g = segs[i];
    const uint8_t* f = g.frame();
    const uint32_t chunk = std::min<uint32_t>(mss, s.payload - static_cast<uint32_t>(i) * mss);
    ASSERT_EQ(g.frame_size(), pay + chunk);
    EXPECT_FALSE(g.is_gso());
    EXPECT_EQ(g.segments(), 1u);
    EXPECT_EQ(g.vnet().gso_type, VIRTIO_NET_HDR_GSO_NONE);
    EXPECT_EQ(g.vnet().flags, VIRTIO_NET_HDR_F_NEEDS_CSUM);
    EXPECT_EQ(g.vnet().csum_start, l4);
    EXPECT_EQ(g.vnet().csum_offset, tcp ? 16 : 6);
    EXPECT_TRUE(std::equal(f, f + 12, original.begin())) << "Ethernet addresses";
    if (s.v6) {
      EXPECT_EQ(rd16(f + l3 + 4), pay - l3 - 40 + chunk) << "IPv6 payload length";
      EXPECT_TRUE(std::equal(f + l3 + 8, f + l3 + 40, original.begin() + l3 + 8)) << "IPv6 addresses";
    } else {
      EXPECT_EQ(rd16(f + l3 + 2), pay - l3 + chunk) << "IPv4 total length";
      EXPECT_EQ(rd16(f + l3 + 4), static_cast<uint16_t>(s.ip_id + i)) << "IPv4 ID";
      EXPECT_EQ(fake::inet_checksum(f + l3, 20), 0) << "IPv4 header checksum does not verify";
      EXPECT_EQ(f[l3 + 9], s.proto);
      EXPECT_TRUE(std::equal(f + l3 + 12, f + l3 + 20, original.begin() + l3 + 12)) << "IPv4 addresses";
    }
    if (tcp) {
      EXPECT_EQ(rd32(f + l4 + 4), s.seq + static_cast<uint32_t>(i) * mss) << "TCP sequence number";
      EXPECT_EQ(rd32(f + l4 + 8), rd32(&original[l4 + 8])) << "TCP ack number";
      EXPECT_EQ(f[l4 + 13], expected_flags(s.tcp_flags, i, count)) << "TCP flags";
      EXPECT_TRUE(std::equal(f + l4 + 20, f + pay, original.begin() + l4 + 20)) << "TCP options";
    } else {
      EXPECT_EQ(rd16(f + l4 + 4), 8 + chunk) << "UDP length";
    }
    joined.insert(joined.end(), f + pay, f + pay + chunk);
    // Finishing the partial checksum as the receiver would must give the real checksum of the segment.
    const uint16_t full = fake::full_l4_checksum(f, g.frame_size());
    EXPECT_EQ(fake::complete_partial_checksum(g), full) << "completed L4 checksum";
  }
  EXPECT_TRUE(std::equal(joined.begin(), joined.end(), original.begin() + pay, original.end()))
      << "payload bytes, concatenated, differ from the original";
  EXPECT_EQ(joined.size(), s.payload);
}

FrameSpec gso_spec(bool v6, uint8_t proto, uint16_t mss, uint32_t payload) {
  FrameSpec s;
  s.v6 = v6;
  s.proto = proto;
  s.gso_size = mss;
  s.payload = payload;
  s.pattern = 0x5b;
  return s;
}

TEST(Segmenter, TcpV4SplitsIntoFullMssSegments) {
  BufferPool pool;
  const FrameSpec s = gso_spec(false, fake::kTcp, 1448, 1448 * 4);
  bool ok = false;
  auto segs = split(pool, fake::make_frame(pool, s), &ok);
  EXPECT_TRUE(ok);
  EXPECT_EQ(segs.size(), 4u);
  expect_wire_segments(s, segs);
}

TEST(Segmenter, TcpV4LastSegmentIsShortAndOddLength) {
  BufferPool pool;
  const FrameSpec s = gso_spec(false, fake::kTcp, 1000, 3 * 1000 + 1);
  auto segs = split(pool, fake::make_frame(pool, s));
  ASSERT_EQ(segs.size(), 4u);
  EXPECT_EQ(segs[3].frame_size(), fake::payload_offset(s) + 1);
  expect_wire_segments(s, segs);
}

TEST(Segmenter, TcpV6WithTimestampOptions) {
  BufferPool pool;
  FrameSpec s = gso_spec(true, fake::kTcp, 1428, 10000);
  s.tcp_option_bytes = 12;
  auto segs = split(pool, fake::make_frame(pool, s));
  EXPECT_EQ(segs.size(), 8u);  // 7 * 1428 = 9996, then 4 bytes
  expect_wire_segments(s, segs);
}

TEST(Segmenter, UdpL4OverIpv4) {
  BufferPool pool;
  const FrameSpec s = gso_spec(false, fake::kUdp, 1200, 5000);
  auto segs = split(pool, fake::make_frame(pool, s));
  EXPECT_EQ(segs.size(), 5u);
  expect_wire_segments(s, segs);
}

TEST(Segmenter, UdpL4OverIpv6) {
  BufferPool pool;
  const FrameSpec s = gso_spec(true, fake::kUdp, 1232, 1232 * 3 + 333);
  auto segs = split(pool, fake::make_frame(pool, s));
  EXPECT_EQ(segs.size(), 4u);
  expect_wire_segments(s, segs);
}

TEST(Segmenter, LargestSuperFrame) {
  BufferPool pool;
  const FrameSpec s = gso_spec(false, fake::kTcp, 1448, 65535 - 40);
  auto segs = split(pool, fake::make_frame(pool, s));
  EXPECT_EQ(segs.size(), 46u);
  expect_wire_segments(s, segs);
}

TEST(Segmenter, UdpGsoWithTinySegmentsIsStillSplit) {
  // Frames shorter than Ethernet + 40 bytes: UDP_SEGMENT allows a gso_size this small.
  BufferPool pool;
  for (bool v6 : {false, true}) {
    SCOPED_TRACE(v6 ? "IPv6" : "IPv4");
    const FrameSpec s = gso_spec(v6, fake::kUdp, 4, 10);
    const Packet p = fake::make_frame(pool, s);
    EXPECT_EQ(count_segments(p), 3u);
    auto segs = split(pool, p);
    expect_wire_segments(s, segs);
  }
}

TEST(Segmenter, FinAndPshOnlyOnLastCwrOnlyOnFirst) {
  BufferPool pool;
  FrameSpec s = gso_spec(false, fake::kTcp, 500, 1500);
  s.tcp_flags = fake::kFin | fake::kPsh | fake::kAck | fake::kCwr;
  auto segs = split(pool, fake::make_frame(pool, s));
  ASSERT_EQ(segs.size(), 3u);
  const uint32_t flags_at = fake::l4_offset(s) + 13;
  EXPECT_EQ(segs[0].frame()[flags_at], fake::kAck | fake::kCwr);
  EXPECT_EQ(segs[1].frame()[flags_at], fake::kAck);
  EXPECT_EQ(segs[2].frame()[flags_at], fake::kAck | fake::kFin | fake::kPsh);
}

TEST(Segmenter, Ipv4IdAndTcpSequenceWrapAround) {
  BufferPool pool;
  FrameSpec s = gso_spec(false, fake::kTcp, 200, 800);
  s.ip_id = 0xfffe;
  s.seq = 0xffffff00;
  auto segs = split(pool, fake::make_frame(pool, s));
  ASSERT_EQ(segs.size(), 4u);
  const uint16_t ids[] = {0xfffe, 0xffff, 0x0000, 0x0001};
  const uint32_t seqs[] = {0xffffff00, 0xffffffc8, 0x00000090, 0x00000158};
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(fake::ip_id_of(segs[i]), ids[i]) << i;
    EXPECT_EQ(rd32(segs[i].frame() + fake::l4_offset(s) + 4), seqs[i]) << i;
  }
  expect_wire_segments(s, segs);
}

TEST(Segmenter, EcnBitInGsoTypeIsIgnored) {
  BufferPool pool;
  FrameSpec s = gso_spec(false, fake::kTcp, 1000, 2500);
  s.gso_type = VIRTIO_NET_HDR_GSO_TCPV4 | VIRTIO_NET_HDR_GSO_ECN;
  auto segs = split(pool, fake::make_frame(pool, s));
  expect_wire_segments(s, segs);
}

TEST(Segmenter, FrameWithoutNeedsCsumFlagIsParsedFromIpHeader) {
  BufferPool pool;
  const FrameSpec s = gso_spec(false, fake::kTcp, 1000, 2500);
  virtio_net_hdr h = fake::vnet_for(s);
  h.flags = 0;
  h.csum_start = h.csum_offset = 0;
  auto segs = split(pool, fake::make_packet(pool, fake::frame_bytes(s), h));
  expect_wire_segments(s, segs);
}

TEST(Segmenter, SegmentsKeepArrivalAndReleaseTimes) {
  BufferPool pool;
  Packet p = fake::tcp_gso(pool, true, 1000, 3000, 4242);
  p.release = 9999;
  auto segs = split(pool, p);
  ASSERT_EQ(segs.size(), 3u);
  for (auto& g : segs) {
    EXPECT_EQ(g.arrival, 4242);
    EXPECT_EQ(g.release, 9999);
  }
}

TEST(Segmenter, OriginalFrameIsLeftUnchanged) {
  BufferPool pool;
  const FrameSpec s = gso_spec(true, fake::kUdp, 1000, 4321);
  const Packet p = fake::make_frame(pool, s);
  const std::vector<uint8_t> before(p.buf.data(), p.buf.data() + p.size);
  split(pool, p);
  EXPECT_TRUE(std::equal(before.begin(), before.end(), p.buf.data()));
}

TEST(Segmenter, CountSegmentsAgreesWithSplit) {
  BufferPool pool;
  for (bool v6 : {false, true})
    for (uint8_t proto : {fake::kTcp, fake::kUdp})
      for (uint16_t mss : {536, 1000, 1448})
        for (uint32_t payload : {1u, 535u, 536u, 537u, 1448u, 2897u, 10000u, 60000u}) {
          const FrameSpec s = gso_spec(v6, proto, mss, payload);
          const Packet p = fake::make_frame(pool, s);
          const uint32_t expected = (payload + mss - 1) / mss;
          EXPECT_EQ(count_segments(p), expected) << v6 << " " << +proto << " " << mss << " " << payload;
          EXPECT_EQ(p.segments(), expected);
          EXPECT_EQ(split(pool, p).size(), expected);
        }
}

TEST(Segmenter, PlainFrameIsNotSplit) {
  BufferPool pool;
  const Packet p = fake::udp4(pool, 3000);
  bool ok = true;
  EXPECT_TRUE(split(pool, p, &ok).empty());
  EXPECT_FALSE(ok);
  EXPECT_EQ(count_segments(p), 1u);
  EXPECT_EQ(p.segments(), 1u);
}

TEST(Segmenter, GsoTypeWithZeroSizeIsNotSplit) {
  BufferPool pool;
  const FrameSpec s = gso_spec(false, fake::kTcp, 1000, 3000);
  virtio_net_hdr h = fake::vnet_for(s);
  h.gso_size = 0;
  const Packet p = fake::make_packet(pool, fake::frame_bytes(s), h);
  bool ok = true;
  EXPECT_TRUE(split(pool, p, &ok).empty());
  EXPECT_FALSE(ok);
  EXPECT_EQ(p.segments(), 1u);
}

TEST(Segmenter, UfoGsoTypeIsNotSplit) {
  BufferPool pool;
  FrameSpec s = gso_spec(false, fake::kUdp, 1000, 3000);
  s.gso_type = VIRTIO_NET_HDR_GSO_UDP;  // IP fragmentation offload: not something we segment
  const Packet p = fake::make_frame(pool, s);
  bool ok = true;
  EXPECT_TRUE(split(pool, p, &ok).empty());
  EXPECT_FALSE(ok);
  EXPECT_EQ(count_segments(p), 1u);
}

TEST(Segmenter, NonIpEthertypeIsNotSplit) {
  BufferPool pool;
  const FrameSpec s = gso_spec(false, fake::kTcp, 1000, 3000);
  std::vector<uint8_t> f = fake::frame_bytes(s);
  fake::wr16(&f[12], 0x0806);  // ARP
  const Packet p = fake::make_packet(pool, f, fake::vnet_for(s));
  bool ok = true;
  EXPECT_TRUE(split(pool, p, &ok).empty());
  EXPECT_FALSE(ok);
  EXPECT_EQ(count_segments(p), 1u);
}

TEST(Segmenter, TcpDataOffsetBelowFiveIsNotSplit) {
  // Its fields (sequence number, flags, checksum) would be written past the headers copied for each segment: a
  // heap overflow found by fuzz/pcap.cc (fuzz/regressions/pcap/tcp-data-offset-0).
  BufferPool pool;
  for (uint8_t offset = 0; offset < 5; ++offset) {
    const FrameSpec s = gso_spec(false, fake::kTcp, 1000, 3000);
    std::vector<uint8_t> f = fake::frame_bytes(s);
    f[fake::l4_offset(s) + 12] = static_cast<uint8_t>(offset << 4);
    const Packet p = fake::make_packet(pool, f, fake::vnet_for(s));
    bool ok = true;
    EXPECT_TRUE(split(pool, p, &ok).empty()) << int{offset};
    EXPECT_FALSE(ok);
    EXPECT_EQ(count_segments(p), 1u);
  }
}

TEST(Segmenter, HeaderOnlyGsoFrameIsNotSplit) {
  BufferPool pool;
  const FrameSpec s = gso_spec(false, fake::kTcp, 1000, 0);
  const Packet p = fake::make_frame(pool, s);
  bool ok = true;
  EXPECT_TRUE(split(pool, p, &ok).empty());
  EXPECT_FALSE(ok);
}

}  // namespace
}  // namespace tracemod
