// RED (Floyd & Jacobson 1993; RFC 2309): drops (or, with ECN, marks) arrivals at random with a probability that
// grows with the queue's average size, an exponentially weighted moving average of the size seen by arrivals:
//   avg < min          never
//   min <= avg < max   pb = probability * (avg - min) / (max - min), spread out as pa = pb / (1 - count*pb), count
//                      the arrivals since the last drop or mark
//   max <= avg         always; with gentle, pb rises on from probability to 1 as avg goes from max to 2*max
// The hard limit drops whatever does not fit. While the queue is empty the average decays as if the link had
// sent a packet every mean departure interval (measured while it was busy; 1 ms before any), so it ages as the
// paper's does. With ECN an ECN-capable packet is marked CE instead of dropped, in both regions, as Linux's red
// does; a Not-ECT packet is still dropped, and the hard limit drops every packet.
#pragma once

#include <string>

#include "disciplines/queue_discipline.hh"

namespace tracemod {

struct RedParams {
  QueueLimits limits;  // the hard limit: packets= or bytes=, exactly one; min and max count the same unit
  double min = 0, max = 0;
  double probability = 0.02;  // max_p, reached at avg = max
  double wq = 0.002;          // the averaging weight
  bool gentle = false, ecn = false;
  bool bytes() const { return limits.bytes != 0; }
};

class RedQueue : public QueueDiscipline {
 public:
  RedQueue(const RedParams& params, RandomStream random, uint64_t memory_limit = kMemoryLimit)
      : QueueDiscipline(memory_limit), params_(params), random_(random) {}
  void enqueue(QueuedPacket&& p, Nanos now, DropSink& drops) override;
  bool dequeue(QueuedPacket& out, Nanos now, DropSink& drops) override;
  // Whole only when no decision can fall on it: it fits, and the average stays below min however it arrives.
  bool takes_whole(const QueuedPacket& p) const override;
  std::string describe() const override;

  double average() const { return avg_; }

 private:
  double size() const { return params_.bytes() ? static_cast<double>(bytes()) : static_cast<double>(packets()); }
  void age(Nanos now);
  bool early();
  RedParams params_;
  RandomStream random_;
  double avg_ = 0;
  int64_t count_ = -1;
  Nanos idle_since_ = -1;            // when the queue last went empty (-1: it is not empty)
  Nanos last_dequeue_ = 0;           // for the mean departure interval
  bool busy_ = false;                // the last dequeue left packets behind
  double departure_interval_ = 1e6;  // ns; an EWMA while busy
};

}  // namespace tracemod
