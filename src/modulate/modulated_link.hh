// A link that follows a schedule (Noble et al.'s trace modulation): a packet of S bytes waits its turn at the
// bottleneck and is served in S*Vb (Bottleneck), is then delayed F + S*Vr without queueing, and is lost with
// probability L after the bottleneck (each state's loss model); F, Vr and L are those of the state in which
// its last byte was served. A direction never reorders: a packet leaves no earlier than the one before it.
//
// It is the LaneServer of one direction (its own link) or of both (--shared-medium: one bottleneck queue, in
// arrival order, for the packets of both). Every packet's fate is known on arrival (see Bottleneck); the
// packet is then held until it leaves, or until the instant it is lost, when PacketQueue::drop reports it.
// Link-control frames (ARP, neighbour discovery) are not the modulated link's traffic: they leave as they
// come, whatever the state, take no part in the bottleneck and are not logged (docs/ARCHITECTURE.md).
#pragma once

#include <memory>
#include <string>

#include "channel/loss_model.hh"
#include "link/link_queue.hh"
#include "link/shared_medium.hh"
#include "modulate/bottleneck.hh"
#include "modulate/modulate_log.hh"
#include "modulate/schedule.hh"
#include "packet/buffer_pool.hh"
#include "packet/ring.hh"

namespace tracemod::modulate {

struct LinkConfig {
  std::shared_ptr<const Schedule> schedule;
  Nanos start = 0;  // when the schedule's first state begins
  bool once = false;
  uint64_t seed = 0;
  std::shared_ptr<ModulateLog> log;  // null: no log
  bool shared = false;               // both lanes use it (for the log and -v)
  uint64_t memory_limit = kQueueMemoryLimit;
};

class ModulatedLink : public LaneServer {
 public:
  ModulatedLink(const LinkConfig& config, BufferPool& pool);
  void attach(int lane, LaneQueue* queue) override { lanes_[lane].queue = queue; }
  void enqueue(int lane, Packet&& p, Nanos now) override;  // on a shared medium: held until both lanes are read
  void dequeue_ready(int lane, Nanos now, PacketSink& out) override;
  Nanos next_event(int lane) const override;
  bool finished() const override { return timeline_.once() && clock_ >= timeline_.end(); }
  std::string summary(int lane) const override;
  // The schedule's state as far as the link has been emulated: its line in the file, and "off" in an outage.
  void live(int lane, QueueLive& out) const override;
  const Lateness& lateness(int lane) const { return lanes_[lane].lateness; }

 private:
  struct Held {
    Packet packet;  // packet.release: when it leaves, or is dropped
    uint32_t segments = 1;
  };
  static Nanos release_of(const Held& h) { return h.packet.release; }
  struct LaneState {
    LaneQueue* queue = nullptr;
    // Each in time order: packets that leave; those dropped when they arrived (in arrival order); those lost
    // later, after or while waiting for the bottleneck (in the order it reaches them).
    Ring<Held> leaving, refused, lost;
    Ring<Held> control;  // link-control frames, leaving at their arrival
    Nanos last_release = 0;
    Nanos loss_state_begin = -1;  // the stretch of a state the current loss model belongs to
    std::unique_ptr<LossModel> loss;
    Lateness lateness;
  };
  void advance(Nanos t);
  void arrive(int lane, Packet&& p, Nanos now);
  void admit(int lane, Packet&& p, Nanos arrival, uint32_t segments, uint64_t bytes);
  bool hit(int lane, uint64_t bytes, const Service& sv);
  void report_drops(LaneState& l, Nanos now);
  void send(LaneState& l, Ring<Held>& ring, Nanos now, PacketSink& out);
  void release_memory(LaneState& l, const Held& h);
  void hold(Ring<Held>& ring, int lane, Packet&& p, uint32_t segments, Nanos when);
  bool whole(const Packet& p, Nanos arrival) const;
  const char* dir(int lane) const { return lane == 0 ? "up" : "down"; }

  LinkConfig config_;
  Timeline timeline_;
  Bottleneck bottleneck_;
  BufferPool& pool_;
  std::vector<bool> lossless_;  // per state: its loss model never hits
  LaneState lanes_[2];
  ArrivalMerge merge_;  // a shared medium's arrivals, until both lanes have been read
  Nanos clock_;         // how far the link has been emulated (for the log and the end of a schedule played once)
  Nanos last_arrival_;  // the latest arrival: the bottleneck takes packets in the order they arrived
  Nanos next_state_;    // the next state change not yet logged
  KeepCurrent log_current_;
  uint64_t memory_ = 0;
};

}  // namespace tracemod::modulate
