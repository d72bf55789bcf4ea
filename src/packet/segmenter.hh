// Splits a TCP or UDP GSO super-frame into the wire packets it stands for, as the kernel's software GSO would:
// per segment IP length, IPv4 ID, TCP sequence number and flags are fixed up; the L4 checksum is left
// partial (pseudo-header only) for the receiving kernel to finish, so the payload is copied once and never summed.
#pragma once

#include <algorithm>
#include <functional>

#include "packet/buffer_pool.hh"
#include "packet/packet.hh"

namespace tracemod {

// The wire packets a frame stands for: COUNT segments, each HEADER bytes of IP and L4 header followed by up
// to MSS bytes of the frame's PAYLOAD bytes. A plain frame is one segment whose header is its whole IP packet.
struct SegmentShape {
  uint32_t count, header, mss, payload;
  // IP bytes of segment I, and of all of them.
  uint32_t ip_bytes(uint32_t i) const { return header + std::min(mss, payload - i * mss); }
  uint32_t total_ip_bytes() const { return count * header + payload; }
};
SegmentShape segment_shape(const Packet& p);

// Emits each segment of P in order. Returns false (emitting nothing) if P is not a GSO frame we can split.
bool segment_gso(const Packet& p, BufferPool& pool, const std::function<void(Packet&&)>& emit);

// What segment_gso would emit, without copying payload: for each segment in order, its Ethernet, IP and L4
// headers as the wire carries them (in a scratch buffer valid during the call) and where its payload lies in
// P. Returns false (calling nothing) if P is not a GSO frame we can split.
struct SegmentView {
  const uint8_t* headers;
  uint32_t header_size;  // bytes from the Ethernet header to the end of the L4 header
  const uint8_t* payload;
  uint32_t payload_size;
};
bool view_segments(const Packet& p, const std::function<void(const SegmentView&)>& each);

}  // namespace tracemod
