// Data packets on the measured path: a fixed big-endian header, then zero padding up to the IP packet size.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

#include "util/clock.hh"

namespace tracemod::record {

enum class PacketKind : uint8_t { kData = 1, kProbe = 2 };  // a probe tells the server the client's address

struct DataHeader {
  PacketKind kind = PacketKind::kData;
  bool up = true;  // direction: client to server
  uint64_t session = 0;
  uint64_t seq = 0;
  Nanos send_ns = 0;
};

constexpr size_t kHeaderBytes = 4 + 1 + 1 + 8 + 8 + 8;
constexpr size_t kIpv4Overhead = 20 + 8, kIpv6Overhead = 40 + 8;  // IP and UDP headers
constexpr uint32_t kDefaultIpPacket = 1500;                       // one Mahimahi opportunity

void encode(const DataHeader& h, uint8_t* out);
// The header of a tracemod data packet, or nothing if BUF is not one.
std::optional<DataHeader> decode(const uint8_t* buf, size_t len);

// UDP payload bytes that make an IP packet of IP_BYTES.
inline size_t udp_payload(uint32_t ip_bytes, bool ipv6) {
  return ip_bytes - (ipv6 ? kIpv6Overhead : kIpv4Overhead);
}

}  // namespace tracemod::record
