// A trace-driven link: packets wait in a queue (the discipline decides what it drops) and leave only through
// delivery opportunities, each carrying 1500 bytes of IP packet, as in Mahimahi: an opportunity's credit may
// serve several small packets or part of a large one; unused credit is lost; a packet departs at the
// opportunity that carries its last byte, never earlier.
//
// GSO super-frames are kept whole where that cannot be seen: a frame leaves whole when the opportunities
// that carry it all fall within kMaxGsoSpread; otherwise it is split into its wire packets, each leaving at
// its own opportunity (at low rates every frame is split; at Gbit/s rates none is).
//
// One link may also carry both directions (--shared-medium): it is then the LaneServer of two Lanes, and its
// opportunities serve one queue holding both directions' packets in arrival order.
#pragma once

#include <array>
#include <memory>
#include <string>

#include "disciplines/queue_discipline.hh"
#include "link/link_log.hh"
#include "link/shared_medium.hh"
#include "link/trace.hh"
#include "packet/packet_queue.hh"
#include "packet/ring.hh"

namespace tracemod {

// How far behind its schedule the link handed packets to the kernel, in microseconds.
class Lateness {
 public:
  void add(Nanos late);
  uint64_t count() const { return count_; }
  // The Q-quantile (0..1) in microseconds, to 1 us; the last bucket holds everything from 10 ms on.
  uint64_t quantile_us(double q) const;
  Nanos max() const { return max_; }

 private:
  std::array<uint64_t, 10001> buckets_{};
  uint64_t count_ = 0;
  Nanos max_ = 0;
};

class LinkQueue : public LaneQueue, public LaneServer, private DropSink {
 public:
  static constexpr Nanos kMaxGsoSpread = 100 * 1000;

  // SOURCE gives opportunity times relative to START (the link's time 0), and has none after END (kNever
  // if it never ends: the shell must wake then to see that the link has finished). LOG may be null.
  LinkQueue(std::unique_ptr<OpportunitySource> source, Nanos start, Nanos end,
            std::unique_ptr<QueueDiscipline> discipline, BufferPool& pool, std::shared_ptr<LinkLog> log);
  // Used alone, the link is its own (only) lane 0.
  void enqueue(Packet&& p, Nanos now) override { enqueue(0, std::move(p), now); }
  void dequeue_ready(Nanos now, PacketSink& out) override { dequeue_ready(0, now, out); }
  Nanos next_event() const override { return next_event(0); }
  bool finished() const override { return peek(0) == kNever; }
  std::string summary() const override { return summary(0); }
  void live(QueueLive& out) const override { live(0, out); }
  // The link's opportunities from FROM to TO carry nothing (they are not logged either): packets that arrived
  // meanwhile queue, within the discipline's limit, and leave from TO on at the link's rate.
  void stalled(Nanos from, Nanos to) override;
  const Lateness& lateness(int lane = 0) const { return lateness_[lane]; }

  void attach(int lane, LaneQueue* queue) override { lanes_[lane] = queue; }
  void enqueue(int lane, Packet&& p, Nanos now) override;  // on a shared medium: held until both lanes are read
  void dequeue_ready(int lane, Nanos now, PacketSink& out) override;
  Nanos next_event(int lane) const override;
  std::string summary(int lane) const override;
  void live(int lane, QueueLive& out) const override;

 private:
  struct Transit {
    QueuedPacket q;
    int64_t bytes_left = 0;
    bool busy = false;
  };
  void advance(Nanos t);
  void serve(Nanos when);
  bool start_next(Nanos when, int64_t credit);
  void depart(Nanos when);
  bool split(QueuedPacket& q, Ring<QueuedPacket>& into);
  void admit(QueuedPacket&& q, Nanos now);
  void arrive(int lane, Packet&& p, Nanos now);
  bool shared() const { return lanes_[1] != nullptr; }
  void dropped(QueuedPacket&& q, Nanos now, DropCause cause) override;
  Nanos peek(size_t k) const;
  Nanos next_release(int lane) const;
  void pop_opportunity();
  bool idle() const { return !transit_.busy && split_.empty() && discipline_->empty(); }

  mutable std::unique_ptr<OpportunitySource> source_;
  mutable Ring<Nanos> ahead_;  // opportunities fetched from the source, not yet used (absolute times)
  uint64_t passed_ = 0;        // opportunities used, lost or skipped so far: the capacity offered
  Nanos start_, end_, clock_;  // clock_: how far the link has been emulated
  std::unique_ptr<QueueDiscipline> discipline_;
  BufferPool& pool_;
  std::shared_ptr<LinkLog> log_;
  KeepCurrent log_current_;
  Transit transit_;
  Ring<QueuedPacket> split_;    // segments of a frame split at the head, served before the discipline's queue
  Ring<QueuedPacket> scratch_;  // segments of an arrival the discipline will not take whole
  Ring<Packet> ready_[2];       // per lane: departed, not yet handed to the kernel
  Lateness lateness_[2];
  uint64_t stalls_ = 0;
  Nanos stalled_for_ = 0, stall_end_ = -1;  // when the last stall ended
  LaneQueue* lanes_[2] = {this, nullptr};  // whose counters each lane's packets update
  ArrivalMerge merge_;                     // a shared medium's arrivals, until both lanes have been read
};

}  // namespace tracemod
