#include "packet/loss_queue.hh"

#include <algorithm>

#include "packet/segmenter.hh"

namespace tracemod {

LossQueue::LossQueue(double loss_rate, RandomStream random, BufferPool& pool)
    : rate_(loss_rate), random_(random), pool_(pool) {}

void LossQueue::pass(Packet&& p, uint32_t segments) {
  stats_.queued_packets += segments;
  stats_.queued_bytes += p.buf.capacity();
  ready_.push_back(std::move(p));
}

void LossQueue::enqueue(Packet&& p, Nanos) {
  const uint32_t n = p.segments();
  stats_.in_packets += n;
  if (is_link_control(p)) return pass(std::move(p), n);
  lost_.assign(n, false);
  uint32_t lost = 0;
  for (uint32_t i = 0; i < n; ++i)
    if (random_.uniform() < rate_) lost_[i] = true, ++lost;
  stats_.dropped_packets += lost;
  if (lost == 0) return pass(std::move(p), n);
  if (lost == n) return;
  uint32_t index = 0;
  const bool split = segment_gso(p, pool_, [&](Packet&& s) {
    if (!lost_[index++]) pass(std::move(s), 1);
  });
  if (!split) stats_.dropped_packets += n - lost;  // unsplittable frame: it cannot half-arrive
}

void LossQueue::dequeue_ready(Nanos, PacketSink& out) {
  while (!ready_.empty()) {
    Packet p = ready_.pop_front();
    const uint32_t n = p.segments();
    stats_.queued_packets -= n;
    stats_.queued_bytes -= p.buf.capacity();
    stats_.out_packets += n;
    out.send(std::move(p));
  }
}

Nanos LossQueue::next_event() const {
  return ready_.empty() ? kNever : ready_.front().arrival;
}

}  // namespace tracemod
