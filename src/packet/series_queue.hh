// Several queues one after the other, as one: what a stage releases enters the next at its release time, in the
// same turn. A fused stack of shells runs its levels' queues so (the outermost first on the downlink, the
// innermost first on the uplink), and tm-multipath builds each path's direction so: its link, its loss, its delay.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "packet/ferry.hh"
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
  void stalled(Nanos from, Nanos to) override;

  size_t stages() const { return stages_.size(); }
  const PacketQueue& stage(size_t i) const { return *stages_[i]; }
  // What entered and left stage I, as the ferry counts a whole link's (a fused level's live counters): a departure
  // is a release, its stay the release less the arrival at that stage. Its longest stay since the last call.
  const FlowCounters& stage_flow(size_t i) const { return flows_[i]; }
  Nanos take_stage_sojourn_max(size_t i);

 private:
  class Forward;
  void count();
  std::vector<std::unique_ptr<PacketQueue>> stages_;
  std::vector<FlowCounters> flows_;
};

}  // namespace tracemod
