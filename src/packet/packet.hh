// A frame as the ferry carries it: virtio-net header (kept so GSO super-packets cross whole) + Ethernet frame.
#pragma once

#include <cstdint>
#include <cstring>

#include "packet/buffer_pool.hh"
#include "util/clock.hh"

namespace tracemod {

// The virtio-net header AF_PACKET puts before each frame with PACKET_VNET_HDR (host byte order). Declared
// here because <linux/virtio_net.h> does not compile as C++ (a member is named `class`).
struct virtio_net_hdr {
  uint8_t flags;
  uint8_t gso_type;
  uint16_t hdr_len, gso_size, csum_start, csum_offset;
};
static_assert(sizeof(virtio_net_hdr) == 10, "virtio-net header ABI");
constexpr uint8_t VIRTIO_NET_HDR_F_NEEDS_CSUM = 1;
constexpr uint8_t VIRTIO_NET_HDR_GSO_NONE = 0, VIRTIO_NET_HDR_GSO_TCPV4 = 1, VIRTIO_NET_HDR_GSO_UDP = 3,
                  VIRTIO_NET_HDR_GSO_TCPV6 = 4, VIRTIO_NET_HDR_GSO_UDP_L4 = 5, VIRTIO_NET_HDR_GSO_ECN = 0x80;

constexpr uint32_t kVnetHeaderSize = sizeof(virtio_net_hdr);
constexpr uint32_t kEthernetHeaderSize = 14;

struct Packet {
  Buffer buf;
  uint32_t size = 0;  // bytes used in buf: virtio-net header + frame
  Nanos arrival = 0;  // when the ferry read it
  Nanos release = 0;  // when a delay line may let it go

  const virtio_net_hdr& vnet() const { return *reinterpret_cast<const virtio_net_hdr*>(buf.data()); }
  uint8_t* frame() const { return buf.data() + kVnetHeaderSize; }
  uint32_t frame_size() const { return size - kVnetHeaderSize; }
  // Bytes of IP packet (what a link's capacity is charged for).
  uint32_t ip_size() const { return frame_size() > kEthernetHeaderSize ? frame_size() - kEthernetHeaderSize : 0; }
  bool is_gso() const { return vnet().gso_type != VIRTIO_NET_HDR_GSO_NONE && vnet().gso_size != 0; }
  // How many wire packets this stands for (a GSO frame stands for one per gso_size of payload).
  uint32_t segments() const;
};

// Frames that exist only because the emulated link is Ethernet: ARP, IPv6 neighbour discovery and multicast
// listener reports (link-local source or link-scope multicast destination), IPv4 link-local multicast. An
// IP-level emulator (Mahimahi's TUN) never carries them, and their timing is the kernel's, not the
// experiment's: loss must not spend random draws on them, or a seed would not reproduce a run.
inline bool is_link_control(const Packet& p) {
  const uint8_t* f = p.frame();
  const uint32_t n = p.frame_size();
  if (n < kEthernetHeaderSize + 20) return true;
  const uint16_t type = static_cast<uint16_t>(f[12] << 8 | f[13]);
  if (type == 0x0800) return f[30] == 224 && f[31] == 0 && f[32] == 0;  // 224.0.0.0/24
  if (type != 0x86DD || n < kEthernetHeaderSize + 40) return type != 0x0800 && type != 0x86DD;
  const uint8_t* src = f + 22;
  const uint8_t* dst = f + 38;
  return (src[0] == 0xfe && (src[1] & 0xc0) == 0x80) || (dst[0] == 0xff && (dst[1] & 0x0f) <= 2);
}

// The number of wire segments in a GSO frame (1 for a plain frame). Defined in segmenter.cc.
uint32_t count_segments(const Packet& p);

inline uint32_t Packet::segments() const {
  return is_gso() ? count_segments(*this) : 1;
}

// The IP bytes P stands for on the wire: a GSO frame's packets each carry their own headers. Defined in
// segmenter.cc.
uint64_t wire_ip_bytes(const Packet& p);

// Where a queue hands packets it releases.
class PacketSink {
 public:
  virtual ~PacketSink() = default;
  virtual void send(Packet&& p) = 0;
};

}  // namespace tracemod
