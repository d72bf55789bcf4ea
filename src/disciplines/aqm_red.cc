#include "disciplines/aqm_red.hh"

#include <cmath>
#include <sstream>

namespace tracemod {

// While the queue was empty, the average decays as if it had seen one empty-queue arrival per departure interval.
// It stays idle (aged up to NOW) until a packet is queued: an arrival dropped into an empty queue does not end
// the idle period, or a flow backing off after losses could find the average stuck above max.
void RedQueue::age(Nanos now) {
  if (idle_since_ < 0 || !empty()) return;
  const double m = static_cast<double>(now - idle_since_) / departure_interval_;
  avg_ *= std::pow(1 - params_.wq, m);
  idle_since_ = now;
}

// Whether RED picks this arrival (to drop, or with ECN to mark), from the current average.
bool RedQueue::early() {
  const RedParams& r = params_;
  if (avg_ < r.min) {
    count_ = -1;
    return false;
  }
  if (avg_ >= (r.gentle ? 2 * r.max : r.max)) {
    count_ = 0;
    return true;
  }
  ++count_;
  const double pb = avg_ < r.max ? r.probability * (avg_ - r.min) / (r.max - r.min)
                                 : r.probability + (1 - r.probability) * (avg_ - r.max) / r.max;
  const double spread = 1 - static_cast<double>(count_) * pb;
  if (spread > 0 && random_.uniform() >= pb / spread) return false;
  count_ = 0;
  return true;
}

void RedQueue::enqueue(QueuedPacket&& p, Nanos now, DropSink& drops) {
  age(now);
  // Each wire packet is an arrival; a whole frame (takes_whole) is one no decision can fall on.
  const double step = params_.bytes() ? static_cast<double>(p.ip_bytes) / p.segments : 1;
  for (uint32_t i = 0; i < p.segments; ++i) avg_ = (1 - params_.wq) * avg_ + params_.wq * (size() + i * step);
  const bool picked = p.segments == 1 && early();
  if (picked && !(params_.ecn && mark(p))) return drops.dropped(std::move(p), now, DropCause::kAqm);
  if (!fits(params_.limits, p)) return drops.dropped(std::move(p), now, DropCause::kQueue);
  push(std::move(p));
  idle_since_ = -1;
}

bool RedQueue::dequeue(QueuedPacket& out, Nanos now, DropSink&) {
  if (!take(out)) return false;
  // The interval between departures while the queue stays busy (an EWMA, weight 1/8).
  if (busy_) departure_interval_ += (static_cast<double>(now - last_dequeue_) - departure_interval_) / 8;
  last_dequeue_ = now;
  busy_ = !empty();
  if (!busy_) idle_since_ = now;
  return true;
}

bool RedQueue::takes_whole(const QueuedPacket& p) const {
  const double in_unit = params_.bytes() ? static_cast<double>(p.ip_bytes) : p.segments;
  return fits(params_.limits, p) && avg_ < params_.min && size() + in_unit < params_.min;
}

std::string RedQueue::describe() const {
  const RedParams& r = params_;
  std::ostringstream s;
  s << "red" << describe_queue_size(r.limits) << " min=" << r.min << " max=" << r.max
    << " probability=" << r.probability << " wq=" << r.wq << (r.gentle ? " gentle=1" : "") << (r.ecn ? " ecn=1" : "");
  return s.str();
}

}  // namespace tracemod
