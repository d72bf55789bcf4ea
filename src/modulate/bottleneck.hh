// The bottleneck of a modulated link: one first-in first-out queue (of one direction, or of both on a shared
// medium) served at the rate the schedule sets at each instant. Because the schedule is fixed and the queue
// is FIFO, a packet's whole passage is known the moment it arrives, so it is computed then: its service starts
// when the packets ahead have left and the link is on, and runs at each state's Vb for the bytes still unserved
// when that state begins (a rate change applies at its instant to a packet in service). An outage that holds
// pauses the service; one that drops loses the packet in service and those waiting when it begins, and
// every arrival during it.
#pragma once

#include <cstdint>

#include "modulate/schedule.hh"
#include "packet/ring.hh"

namespace tracemod::modulate {

struct Service {
  enum Fate { kServed, kQueueFull, kOutage, kEnded };
  Fate fate = kServed;
  Nanos start = 0, end = 0;  // kServed: its first byte entered service; its last byte left the bottleneck
  Nanos dropped = 0;         // otherwise: when it was lost
  size_t state = 0;          // kServed: the state its last byte was served in,
  Nanos state_begin = 0;     // and when that stretch of it began
};

class Bottleneck {
 public:
  explicit Bottleneck(const Timeline& timeline) : timeline_(timeline) {}
  // A packet of BYTES IP bytes, standing for SEGMENTS wire packets, arrives at ARRIVAL (never before the one
  // before it). The queue limit is the arrival's state's, and counts the packets waiting then.
  Service serve(Nanos arrival, uint64_t bytes, uint32_t segments);

 private:
  struct Waiting {
    Nanos start;
    uint64_t bytes;
    uint32_t segments;
  };
  bool full(const State& s, uint64_t bytes, uint32_t segments) const;
  Service pass(Nanos from, uint64_t bytes);

  const Timeline& timeline_;
  Nanos free_ = 0;         // when the last packet admitted leaves the bottleneck (or an outage dropped it)
  Ring<Waiting> waiting_;  // admitted packets whose service had not started at the latest arrival
  uint64_t waiting_bytes_ = 0, waiting_packets_ = 0;
};

}  // namespace tracemod::modulate
