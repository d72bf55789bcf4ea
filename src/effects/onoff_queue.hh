// A link that goes off and on (tm-onoff): Mahimahi's mm-onoff (exponential on and off times), any on and off
// distributions, or a schedule of outages from a file (handovers seen in a drive test). While the link is off,
// packets are dropped (Mahimahi) or held and released, in order, the instant it comes back (Seawind's blackout
// store), up to a limit in packets and bytes beyond which arrivals are dropped. Link-control frames (ARP,
// neighbour discovery) pass at once whatever the state, ahead of held packets: an IP-level link never carries
// them, and held they would make the kernel give up resolving its neighbour and drop what is held.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "channel/distribution.hh"
#include "packet/buffer_pool.hh"
#include "packet/packet_queue.hh"
#include "packet/ring.hh"
#include "util/parse.hh"

namespace tracemod {

// When the link is on. Asked for non-decreasing times.
class OnOffSchedule {
 public:
  virtual ~OnOffSchedule() = default;
  // Whether the link is on at T (moving the schedule up to T), and when that state ends (kNever: it never does).
  virtual bool on_at(Nanos t) = 0;
  virtual Nanos state_ends() const = 0;
  // "exp:1000ms on, exp:500ms off", for -v.
  virtual std::string describe() const = 0;
};

// On and off times drawn from two distributions (in nanoseconds; a negative sample counts as 0), one random
// stream for both. The link comes on at START.
class RandomOnOff : public OnOffSchedule {
 public:
  RandomOnOff(Distribution on, Distribution off, RandomStream random, Nanos start);
  bool on_at(Nanos t) override;
  Nanos state_ends() const override { return ends_; }
  std::string describe() const override;

 private:
  Nanos draw(const Distribution& d);
  Distribution on_, off_;
  RandomStream random_;
  bool is_on_ = true;
  Nanos ends_;
};

// A fixed schedule: the link is on from START, then switches at the times of EVENTS (relative to START; each
// switches the state) and keeps its last state after them.
class FileOnOff : public OnOffSchedule {
 public:
  struct Event {
    Nanos at;
    bool on;
  };
  FileOnOff(std::vector<Event> events, std::string name, Nanos start);
  bool on_at(Nanos t) override;
  Nanos state_ends() const override;
  std::string describe() const override { return "schedule " + name_; }

  // Reads PATH: one event per line, "TIME on" or "TIME off", TIME from the start of the run (a duration with a
  // unit; a bare number is seconds), times not decreasing, states alternating (the link starts on); '#' starts
  // a comment. Errors throw UsageError naming PATH:LINE.
  static std::vector<Event> load(const std::string& path);

 private:
  std::vector<Event> events_;
  std::string name_;
  Nanos start_;
  size_t next_ = 0;  // the first event not yet passed
  bool is_on_ = true;
};

class OnOffQueue : public PacketQueue {
 public:
  enum class OffMode { kDrop, kHold };
  // HOLD limits the packets held while off (wire packets and IP bytes, 0: no limit of that kind).
  OnOffQueue(std::unique_ptr<OnOffSchedule> schedule, OffMode mode, const QueueSize& hold, BufferPool& pool);
  void enqueue(Packet&& p, Nanos now) override;
  void dequeue_ready(Nanos now, PacketSink& out) override;
  Nanos next_event() const override;
  // The schedule, the off mode and what the outages cost: "exp:... on, ...; hold: 120 packets held".
  std::string summary() const override;
  // The state as of the latest time the schedule was asked about (the latest arrival, or 1 s ago when idle).
  void live(QueueLive& out) const override { out.state = on_ ? "on" : "off"; }

 private:
  // The schedule moves only up to times no arrival can precede any more (the ferry stamps arrivals at most 1 s
  // late): advancing it while idle spreads its work without judging a late-read packet by a later state.
  static constexpr Nanos kArrivalSlack = 1000 * kMillisecond;
  bool fits(uint64_t segments, uint64_t ip_bytes, uint64_t buffer_bytes) const;
  // Into RING (queue_ or control_), leaving at RELEASE; IP_BYTES count against the hold limit.
  void queue(Ring<Packet>& ring, Packet&& p, uint32_t segments, uint32_t ip_bytes, Nanos release);
  void hold(Packet&& p, uint32_t segments, Nanos release, Nanos now);
  // Hands the front of RING to OUT.
  void send_front(Ring<Packet>& ring, PacketSink& out);

  std::unique_ptr<OnOffSchedule> schedule_;
  OffMode mode_;
  QueueSize limits_;
  BufferPool& pool_;
  Ring<Packet> queue_;    // release times never decrease
  Ring<Packet> control_;  // link-control frames, leaving as they came: never behind held packets
  Nanos seen_ = 0;        // the latest time the schedule was asked about
  bool on_ = true;        // what it answered
  uint64_t queued_ip_bytes_ = 0, control_packets_ = 0, held_ = 0, dropped_off_ = 0;
};

}  // namespace tracemod
