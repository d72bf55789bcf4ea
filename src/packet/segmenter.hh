// Splits a TCP or UDP GSO super-frame into the wire packets it stands for, as the kernel's software GSO would:
// per segment IP length, IPv4 ID, TCP sequence number and flags are fixed up; the L4 checksum is left
// partial (pseudo-header only) for the receiving kernel to finish, so the payload is copied once and never summed.
#pragma once

#include <functional>

#include "packet/buffer_pool.hh"
#include "packet/packet.hh"

namespace tracemod {

// Emits each segment of P in order. Returns false (emitting nothing) if P is not a GSO frame we can split.
bool segment_gso(const Packet& p, BufferPool& pool, const std::function<void(Packet&&)>& emit);

}  // namespace tracemod
