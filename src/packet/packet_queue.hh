// One queue per direction of a shell. Queues never read the clock: the event loop passes `now`, and asks
// next_event() when it must wake up again. This is what makes them testable with a fake clock.
#pragma once

#include <cstdint>
#include <string>
#include <utility>

#include "packet/packet.hh"
#include "packet/ring.hh"
#include "util/clock.hh"

namespace tracemod {

// Whatever its own limits, one direction's queue never holds more packet buffers than this: "infinite" means
// "never drops by policy", not "may exhaust memory". Arrivals beyond it are dropped.
constexpr uint64_t kQueueMemoryLimit = 256ull << 20;

// What is due by NOW in two rings, each in the order of its release times, merged in that order; a tie goes to
// FIRST. E.g. a queue's packets (FIRST) and the link-control frames it lets pass at their arrival (see
// is_link_control), so that those never wait behind packets an outage holds or a link layer retries.
// RELEASE(item) is an item's release time; SEND(ring) takes the front of RING and sends it.
template <typename T, typename Release, typename Send>
void send_due_in_order(Ring<T>& first, Ring<T>& second, Nanos now, Release release, Send send) {
  for (;;) {
    const bool a = !first.empty() && release(first.front()) <= now;
    const bool b = !second.empty() && release(second.front()) <= now;
    if (b && (!a || release(second.front()) < release(first.front())))
      send(second);
    else if (a)
      send(first);
    else
      return;
  }
}

inline Nanos release_of(const Packet& p) {
  return p.release;
}

// The earlier of two rings' first release times (kNever if both are empty).
template <typename T, typename Release>
Nanos first_release(const Ring<T>& a, const Ring<T>& b, Release release) {
  const Nanos x = a.empty() ? kNever : release(a.front()), y = b.empty() ? kNever : release(b.front());
  return x < y ? x : y;
}

// Why a queue dropped a packet, as the live counters (tm-top) tell drops apart: a limit of the queue (packets,
// bytes or memory), a loss model or channel, an outage (tm-onoff's off state), an AQM's choice (CoDel, PIE, RED).
enum class DropCause : uint8_t { kQueue = 0, kLoss = 1, kOutage = 2, kAqm = 3 };
constexpr int kDropCauses = 4;

// Counted in wire packets (a GSO frame counts as its segments), so that
// in_packets == out_packets + dropped_packets + queued_packets always holds.
struct QueueStats {
  uint64_t in_packets = 0, out_packets = 0, dropped_packets = 0, queued_packets = 0;
  uint64_t queued_bytes = 0;              // memory held, in buffer bytes
  uint64_t dropped_by[kDropCauses] = {};  // dropped_packets by DropCause
  uint64_t dropped_bytes = 0;             // wire IP bytes of them
};

// What a queue shows of itself while the shell runs beyond QueueStats (tm-top, --meter). Asked a few times a
// second, never per packet.
struct QueueLive {
  bool limited = false;        // the queue serves at a capacity (a trace, a rate): offered_bytes is meaningful
  uint64_t offered_bytes = 0;  // IP bytes its capacity could have carried since the start
  uint64_t ce_marked = 0;      // wire packets marked CE instead of dropped
  std::string state;           // the state of its schedule ("on", "off"), or empty
};

// Told of every packet a queue drops, with the time of the drop (e.g. to capture it); see PacketQueue::drop.
class DropObserver {
 public:
  virtual ~DropObserver() = default;
  virtual void dropped(const Packet& p, Nanos now) = 0;
};

// Told of every frame as it leaves its queue for the far side (e.g. to capture it); see FerryObserver.
class DepartureObserver {
 public:
  virtual ~DepartureObserver() = default;
  virtual void departed(const Packet& p) = 0;
};

// What watches a whole link from outside the engine (capture/): one departure observer per direction, and
// output it buffers, which the event loop lets it write when flush_due() says.
class FerryObserver {
 public:
  virtual ~FerryObserver() = default;
  // Direction D's observer (0 uplink, 1 downlink), or null if that direction is not watched.
  virtual DepartureObserver* direction(int d) = 0;
  // When buffered output must be written, or kNever if nothing waits.
  virtual Nanos flush_due() const = 0;
  virtual void flush(Nanos now) = 0;
};

class PacketQueue {
 public:
  virtual ~PacketQueue() = default;
  virtual void enqueue(Packet&& p, Nanos now) = 0;
  // Hands every packet due at or before NOW to OUT, in order.
  virtual void dequeue_ready(Nanos now, PacketSink& out) = 0;
  // The earliest time dequeue_ready would hand something out, or kNever.
  virtual Nanos next_event() const = 0;
  // True once the queue can never release anything again (a trace played --once has ended).
  virtual bool finished() const { return false; }
  // Extra facts for -v at exit (e.g. how late departures were); empty if none.
  virtual std::string summary() const { return {}; }
  // Fills what this queue adds to the live counters (its capacity, CE marks, state); nothing by default.
  virtual void live(QueueLive&) const {}
  // The ferry did not run from FROM to TO (stopped by SIGSTOP or a debugger, or starved of the CPU for longer
  // than kStall): nothing crossed the link meanwhile. A link with a rate behaves as one that stalled: what it
  // could have carried meanwhile is not sent in a burst now. A delay line has no rate: it does nothing.
  virtual void stalled(Nanos from, Nanos to) {
    (void)from;
    (void)to;
  }
  static constexpr Nanos kStall = 100 * kMillisecond;
  const QueueStats& stats() const { return stats_; }
  // Whom drop() tells (not owned; null: nobody). Off by default, so a drop costs nothing extra.
  void set_drop_observer(DropObserver* o) { drop_observer_ = o; }

 protected:
  // Every drop goes through here: counts SEGMENTS wire packets of P as dropped at NOW for CAUSE, and shows P
  // to the observer. Queues call it for packets that were already counted in (and out of queued_packets
  // themselves).
  void drop(const Packet& p, uint32_t segments, Nanos now, DropCause cause) {
    stats_.dropped_packets += segments;
    stats_.dropped_by[static_cast<int>(cause)] += segments;
    stats_.dropped_bytes += wire_ip_bytes(p);
    if (drop_observer_) drop_observer_->dropped(p, now);
  }
  // Every release goes through here: counts SEGMENTS wire packets of P out of the queue (and its buffer out of
  // queued_bytes), and hands P to OUT.
  void release(Packet&& p, uint32_t segments, PacketSink& out) {
    count_out(segments, p.buf.capacity());
    out.send(std::move(p));
  }
  // release()'s bookkeeping alone, for a queue that hands the packet on later (a link's departures wait for
  // the kernel): SEGMENTS wire packets move from queued to out, and BUFFER_BYTES leave queued_bytes.
  void count_out(uint32_t segments, uint64_t buffer_bytes) {
    stats_.queued_packets -= segments;
    stats_.queued_bytes -= buffer_bytes;
    stats_.out_packets += segments;
  }
  QueueStats stats_;

 private:
  DropObserver* drop_observer_ = nullptr;
};

}  // namespace tracemod
