// Moves frames between the two ends of a shell's link, in user space, through one queue per direction.
// uplink: inner end (toward the command) -> queue -> outer end; downlink: the reverse.
#pragma once

#include <sys/socket.h>

#include <future>
#include <memory>

#include "packet/buffer_pool.hh"
#include "packet/packet_queue.hh"
#include "packet/packet_ring.hh"
#include "util/file_descriptor.hh"

namespace tracemod {

// One end of the link, on one interface of a network namespace: a packet socket with a receive ring (it also
// sends the frames too large for a transmit slot) and a send-only socket with a transmit ring. Both carry
// virtio-net headers, so GSO super-frames are read and written whole. Making a ring costs the kernel an RCU
// grace period (milliseconds), so the sockets are opened and their rings begun, in the background, as soon as
// the namespace exists (open_packet_socket), and bound once the interface does (bind_packet_socket): from
// then on no frame crossing the interface is missed.
struct PacketSockets {
  FileDescriptor rx, tx;
  std::future<std::unique_ptr<RxRing>> rx_pending;  // declared after the sockets: finished before they close
  std::future<std::unique_ptr<TxRing>> tx_pending;
  std::unique_ptr<RxRing> rx_ring;
  std::unique_ptr<TxRing> tx_ring;
};
// Opens both sockets in the current network namespace and begins their rings. NAME is for messages.
PacketSockets open_packet_socket(const std::string& name);
// Waits for the rings, then binds both sockets to interface IFINDEX (in the sockets' namespace).
void bind_packet_socket(PacketSockets& s, int ifindex, const std::string& name);

// One direction's traffic as the ferry sees it, for the live counters: bytes in and out, and how long each frame
// stayed in the shell (kernel receive time to send).
struct FlowCounters {
  uint64_t in_bytes = 0, out_bytes = 0;  // wire IP bytes (a GSO frame: all its packets' headers and payload)
  uint64_t departures = 0;               // frames sent
  Nanos sojourn_sum = 0;                 // over those frames
  Nanos sojourn_max = 0;                 // since take_sojourn_max() last cleared it
};

struct FerryCounters {
  FlowCounters flow[2];      // by Ferry::Direction
  uint64_t send_errors = 0;  // frames the kernel refused on transmit (counted as lost on the wire)
  uint64_t ring_full = 0;    // frames the kernel dropped because the ferry had not emptied its ring (lost)
  uint64_t truncated = 0;    // frames too large for a slot that the socket had no room for, or for a buffer (lost)
  uint64_t lost_on_receive() const { return ring_full + truncated; }
};

class Ferry {
 public:
  static constexpr int kBatch = 64;        // frames per sendmmsg()
  static constexpr int kMaxPerTurn = 256;  // frames read per direction per turn: one cannot starve the other
  enum Direction { kUplink = 0, kDownlink = 1 };

  // OUTER faces the parent namespace, INNER the command's. The pool must outlive the ferry.
  Ferry(PacketSockets outer, PacketSockets inner, BufferPool& pool);
  ~Ferry();

  int fd_for_arrivals(Direction d) const { return end(d, true).rx.get(); }
  // True if a frame waits for direction D: a memory read, no system call.
  bool has_arrivals(Direction d) const;
  // Reads what has arrived for direction D (at most kMaxPerTurn frames) into QUEUE; returns how many frames.
  int receive(Direction d, PacketQueue& queue);
  // Sends what QUEUE releases at NOW out of direction D's exit.
  void release(Direction d, PacketQueue& queue, Nanos now);
  // Shows CAPTURE (not owned; null: none) each frame as it leaves a queue, and lets it write out what it
  // buffered (flush_capture) when capture_due() says.
  void set_capture(FerryObserver* capture);
  Nanos capture_due() const;
  void flush_capture(Nanos now);
  // Counters so far; reading them also collects the kernel's (which it clears when read).
  const FerryCounters& counters() const;
  // The longest stay of a frame of direction D since the last call, which clears it.
  Nanos take_sojourn_max(Direction d);

 private:
  class Sender;
  struct End {
    explicit End(PacketSockets s);
    FileDescriptor rx, tx;
    std::unique_ptr<RxRing> rx_ring;
    std::unique_ptr<TxRing> tx_ring;
  };
  const End& end(Direction d, bool entry) const { return (d == kUplink) == entry ? inner_ : outer_; }
  void read_whole(int fd, Packet& p);

  End outer_, inner_;
  BufferPool& pool_;
  Buffer spare_;  // where a frame too large for a ring slot is read
  std::unique_ptr<Sender> senders_[2];
  FerryObserver* capture_ = nullptr;
  mutable FerryCounters counters_;
};

}  // namespace tracemod
