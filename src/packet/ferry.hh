// Moves frames between the two ends of a shell's link, in user space, through one queue per direction.
// uplink: inner end (toward the command) -> queue -> outer end; downlink: the reverse.
#pragma once

#include <sys/socket.h>

#include <array>
#include <memory>

#include "packet/buffer_pool.hh"
#include "packet/packet_queue.hh"
#include "util/file_descriptor.hh"

namespace tracemod {

// An AF_PACKET socket bound to one interface of the current network namespace, carrying virtio-net headers so
// GSO super-frames are read and written whole.
FileDescriptor open_packet_socket(int ifindex, const std::string& name);

struct FerryCounters {
  uint64_t send_errors = 0;  // frames the kernel refused on transmit (counted as lost on the wire)
};

class Ferry {
 public:
  static constexpr int kBatch = 64;
  enum Direction { kUplink = 0, kDownlink = 1 };

  // OUTER faces the parent namespace, INNER the command's. The pool must outlive the ferry.
  Ferry(FileDescriptor outer, FileDescriptor inner, BufferPool& pool);
  ~Ferry();

  int fd_for_arrivals(Direction d) const { return d == kUplink ? inner_.get() : outer_.get(); }
  // Reads what has arrived for direction D (a bounded number of batches) into QUEUE; returns how many frames.
  int receive(Direction d, PacketQueue& queue);
  // Sends what QUEUE releases at NOW out of direction D's exit.
  void release(Direction d, PacketQueue& queue, Nanos now);
  const FerryCounters& counters() const { return counters_; }

 private:
  struct RxBatch;
  class TxBatch;
  FileDescriptor outer_, inner_;
  BufferPool& pool_;
  std::unique_ptr<RxBatch> rx_[2];
  std::unique_ptr<TxBatch> tx_[2];
  FerryCounters counters_;
};

}  // namespace tracemod
