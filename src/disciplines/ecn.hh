// Explicit Congestion Notification (RFC 3168): the two ECN bits of a packet's IP header, and marking
// Congestion Experienced where a queue would otherwise drop an ECN-capable packet.
#pragma once

#include <cstdint>

#include "packet/packet.hh"

namespace tracemod {

constexpr uint8_t kNotEct = 0, kEct1 = 1, kEct0 = 2, kCe = 3;

// The ECN field of P's IP header (kNotEct .. kCe); kNotEct for a frame that is not IPv4 or IPv6.
uint8_t ecn_field(const Packet& p);

// Sets CE in an ECN-capable packet (ECT(0) or ECT(1); one already CE stays so): the IPv4 header checksum is
// updated incrementally (RFC 1624), IPv6 has none. Returns false, changing nothing, for a Not-ECT packet, which
// the caller then drops. A GSO super-frame is marked once for all its packets: the kernel's segmentation
// (skb_segment) copies the frame's IP header, ECN bits included, into every segment, and so does segmenter.cc.
bool mark_ce(Packet& p);

}  // namespace tracemod
