#include "disciplines/queue_discipline.hh"

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "disciplines/ecn.hh"
#include "util/error.hh"
#include "util/parse.hh"

namespace tracemod {

namespace {

bool within(const QueueLimits& limits, uint64_t packets, uint64_t bytes) {
  return (limits.packets == 0 || packets <= limits.packets) && (limits.bytes == 0 || bytes <= limits.bytes);
}

}  // namespace

void QueueDiscipline::push(QueuedPacket&& p) {
  packets_ += p.segments;
  bytes_ += p.ip_bytes;
  memory_ += p.packet.buf.capacity();
  queue_.push_back(std::move(p));
}

QueuedPacket QueueDiscipline::pop() {
  QueuedPacket p = queue_.pop_front();
  packets_ -= p.segments;
  bytes_ -= p.ip_bytes;
  memory_ -= p.packet.buf.capacity();
  return p;
}

bool QueueDiscipline::take(QueuedPacket& out) {
  if (queue_.empty()) return false;
  out = pop();
  return true;
}

bool QueueDiscipline::mark(QueuedPacket& p) {
  if (!mark_ce(p.packet)) {
    unmarkable_ += p.segments;
    return false;
  }
  marks_ += p.segments;
  lane_marks_[p.lane] += p.segments;
  return true;
}

bool QueueDiscipline::fits(const QueueLimits& limits, const QueuedPacket& p) const {
  return !over_memory(p) && within(limits, packets_ + p.segments, bytes_ + p.ip_bytes);
}

namespace {

// Never drops by policy; only the memory bound applies.
class InfiniteQueue : public QueueDiscipline {
 public:
  using QueueDiscipline::QueueDiscipline;
  void enqueue(QueuedPacket&& p, Nanos now, DropSink& drops) override {
    if (over_memory(p)) return drops.dropped(std::move(p), now, DropCause::kQueue);
    push(std::move(p));
  }
  bool dequeue(QueuedPacket& out, Nanos, DropSink&) override { return take(out); }
  bool takes_whole(const QueuedPacket& p) const override { return !over_memory(p); }
  std::string describe() const override { return "infinite"; }
};

// droptail and drophead: FIFOs with limits, which take a GSO frame whole when it fits without a drop.
class LimitedQueue : public QueueDiscipline {
 public:
  LimitedQueue(const char* name, const QueueLimits& limits, uint64_t memory_limit)
      : QueueDiscipline(memory_limit), limits_(limits), name_(name) {}
  bool dequeue(QueuedPacket& out, Nanos, DropSink&) override { return take(out); }
  bool takes_whole(const QueuedPacket& p) const override { return fits(limits_, p); }
  std::string describe() const override { return name_ + describe_queue_size(limits_); }

 protected:
  const QueueLimits limits_;

 private:
  const std::string name_;
};

// Drops the arrival when it would exceed a limit.
class DropTailQueue : public LimitedQueue {
 public:
  DropTailQueue(const QueueLimits& limits, uint64_t memory_limit) : LimitedQueue("droptail", limits, memory_limit) {}
  void enqueue(QueuedPacket&& p, Nanos now, DropSink& drops) override {
    if (!fits(limits_, p)) return drops.dropped(std::move(p), now, DropCause::kQueue);
    push(std::move(p));
  }
};

// Drops from the head until the arrival fits. An arrival that could not fit even alone is dropped itself
// (emptying the queue for it would not help).
class DropHeadQueue : public LimitedQueue {
 public:
  DropHeadQueue(const QueueLimits& limits, uint64_t memory_limit) : LimitedQueue("drophead", limits, memory_limit) {}
  void enqueue(QueuedPacket&& p, Nanos now, DropSink& drops) override {
    if (over_memory(p) || !within(limits_, p.segments, p.ip_bytes))
      return drops.dropped(std::move(p), now, DropCause::kQueue);
    while (!fits(limits_, p)) drops.dropped(pop(), now, DropCause::kQueue);
    push(std::move(p));
  }
};

}  // namespace

std::unique_ptr<QueueDiscipline> make_fifo_queue(const std::string& name, const QueueLimits& limits,
                                                 uint64_t memory_limit) {
  if (name == "droptail") return std::make_unique<DropTailQueue>(limits, memory_limit);
  if (name == "drophead") return std::make_unique<DropHeadQueue>(limits, memory_limit);
  return std::make_unique<InfiniteQueue>(memory_limit);
}

}  // namespace tracemod
