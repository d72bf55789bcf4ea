// A fixed one-way delay: each packet leaves no earlier than its arrival plus the delay, in arrival order.
#pragma once

#include "packet/packet_queue.hh"
#include "packet/ring.hh"

namespace tracemod {

class DelayQueue : public PacketQueue {
 public:
  // MEMORY_LIMIT caps the buffer bytes held; past it, arrivals are dropped (and counted).
  DelayQueue(Nanos delay, uint64_t memory_limit);
  void enqueue(Packet&& p, Nanos now) override;
  void dequeue_ready(Nanos now, PacketSink& out) override;
  Nanos next_event() const override;

 private:
  Nanos delay_;
  uint64_t memory_limit_;
  Ring<Packet> queue_;
};

}  // namespace tracemod
