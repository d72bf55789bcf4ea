// The queue in front of a trace-driven link, and the policy that decides what it drops: Mahimahi's names
// (infinite, droptail, drophead, codel, pie) and RED. All of them are FIFOs; they differ in when they drop,
// and, with ECN, in when they mark CE instead (codel, pie, red).
// Like every queue here they never read the clock: they are given the time of the arrival or of the
// opportunity that serves them.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "packet/packet.hh"
#include "packet/packet_queue.hh"
#include "packet/ring.hh"
#include "util/clock.hh"
#include "util/parse.hh"
#include "util/random.hh"

namespace tracemod {

// A packet waiting for the link, with what the policies need to know about it.
struct QueuedPacket {
  Packet packet;
  Nanos enqueued = 0;     // when it joined the queue
  uint32_t ip_bytes = 0;  // IP bytes it charges against the link (all its segments)
  uint32_t segments = 1;  // wire packets it stands for (a GSO frame: its segments)
  int lane = 0;           // the direction it belongs to, on a link both share (tm-link --shared-medium)
};

// Told of every packet a policy drops, and why: a limit (kQueue) or the AQM's choice (kAqm); for counters and
// the link log.
class DropSink {
 public:
  virtual ~DropSink() = default;
  virtual void dropped(QueuedPacket&& p, Nanos now, DropCause cause) = 0;
};

// Limits of droptail/drophead (and of codel and pie, as in Mahimahi, of tm-onoff's hold queue and of
// tm-modulate's bottleneck); 0 means no limit of that kind. Packets are wire packets, bytes IP bytes. The same
// pair as a schedule's queue=7pkts,150000B gives.
using QueueLimits = QueueSize;

class QueueDiscipline {
 public:
  // Whatever the policy, the buffers held never exceed this (see kQueueMemoryLimit).
  static constexpr uint64_t kMemoryLimit = kQueueMemoryLimit;

  explicit QueueDiscipline(uint64_t memory_limit = kMemoryLimit) : memory_limit_(memory_limit) {}
  virtual ~QueueDiscipline() = default;
  // P arrives at NOW (p.enqueued == NOW): the policy queues it, or drops it or others (through DROPS).
  virtual void enqueue(QueuedPacket&& p, Nanos now, DropSink& drops) = 0;
  // Moves into OUT the packet the link serves next at NOW, after any drops the policy makes on dequeue.
  // Returns false if the queue is (or became) empty.
  virtual bool dequeue(QueuedPacket& out, Nanos now, DropSink& drops) = 0;
  // True if P, a GSO frame, may enter whole: the link splits it into its segments otherwise, so that a
  // policy never drops a whole burst where a real link would drop only some of its packets.
  virtual bool takes_whole(const QueuedPacket& p) const = 0;
  // "droptail packets=100", as the log header and -v print it: the effective parameters, in ms for times.
  virtual std::string describe() const = 0;

  bool empty() const { return queue_.empty(); }
  uint64_t packets() const { return packets_; }                 // wire packets queued
  uint64_t bytes() const { return bytes_; }                     // IP bytes queued
  uint64_t memory() const { return memory_; }                   // buffer bytes held
  uint64_t marks() const { return marks_; }                     // wire packets marked CE instead of dropped
  uint64_t marks(int lane) const { return lane_marks_[lane]; }  // of them, lane LANE's
  uint64_t unmarkable() const { return unmarkable_; }           // picked to be marked, but not ECN-capable: dropped
  // Picked with ECN on, but dropped whatever their ECN field because the policy's probability was above its
  // marking threshold (PIE's 10%, RFC 8033 5.1).
  uint64_t over_threshold() const { return over_threshold_; }

 protected:
  void push(QueuedPacket&& p);
  QueuedPacket pop();
  bool take(QueuedPacket& out);  // pop() into OUT; false if empty
  bool over_memory(const QueuedPacket& p) const { return memory_ + p.packet.buf.capacity() > memory_limit_; }
  // True if P can join without exceeding LIMITS or the memory bound.
  bool fits(const QueueLimits& limits, const QueuedPacket& p) const;
  const QueuedPacket& front() const { return queue_.front(); }
  // Marks P CE if it is ECN-capable (a GSO frame once, for all its packets) and counts it; false, leaving it as
  // it was, if it is not: the policy then drops it.
  bool mark(QueuedPacket& p);
  void count_over_threshold(const QueuedPacket& p) { over_threshold_ += p.segments; }

 private:
  Ring<QueuedPacket> queue_;
  uint64_t packets_ = 0, bytes_ = 0, memory_ = 0, marks_ = 0, unmarkable_ = 0, over_threshold_ = 0;
  uint64_t lane_marks_[2] = {};
  uint64_t memory_limit_;
};

// The FIFOs without an AQM: NAME is infinite (LIMITS unused), droptail or drophead.
std::unique_ptr<QueueDiscipline> make_fifo_queue(const std::string& name, const QueueLimits& limits,
                                                 uint64_t memory_limit = QueueDiscipline::kMemoryLimit);

}  // namespace tracemod
