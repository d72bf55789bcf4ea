// Corruption as a transparent link delivers it (Seawind's "corrupt" error mode; netem's `corrupt`): one bit of
// a packet is flipped where the receiver's checksum covers it, so the receiving stack sees a damaged packet and
// discards it, counting it (InCsumErrors in /proc/net/snmp), as it would one hit by noise on a real link.
#pragma once

#include "packet/packet.hh"
#include "util/random.hh"

namespace tracemod {

class Corrupter {
 public:
  explicit Corrupter(RandomStream random) : random_(random) {}

  // Flips one bit of P, a single wire packet (split a GSO frame first). The bit is drawn uniformly from the
  // transport payload (TCP, UDP, ICMP data; beyond the transport header); a packet without payload has a bit
  // of its transport checksum flipped instead, and a packet with no transport header we know (another
  // protocol, a later IP fragment) a bit of its IP payload. The IP header is never touched, so the packet
  // still reaches the receiver's transport.
  //
  // A packet whose checksum is still to be filled in (virtio-net NEEDS_CSUM: the sender's kernel left it to
  // the "hardware", as it does on veth) gets it filled in first, over the undamaged bytes, and is passed on as
  // complete: otherwise the receiving kernel would trust it unchecked (CHECKSUM_PARTIAL), or a NIC would
  // compute a checksum that matches the damage. One flipped bit always changes the Internet checksum, so the
  // receiver detects it -- unless the packet carries no checksum at all (UDP over IPv4 with checksum 0), which
  // then arrives silently damaged, as it would on a real link.
  void corrupt(Packet& p);

 private:
  RandomStream random_;
};

}  // namespace tracemod
