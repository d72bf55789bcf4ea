// Independent random loss per wire packet. A GSO super-frame is judged segment by segment; if any of its
// segments is lost it is split, so a loss never takes a whole burst with it.
#pragma once

#include <vector>

#include "packet/buffer_pool.hh"
#include "packet/packet_queue.hh"
#include "packet/random.hh"
#include "packet/ring.hh"

namespace tracemod {

class LossQueue : public PacketQueue {
 public:
  LossQueue(double loss_rate, RandomStream random, BufferPool& pool);
  void enqueue(Packet&& p, Nanos now) override;
  void dequeue_ready(Nanos now, PacketSink& out) override;
  Nanos next_event() const override;

 private:
  void pass(Packet&& p, uint32_t segments);
  double rate_;
  RandomStream random_;
  BufferPool& pool_;
  Ring<Packet> ready_;
  std::vector<bool> lost_;  // per-segment verdicts, reused
};

}  // namespace tracemod
