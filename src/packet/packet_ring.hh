// Memory-mapped AF_PACKET rings (PACKET_MMAP, TPACKET_V2): frames cross between the kernel and the ferry through
// shared slots, without a socket buffer, an skb clone or a system call per frame on receive, and with one
// system call per batch and no per-frame message headers on transmit.
//
// Receive: the kernel writes each arriving frame, its virtio-net header and its receive timestamp into the next
// slot and marks it TP_STATUS_USER at once. (TPACKET_V3 packs frames tighter, but hands a block to user space
// only when it is full or its timer, 1 ms at the least, expires: a lone packet would wait up to a millisecond.)
// A frame larger than a slot (a GSO super-frame) still crosses whole: with PACKET_COPY_THRESH the kernel also
// queues it on the socket, in order, and marks its truncated slot TP_STATUS_COPY; it is then read with recv().
//
// Transmit: the ferry copies a frame into the next free slot and marks it TP_STATUS_SEND_REQUEST; one send()
// hands the batch to the driver. A slot becomes free again only when the kernel frees the frame's skb, which a
// slow receiver may hold in its socket for long: the ferry then sends by sendmmsg() instead (ferry.cc). Once a
// socket has a transmit ring every send goes through it, so the ring lives on a second, send-only socket.
//
// Slots are 2 KiB: a virtio-net header and a 1500-byte-MTU frame (VLAN tag included) with the kernel's header.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "util/clock.hh"

namespace tracemod {

// A ring of SLOTS 2 KiB slots mapped from a packet socket.
class MappedRing {
 public:
  static constexpr uint32_t kSlotSize = 2048;
  static constexpr uint32_t kBlockSize = 64 * 1024;  // contiguous kernel allocations: order 4

  MappedRing(const MappedRing&) = delete;
  MappedRing& operator=(const MappedRing&) = delete;

 protected:
  // Asks the kernel for the ring (OPTION: PACKET_RX_RING or PACKET_TX_RING) and maps it.
  MappedRing(int fd, int option, uint32_t slots, const std::string& what);
  ~MappedRing();
  uint8_t* slot(uint32_t i) const { return map_ + static_cast<size_t>(i) * kSlotSize; }
  uint32_t following(uint32_t i) const { return i + 1 == slots_ ? 0 : i + 1; }

  uint8_t* map_ = nullptr;
  uint32_t slots_;
};

class RxRing : public MappedRing {
 public:
  // 2 MiB, mapped into the shell (its RSS) for its whole life: 5 ms of 200 kpps while the ferry is away. Under
  // load the ferry naps 50 us between turns (event_loop.cc), so a deeper ring only helps while another
  // process holds its CPU for longer, when the receiver's socket (200-300 small datagrams) overflows anyway.
  static constexpr uint32_t kSlots = 1024;

  // FD: a packet socket with PACKET_VNET_HDR set and not yet bound (frames that arrived before the ring
  // existed would sit in the socket unseen). NAME is for messages.
  RxRing(int fd, const std::string& name);

  struct Frame {
    const uint8_t* data;  // virtio-net header + frame (for a copied frame: its first bytes only)
    uint32_t size;        // bytes at data
    uint32_t wire_size;   // bytes of the whole frame, virtio-net header included
    Nanos realtime;       // kernel receive time, CLOCK_REALTIME
    bool copied;          // the whole frame waits on the socket (recv it)
  };
  // The oldest frame not yet handed back, if any: a memory read, no system call.
  bool peek(Frame& f) const;
  // Hands the frame peek() showed back to the kernel.
  void pop();

 private:
  uint32_t next_ = 0;
};

class TxRing : public MappedRing {
 public:
  // A slot comes back as soon as the receiving stack has taken its frame, normally within the send() that
  // handed it over; while all are held, frames go by sendmmsg() (ferry.cc).
  static constexpr uint32_t kSlots = 256;
  static constexpr uint32_t kDataOffset = 32;  // TPACKET2_HDRLEN - sizeof(sockaddr_ll): where a frame starts
  static constexpr uint32_t kMaxSize = kSlotSize - kDataOffset;

  // FD: a packet socket with PACKET_VNET_HDR set, used for sending only.
  TxRing(int fd, const std::string& name);

  // Where the next frame (at most kMaxSize bytes) goes, or null while that slot's last frame is still held
  // by a receiver.
  uint8_t* next_slot() const;
  // Queues the SIZE bytes written at next_slot() for the next flush.
  void commit(uint32_t size);
  bool pending() const { return pending_ > 0; }
  // Hands the queued frames to the driver; returns how many the kernel refused (they are lost).
  uint32_t flush();

 private:
  int fd_;
  uint32_t next_ = 0, first_pending_ = 0, pending_ = 0;
};

}  // namespace tracemod
