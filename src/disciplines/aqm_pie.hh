// PIE (RFC 8033): drops arrivals at random with a probability that a controller updates every T_UPDATE from
// the queueing delay (here the head packet's sojourn time, which the RFC allows in place of a departure-rate
// estimate). No drops while the burst allowance lasts; the probability decays when the queue is idle.
//
// Queues never read the clock, so the periodic update runs lazily: each enqueue or dequeue first runs every
// update due at or before its time, in order. The queue cannot have changed since the previous call, so each
// update sees what a timer firing at its time would have seen; an idle queue that has settled (drop_prob 0,
// full burst allowance) is skipped over at once.
//
// With ECN (RFC 8033 5.1), a random drop that falls on an ECN-capable packet marks it CE instead, while the drop
// probability is at most 10%; above that, PIE drops whatever it picks.
#pragma once

#include <string>

#include "disciplines/queue_discipline.hh"

namespace tracemod {

// Mahimahi requires all of them; the RFC's recommended times are here for tests.
struct PieParams {
  Nanos qdelay_ref = 15 * kMillisecond, max_burst = 150 * kMillisecond;
  QueueLimits limits;  // tail drop beyond these, as in Mahimahi
  bool ecn = false;
};

class PieQueue : public QueueDiscipline {
 public:
  static constexpr Nanos kUpdateInterval = 15 * kMillisecond;  // T_UPDATE
  static constexpr double kAlpha = 0.125, kBeta = 1.25;        // per second of delay
  static constexpr uint64_t kMeanPacketBytes = 1500;           // no random drops with 2 of these or fewer
  static constexpr double kMarkEcnThreshold = 0.1;             // mark_ecnth

  PieQueue(const PieParams& params, RandomStream random, uint64_t memory_limit = kMemoryLimit)
      : QueueDiscipline(memory_limit), params_(params), random_(random), burst_allowance_(params.max_burst) {}
  void enqueue(QueuedPacket&& p, Nanos now, DropSink& drops) override;
  bool dequeue(QueuedPacket& out, Nanos now, DropSink& drops) override;
  // A drop must hit one wire packet, not a burst of them.
  bool takes_whole(const QueuedPacket&) const override { return false; }
  std::string describe() const override;

  // As of the last call.
  double drop_prob() const { return drop_prob_; }
  Nanos burst_allowance() const { return burst_allowance_; }

 private:
  void catch_up(Nanos now);
  void update(Nanos t);
  bool drop_early();
  bool settled() const { return drop_prob_ == 0 && qdelay_old_ == 0 && burst_allowance_ == params_.max_burst; }

  PieParams params_;
  RandomStream random_;
  double drop_prob_ = 0;
  Nanos qdelay_old_ = 0, burst_allowance_;
  bool started_ = false;
  Nanos next_update_ = 0;
};

}  // namespace tracemod
