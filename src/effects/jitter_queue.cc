#include "effects/jitter_queue.hh"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "packet/segmenter.hh"

namespace tracemod {
JitterQueue::JitterQueue(Nanos base, Sampler jitter, bool reorder, BufferPool& pool, uint64_t memory_limit)
    : base_(base), jitter_(std::move(jitter)), reorder_(reorder), pool_(pool), memory_limit_(memory_limit) {}

// Rounded up to a whole nanosecond, so a delay is never shorter than its sample (and saturated: a Pareto tail
// may reach beyond what an int64 holds).
Nanos JitterQueue::sampled_delay() {
  return std::max<Nanos>(0, ceil_nanos(static_cast<double>(base_) + jitter_.next()));
}

Nanos JitterQueue::in_order(Nanos release) {
  if (!reorder_) release = std::max(release, last_release_);
  last_release_ = std::max(release, last_release_);
  return release;
}

void JitterQueue::account(Nanos delay, uint32_t segments) {
  const double ms = static_cast<double>(delay) / 1e6;
  delay_sum_ += ms * segments;
  delay_squares_ += ms * ms * segments;
  delayed_ += segments;
}

void JitterQueue::hold(Packet&& p, uint32_t segments, Nanos release) {
  account(release - p.arrival, segments);
  p.release = release;
  stats_.queued_packets += segments;
  stats_.queued_bytes += p.buf.capacity();
  if (!reorder_) return fifo_.push_back(std::move(p));
  heap_.push_back(Held{release, serial_++, std::move(p)});
  std::push_heap(heap_.begin(), heap_.end(), later);
}

void JitterQueue::enqueue(Packet&& p, Nanos now) {
  const uint32_t n = p.segments();
  stats_.in_packets += n;
  if (stats_.queued_bytes + p.buf.capacity() > memory_limit_) return drop(p, n, now, DropCause::kQueue);
  if (is_link_control(p)) return hold(std::move(p), n, in_order(p.arrival + base_));
  if (n == 1) return hold(std::move(p), 1, in_order(saturating_add(p.arrival, sampled_delay())));
  releases_.clear();
  for (uint32_t i = 0; i < n; ++i) releases_.push_back(in_order(saturating_add(p.arrival, sampled_delay())));
  const auto [first, last] = std::minmax_element(releases_.begin(), releases_.end());
  if (*last - *first <= kMaxGsoSpread) return hold(std::move(p), n, *last);
  uint32_t i = 0;
  const bool split = segment_gso(p, pool_, [&](Packet&& s) { hold(std::move(s), 1, releases_[i++]); });
  if (!split) hold(std::move(p), n, *last);
}

void JitterQueue::dequeue_ready(Nanos now, PacketSink& out) {
  const auto pass = [&](Packet&& p) {
    const uint32_t n = p.segments();
    release(std::move(p), n, out);
  };
  while (!fifo_.empty() && fifo_.front().release <= now) pass(fifo_.pop_front());
  while (!heap_.empty() && heap_.front().release <= now) {
    std::pop_heap(heap_.begin(), heap_.end(), later);
    Packet p = std::move(heap_.back().packet);
    heap_.pop_back();
    pass(std::move(p));
  }
}

Nanos JitterQueue::next_event() const {
  if (!fifo_.empty()) return fifo_.front().release;
  return heap_.empty() ? kNever : heap_.front().release;
}

std::string JitterQueue::summary() const {
  std::ostringstream s;
  s << "jitter " << jitter_.distribution().describe() << (reorder_ ? ", reordering" : ", in order");
  if (delayed_ == 0) return s.str();
  const double n = static_cast<double>(delayed_), mean = delay_sum_ / n;
  const double sd = std::sqrt(std::max(0.0, delay_squares_ / n - mean * mean));
  s.precision(3);
  s << std::fixed << "; delays mean " << mean << " ms, SD " << sd << " ms over " << delayed_ << " packets";
  return s.str();
}

}  // namespace tracemod
