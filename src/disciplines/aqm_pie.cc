#include "disciplines/aqm_pie.hh"

#include <algorithm>

namespace tracemod {

namespace {

double seconds(Nanos t) {
  return static_cast<double>(t) * 1e-9;
}

// Auto-tuning (RFC 8033 4.2): the smaller the probability, the smaller its steps, so that light congestion
// is not answered with a jump.
double tuning_scale(double drop_prob) {
  if (drop_prob < 0.000001) return 1.0 / 2048;
  if (drop_prob < 0.00001) return 1.0 / 512;
  if (drop_prob < 0.0001) return 1.0 / 128;
  if (drop_prob < 0.001) return 1.0 / 32;
  if (drop_prob < 0.01) return 1.0 / 8;
  if (drop_prob < 0.1) return 1.0 / 2;
  return 1;
}

}  // namespace

void PieQueue::catch_up(Nanos now) {
  if (!started_) {
    started_ = true;
    next_update_ = now + kUpdateInterval;
    return;
  }
  while (next_update_ <= now) {
    if (empty() && settled()) {  // every further update would leave this state as it is
      next_update_ += ((now - next_update_) / kUpdateInterval + 1) * kUpdateInterval;
      return;
    }
    update(next_update_);
    next_update_ += kUpdateInterval;
  }
}

// One periodic update at T, from the sojourn time of the packet at the head (0 if the queue is empty).
void PieQueue::update(Nanos t) {
  const Nanos qdelay = empty() ? 0 : t - front().enqueued;
  double p = kAlpha * seconds(qdelay - params_.qdelay_ref) + kBeta * seconds(qdelay - qdelay_old_);
  p *= tuning_scale(drop_prob_);
  if (drop_prob_ >= 0.1 && p > 0.02) p = 0.02;  // cap drop adjustment (RFC 8033 5.5)
  drop_prob_ += p;
  if (qdelay == 0 && qdelay_old_ == 0) drop_prob_ *= 0.98;  // idle: decay, faster than the controller would
  drop_prob_ = std::clamp(drop_prob_, 0.0, 1.0);
  burst_allowance_ = std::max<Nanos>(0, burst_allowance_ - kUpdateInterval);
  // Reset after the decrement: a queue that starts after calm has the whole MAX_BURST from its first update.
  const Nanos low = params_.qdelay_ref / 2;
  if (drop_prob_ == 0 && qdelay < low && qdelay_old_ < low) burst_allowance_ = params_.max_burst;
  qdelay_old_ = qdelay;
}

bool PieQueue::drop_early() {
  if (burst_allowance_ > 0) return false;
  if (qdelay_old_ < params_.qdelay_ref / 2 && drop_prob_ < 0.2) return false;
  if (bytes() <= 2 * kMeanPacketBytes) return false;
  return random_.uniform() < drop_prob_;
}

void PieQueue::enqueue(QueuedPacket&& p, Nanos now, DropSink& drops) {
  catch_up(now);
  if (!fits(params_.limits, p)) return drops.dropped(std::move(p), now, DropCause::kQueue);
  if (drop_early()) {
    if (params_.ecn && drop_prob_ <= kMarkEcnThreshold && mark(p)) return push(std::move(p));
    if (params_.ecn && drop_prob_ > kMarkEcnThreshold) count_over_threshold(p);
    return drops.dropped(std::move(p), now, DropCause::kAqm);
  }
  push(std::move(p));
}

bool PieQueue::dequeue(QueuedPacket& out, Nanos now, DropSink&) {
  catch_up(now);
  return take(out);
}

std::string PieQueue::describe() const {
  return "pie qdelay_ref=" + format_ms(params_.qdelay_ref) + " max_burst=" + format_ms(params_.max_burst) +
         describe_queue_size(params_.limits) + (params_.ecn ? " ecn=1" : "");
}

}  // namespace tracemod
