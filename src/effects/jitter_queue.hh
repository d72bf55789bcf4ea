// A delay line with jitter (tm-delay --jitter): each wire packet is held for max(0, BASE + X), X a fresh sample
// of the jitter distribution (netem's `delay TIME JITTER CORRELATION distribution D`).
//
// Without REORDER a packet never leaves before the one ahead of it: one whose sample would let it overtake
// leaves with its predecessor instead, so its delay is max(0, BASE + X) or longer, never shorter, and packets
// keep their order (what most real paths do). With REORDER each packet leaves at its own sampled time, in the
// order of those times, as netem does, so jitter larger than the packets' spacing reorders them.
//
// A GSO super-frame is one burst of wire packets: each gets its own sample; the frame stays whole only if its
// packets' release times fall within 100 us of each other (it then leaves at the latest), else it is split.
// Link-control frames (ARP, neighbour discovery) get BASE and no sample, so they do not shift the draws.
#pragma once

#include <string>
#include <vector>

#include "channel/distribution.hh"
#include "packet/buffer_pool.hh"
#include "packet/packet_queue.hh"
#include "packet/ring.hh"

namespace tracemod {

class JitterQueue : public PacketQueue {
 public:
  static constexpr Nanos kMaxGsoSpread = 100 * 1000;

  // MEMORY_LIMIT caps the buffer bytes held; past it, arrivals are dropped (and counted).
  JitterQueue(Nanos base, Sampler jitter, bool reorder, BufferPool& pool, uint64_t memory_limit);
  void enqueue(Packet&& p, Nanos now) override;
  void dequeue_ready(Nanos now, PacketSink& out) override;
  Nanos next_event() const override;
  // The jitter and the delays packets were given: "jitter normal:0ms:5ms, in order; delays mean 20.01 ms, SD
  // 4.98 ms over 3000 packets".
  std::string summary() const override;

 private:
  struct Held {
    Nanos release;
    uint64_t serial;  // arrival order, which breaks ties between equal release times
    Packet packet;
  };
  static bool later(const Held& a, const Held& b) {
    return a.release != b.release ? a.release > b.release : a.serial > b.serial;
  }
  Nanos sampled_delay();
  Nanos in_order(Nanos release);
  void hold(Packet&& p, uint32_t segments, Nanos release);
  void account(Nanos delay, uint32_t segments);

  Nanos base_;
  Sampler jitter_;
  bool reorder_;
  BufferPool& pool_;
  uint64_t memory_limit_;
  Ring<Packet> fifo_;       // without reorder: release times never decrease
  std::vector<Held> heap_;  // with reorder: a min-heap on (release, serial)
  uint64_t serial_ = 0;
  Nanos last_release_ = 0;
  std::vector<Nanos> releases_;               // per-segment release times of a GSO frame, reused
  double delay_sum_ = 0, delay_squares_ = 0;  // in ms, of every wire packet passed on
  uint64_t delayed_ = 0;
};

}  // namespace tracemod
