#include "disciplines/ecn.hh"

namespace tracemod {
namespace {

constexpr uint32_t kIpHeader = kEthernetHeaderSize;  // where the IP header starts in the frame

// 4 for IPv4, 6 for IPv6 (checked against the Ethernet type), 0 for anything else or a truncated header.
int ip_version(const Packet& p) {
  const uint8_t* f = p.frame();
  const uint32_t n = p.frame_size();
  if (n < kIpHeader + 20) return 0;
  const uint16_t type = static_cast<uint16_t>(f[12] << 8 | f[13]);
  if (type == 0x0800 && f[kIpHeader] >> 4 == 4) return 4;
  if (type == 0x86DD && n >= kIpHeader + 40 && f[kIpHeader] >> 4 == 6) return 6;
  return 0;
}

uint16_t ones_add(uint32_t a, uint32_t b) {
  uint32_t s = a + b;
  while (s >> 16) s = (s & 0xffff) + (s >> 16);
  return static_cast<uint16_t>(s);
}

}  // namespace

uint8_t ecn_field(const Packet& p) {
  const uint8_t* ip = p.frame() + kIpHeader;
  switch (ip_version(p)) {
    case 4:
      return ip[1] & 3;  // the low bits of the TOS byte
    case 6:
      return (ip[1] >> 4) & 3;  // the low bits of the traffic class, which straddles bytes 0 and 1
    default:
      return kNotEct;
  }
}

bool mark_ce(Packet& p) {
  const uint8_t ecn = ecn_field(p);
  if (ecn == kNotEct) return false;
  if (ecn == kCe) return true;
  uint8_t* ip = p.frame() + kIpHeader;
  if (ip_version(p) == 6) {
    ip[1] |= kCe << 4;
    return true;
  }
  // RFC 1624 eqn. 3: HC' = ~(~HC + ~m + m'), m the 16-bit word holding the TOS byte.
  const uint16_t old_word = static_cast<uint16_t>(ip[0] << 8 | ip[1]);
  ip[1] |= kCe;
  const uint16_t new_word = static_cast<uint16_t>(ip[0] << 8 | ip[1]);
  const uint16_t check = static_cast<uint16_t>(ip[10] << 8 | ip[11]);
  const uint16_t updated = static_cast<uint16_t>(
      ~ones_add(ones_add(static_cast<uint16_t>(~check), static_cast<uint16_t>(~old_word)), new_word));
  ip[10] = static_cast<uint8_t>(updated >> 8);
  ip[11] = static_cast<uint8_t>(updated);
  return true;
}

}  // namespace tracemod
