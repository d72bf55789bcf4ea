// --shared-medium: one server (a link's opportunities, a bottleneck) carrying both directions' packets in one
// queue, in arrival order, as a half-duplex radio does. The event loop still sees one PacketQueue per
// direction: each is a Lane of the shared server, which keeps the lane's packets apart after service and counts
// them on the lane, so -v, drops and their observers stay per direction.
#pragma once

#include <algorithm>
#include <memory>
#include <string>

#include "packet/packet_queue.hh"
#include "packet/ring.hh"

namespace tracemod {

// A PacketQueue whose counters (and drops) a server kept elsewhere updates.
class LaneQueue : public PacketQueue {
 public:
  QueueStats& counters() { return stats_; }
  // PacketQueue::drop on behalf of the server: counts the drop here and shows P to this lane's observer.
  void count_drop(const Packet& p, uint32_t segments, Nanos now, DropCause cause) { drop(p, segments, now, cause); }
  // PacketQueue::release and its bookkeeping alone (count_out), on behalf of the server.
  void count_release(Packet&& p, uint32_t segments, PacketSink& out) { release(std::move(p), segments, out); }
  using PacketQueue::count_out;
};

// What a server shared by two lanes (0: uplink, 1: downlink) offers, per lane.
class LaneServer {
 public:
  virtual ~LaneServer() = default;
  // The queue whose counters lane LANE's packets update (null: none yet).
  virtual void attach(int lane, LaneQueue* queue) = 0;
  virtual void enqueue(int lane, Packet&& p, Nanos now) = 0;
  virtual void dequeue_ready(int lane, Nanos now, PacketSink& out) = 0;
  virtual Nanos next_event(int lane) const = 0;
  virtual bool finished() const = 0;
  virtual std::string summary(int lane) const = 0;
  virtual void live(int, QueueLive&) const {}
  virtual void stalled(Nanos from, Nanos to) {  // see PacketQueue::stalled; the medium's, for both lanes
    (void)from;
    (void)to;
  }
};

// Both lanes' arrivals of one turn of the event loop, handed on in the order the kernel received them. The ferry
// reads one direction's socket, then the other's: were each packet served as it was read, a busy turn would put
// a whole batch of one direction ahead of the other's earlier packets, and a full queue would refuse the second
// direction first. A server holds arrivals here and drains them once both directions have been read (the loop
// asks for releases only then), and reports the earliest as its next event meanwhile.
class ArrivalMerge {
 public:
  void push(int lane, Packet&& p) { pending_[lane].push_back(Held{std::move(p), pushed_++}); }
  bool empty() const { return pending_[0].empty() && pending_[1].empty(); }
  Nanos earliest() const {
    Nanos t = kNever;
    for (const Ring<Held>& r : pending_)
      if (!r.empty()) t = std::min(t, r.front().packet.arrival);
    return t;
  }
  // Calls ADMIT(lane, packet) for every packet held, earliest arrival first (in the order read, on a tie).
  template <typename F>
  void drain(F admit) {
    while (!empty()) {
      const int lane = pending_[0].empty() || (!pending_[1].empty() && pending_[1].front() < pending_[0].front());
      admit(lane, pending_[lane].pop_front().packet);
    }
  }

 private:
  struct Held {
    Packet packet;
    uint64_t order = 0;
    bool operator<(const Held& o) const {
      return packet.arrival != o.packet.arrival ? packet.arrival < o.packet.arrival : order < o.order;
    }
  };
  Ring<Held> pending_[2];
  uint64_t pushed_ = 0;
};

// One direction's face of a shared server. The server lives as long as either lane.
class Lane final : public LaneQueue {
 public:
  Lane(std::shared_ptr<LaneServer> server, int lane) : server_(std::move(server)), lane_(lane) {
    server_->attach(lane_, this);
  }
  ~Lane() override { server_->attach(lane_, nullptr); }
  Lane(const Lane&) = delete;
  Lane& operator=(const Lane&) = delete;

  void enqueue(Packet&& p, Nanos now) override { server_->enqueue(lane_, std::move(p), now); }
  void dequeue_ready(Nanos now, PacketSink& out) override { server_->dequeue_ready(lane_, now, out); }
  Nanos next_event() const override { return server_->next_event(lane_); }
  bool finished() const override { return server_->finished(); }
  void stalled(Nanos from, Nanos to) override { server_->stalled(from, to); }
  std::string summary() const override { return server_->summary(lane_); }
  void live(QueueLive& out) const override { server_->live(lane_, out); }

 private:
  std::shared_ptr<LaneServer> server_;
  int lane_;
};

}  // namespace tracemod
