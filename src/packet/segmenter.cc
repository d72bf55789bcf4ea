#include "packet/segmenter.hh"

#include <arpa/inet.h>

#include <algorithm>
#include <vector>

namespace tracemod {
namespace {

constexpr uint16_t kEthIPv4 = 0x0800, kEthIPv6 = 0x86DD;
constexpr uint8_t kProtoTcp = 6, kProtoUdp = 17;
constexpr uint8_t kTcpFin = 0x01, kTcpPsh = 0x08, kTcpCwr = 0x80;

uint16_t get16(const uint8_t* p) {
  return static_cast<uint16_t>(p[0] << 8 | p[1]);
}
uint32_t get32(const uint8_t* p) {
  return static_cast<uint32_t>(get16(p)) << 16 | get16(p + 2);
}
void put16(uint8_t* p, uint16_t v) {
  p[0] = static_cast<uint8_t>(v >> 8);
  p[1] = static_cast<uint8_t>(v);
}
void put32(uint8_t* p, uint32_t v) {
  put16(p, static_cast<uint16_t>(v >> 16));
  put16(p + 2, static_cast<uint16_t>(v));
}

uint32_t sum16(const uint8_t* p, size_t n, uint32_t sum = 0) {
  for (size_t i = 0; i + 1 < n; i += 2) sum += get16(p + i);
  if (n & 1) sum += static_cast<uint32_t>(p[n - 1]) << 8;
  return sum;
}
uint16_t fold(uint32_t sum) {
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  return static_cast<uint16_t>(sum);
}

// Where the headers are, or nullopt-like ok=false when the frame is not one we split.
struct Layout {
  bool ok = false, v4 = false, tcp = false;
  uint32_t l3 = kEthernetHeaderSize, l4 = 0, payload = 0;
};

Layout parse(const Packet& p) {
  Layout l;
  const uint8_t* f = p.frame();
  const uint32_t n = p.frame_size();
  const uint8_t type = p.vnet().gso_type & static_cast<uint8_t>(~VIRTIO_NET_HDR_GSO_ECN);
  // A UDP GSO frame with a tiny gso_size may be shorter than Ethernet + 40 bytes and still be several packets.
  if (n < kEthernetHeaderSize + 20 || p.vnet().gso_size == 0) return l;
  const uint16_t eth = get16(f + 12);
  if (type == VIRTIO_NET_HDR_GSO_TCPV4 || type == VIRTIO_NET_HDR_GSO_TCPV6)
    l.tcp = true;
  else if (type != VIRTIO_NET_HDR_GSO_UDP_L4)
    return l;
  if (eth == kEthIPv4) {
    l.v4 = true;
    l.l4 = l.l3 + (f[l.l3] & 0x0f) * 4u;
  } else if (eth == kEthIPv6) {
    l.l4 = l.l3 + 40;
  } else {
    return l;
  }
  if (p.vnet().flags & VIRTIO_NET_HDR_F_NEEDS_CSUM) l.l4 = p.vnet().csum_start;  // covers IPv6 extension headers
  // The IP header (for IPv6, its addresses) must lie before L4, whatever csum_start claims.
  if (l.l4 < l.l3 + (l.v4 ? 20u : 40u)) return l;
  // The L4 header must fit: 20 bytes for TCP, 8 for UDP; a TCP data offset must cover the 20 (below, the
  // fields fix_headers() writes would lie past the headers it copies).
  if (l.l4 + (l.tcp ? 20u : 8u) > n) return l;
  const uint32_t l4_header = l.tcp ? (f[l.l4 + 12] >> 4) * 4u : 8u;
  if (l4_header < (l.tcp ? 20u : 8u)) return l;
  l.payload = l.l4 + l4_header;
  l.ok = l.payload < n;
  return l;
}

// Sum of the pseudo-header for an L4 segment of L4_LEN bytes (not inverted: the receiver completes it).
uint16_t pseudo_header(const uint8_t* f, const Layout& l, uint32_t l4_len) {
  const uint8_t proto = l.tcp ? kProtoTcp : kProtoUdp;
  uint32_t s = l.v4 ? sum16(f + l.l3 + 12, 8) : sum16(f + l.l3 + 8, 32);
  s += proto + (l4_len >> 16) + (l4_len & 0xffff);
  return fold(s);
}

void fix_headers(uint8_t* f, const Layout& l, uint32_t chunk, uint32_t index, uint32_t count, uint32_t mss) {
  const uint32_t l4_len = l.payload - l.l4 + chunk;
  if (l.v4) {
    put16(f + l.l3 + 2, static_cast<uint16_t>(l.payload - l.l3 + chunk));
    put16(f + l.l3 + 4, static_cast<uint16_t>(get16(f + l.l3 + 4) + index));
    put16(f + l.l3 + 10, 0);
    put16(f + l.l3 + 10, static_cast<uint16_t>(~fold(sum16(f + l.l3, l.l4 - l.l3))));
  } else {
    put16(f + l.l3 + 4, static_cast<uint16_t>(l.payload - l.l3 - 40 + chunk));
  }
  if (l.tcp) {
    put32(f + l.l4 + 4, get32(f + l.l4 + 4) + index * mss);
    if (index + 1 != count) f[l.l4 + 13] &= static_cast<uint8_t>(~(kTcpFin | kTcpPsh));
    if (index != 0) f[l.l4 + 13] &= static_cast<uint8_t>(~kTcpCwr);
    put16(f + l.l4 + 16, pseudo_header(f, l, l4_len));
  } else {
    put16(f + l.l4 + 4, static_cast<uint16_t>(l4_len));
    put16(f + l.l4 + 6, pseudo_header(f, l, l4_len));
  }
}

}  // namespace

uint32_t count_segments(const Packet& p) {
  return segment_shape(p).count;
}

uint64_t wire_ip_bytes(const Packet& p) {
  return p.is_gso() ? segment_shape(p).total_ip_bytes() : p.ip_size();
}

SegmentShape segment_shape(const Packet& p) {
  const Layout l = parse(p);
  if (!p.is_gso() || !l.ok) return {1, p.ip_size(), 0, 0};
  const uint32_t mss = p.vnet().gso_size;
  const uint32_t total = p.frame_size() - l.payload;
  return {(total + mss - 1) / mss, l.payload - l.l3, mss, total};
}

bool view_segments(const Packet& p, const std::function<void(const SegmentView&)>& each) {
  const Layout l = parse(p);
  if (!l.ok) return false;
  const uint32_t mss = p.vnet().gso_size;
  const uint32_t total = p.frame_size() - l.payload;
  const uint32_t count = (total + mss - 1) / mss;
  thread_local std::vector<uint8_t> headers;  // grows to the largest headers seen, then never allocates
  if (headers.size() < l.payload) headers.resize(l.payload);
  for (uint32_t i = 0; i < count; ++i) {
    const uint32_t chunk = std::min(mss, total - i * mss);
    std::memcpy(headers.data(), p.frame(), l.payload);
    fix_headers(headers.data(), l, chunk, i, count, mss);
    each({headers.data(), l.payload, p.frame() + l.payload + i * mss, chunk});
  }
  return true;
}

bool segment_gso(const Packet& p, BufferPool& pool, const std::function<void(Packet&&)>& emit) {
  const Layout l = parse(p);
  return view_segments(p, [&](const SegmentView& v) {
    Packet s;
    s.size = kVnetHeaderSize + v.header_size + v.payload_size;
    s.buf = pool.get(s.size);
    s.arrival = p.arrival;
    s.release = p.release;
    virtio_net_hdr h{};
    h.flags = VIRTIO_NET_HDR_F_NEEDS_CSUM;
    h.gso_type = VIRTIO_NET_HDR_GSO_NONE;
    h.hdr_len = static_cast<uint16_t>(v.header_size);
    h.csum_start = static_cast<uint16_t>(l.l4);
    h.csum_offset = l.tcp ? 16 : 6;
    std::memcpy(s.buf.data(), &h, sizeof h);
    std::memcpy(s.frame(), v.headers, v.header_size);
    std::memcpy(s.frame() + v.header_size, v.payload, v.payload_size);
    emit(std::move(s));
  });
}

}  // namespace tracemod
