#include "channel/corrupt.hh"

#include <algorithm>

namespace tracemod {
namespace {

constexpr uint8_t kTcp = 6, kUdp = 17, kIcmp = 1, kIcmp6 = 58;
constexpr uint32_t kL3 = kEthernetHeaderSize;

uint16_t get16(const uint8_t* p) {
  return static_cast<uint16_t>(p[0] << 8 | p[1]);
}

// Where a packet's layers are: L4 is the transport header (if FIRST, the packet carries it), END the end of
// the IP packet (Ethernet padding excluded).
struct Layers {
  bool ok = false, first = true;
  uint8_t proto = 0;
  uint32_t l4 = 0, end = 0;
};

// IPv6 extension headers we step over to reach the transport header.
bool is_extension(uint8_t next) {
  return next == 0 || next == 43 || next == 60 || next == 44 || next == 51;
}

Layers parse_ipv6(const uint8_t* f, uint32_t n) {
  Layers l;
  l.end = std::min(n, kL3 + 40 + get16(f + kL3 + 4));
  uint8_t next = f[kL3 + 6];
  uint32_t at = kL3 + 40;
  while (is_extension(next) && at + 8 <= l.end) {
    if (next == 44 && (get16(f + at + 2) & 0xfff8) != 0) l.first = false;  // a later fragment
    const uint32_t len = next == 44 ? 8 : next == 51 ? (f[at + 1] + 2u) * 4 : (f[at + 1] + 1u) * 8;
    next = f[at];
    at += len;
  }
  l.proto = next;
  l.l4 = at;
  l.ok = at <= l.end && !is_extension(next);
  return l;
}

Layers parse(const Packet& p) {
  const uint8_t* f = p.frame();
  const uint32_t n = p.frame_size();
  Layers l;
  if (n < kL3 + 20) return l;
  const uint16_t type = get16(f + 12);
  if (type == 0x86DD && n >= kL3 + 40) return parse_ipv6(f, n);
  if (type != 0x0800) return l;
  const uint32_t ihl = (f[kL3] & 0x0f) * 4u;
  l.proto = f[kL3 + 9];
  l.l4 = kL3 + ihl;
  l.end = std::min(n, kL3 + get16(f + kL3 + 2));
  l.first = (get16(f + kL3 + 6) & 0x1fff) == 0;
  l.ok = ihl >= 20 && l.l4 <= l.end;
  return l;
}

// Fills in the checksum the sender's kernel left partial: the field holds the pseudo-header's sum; the sum of
// everything from csum_start on, inverted, replaces it (0 is sent as 0xffff, as the kernel does).
void complete_checksum(Packet& p, uint32_t end) {
  auto* h = reinterpret_cast<virtio_net_hdr*>(p.buf.data());
  uint8_t* f = p.frame();
  const uint32_t start = h->csum_start, field = start + h->csum_offset;
  h->flags = static_cast<uint8_t>(h->flags & ~VIRTIO_NET_HDR_F_NEEDS_CSUM);
  if (field + 2 > end) return;
  uint32_t sum = 0;
  for (uint32_t i = start; i + 1 < end; i += 2) sum += get16(f + i);
  if ((end - start) & 1) sum += static_cast<uint32_t>(f[end - 1]) << 8;
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  uint16_t check = static_cast<uint16_t>(~sum);
  if (check == 0) check = 0xffff;
  f[field] = static_cast<uint8_t>(check >> 8);
  f[field + 1] = static_cast<uint8_t>(check);
}

// The bytes to flip a bit in: [FIRST, LAST).
struct Span {
  uint32_t first, last;
};

Span target(const Packet& p, const Layers& l) {
  const uint8_t* f = p.frame();
  if (!l.ok) return {kL3, p.frame_size()};
  if (!l.first) return {l.l4, l.end};
  uint32_t header = 0, check = 0;
  if (l.proto == kTcp && l.l4 + 20 <= l.end) {
    header = (f[l.l4 + 12] >> 4) * 4u, check = 16;
  } else if (l.proto == kUdp && l.l4 + 8 <= l.end) {
    header = 8, check = 6;
  } else if ((l.proto == kIcmp || l.proto == kIcmp6) && l.l4 + 8 <= l.end) {
    header = 8, check = 2;
  } else {
    return {l.l4, l.end};
  }
  if (l.l4 + header < l.end) return {l.l4 + header, l.end};
  return {l.l4 + check, l.l4 + check + 2};  // no payload: the checksum itself
}

}  // namespace

void Corrupter::corrupt(Packet& p) {
  const Layers l = parse(p);
  if (p.vnet().flags & VIRTIO_NET_HDR_F_NEEDS_CSUM) complete_checksum(p, l.ok ? l.end : p.frame_size());
  const Span s = target(p, l);
  if (s.last <= s.first) return;  // nothing beyond the Ethernet header: not an IP packet
  const uint64_t at = s.first + random_.below(s.last - s.first);
  p.frame()[at] ^= static_cast<uint8_t>(1u << random_.below(8));
}

}  // namespace tracemod
