#include "effects/delay_queue.hh"

namespace tracemod {

DelayQueue::DelayQueue(Nanos delay, uint64_t memory_limit) : delay_(delay), memory_limit_(memory_limit) {}

void DelayQueue::enqueue(Packet&& p, Nanos now) {
  const uint32_t n = p.segments();
  stats_.in_packets += n;
  if (stats_.queued_bytes + p.buf.capacity() > memory_limit_) return drop(p, n, now, DropCause::kQueue);
  p.release = p.arrival + delay_;  // the delay runs from when the frame entered the link
  stats_.queued_packets += n;
  stats_.queued_bytes += p.buf.capacity();
  queue_.push_back(std::move(p));
}

void DelayQueue::dequeue_ready(Nanos now, PacketSink& out) {
  while (!queue_.empty() && queue_.front().release <= now) {
    Packet p = queue_.pop_front();
    const uint32_t n = p.segments();
    release(std::move(p), n, out);
  }
}

Nanos DelayQueue::next_event() const {
  return queue_.empty() ? kNever : queue_.front().release;
}

}  // namespace tracemod
