// Several queues one after the other, as one: what a stage releases enters the next at its release time, in the
// same turn. tm-multipath builds each path's direction so: its link, then its loss, then its delay.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "packet/packet_queue.hh"

namespace tracemod {

class SeriesQueue : public PacketQueue {
 public:
  // STAGES in the order packets cross them; at least one.
  explicit SeriesQueue(std::vector<std::unique_ptr<PacketQueue>> stages);
  void enqueue(Packet&& p, Nanos now) override;
  void dequeue_ready(Nanos now, PacketSink& out) override;
  Nanos next_event() const override;
  bool finished() const override;
  std::string summary() const override;

 private:
  void count();
  std::vector<std::unique_ptr<PacketQueue>> stages_;
};

}  // namespace tracemod
