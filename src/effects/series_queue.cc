#include "effects/series_queue.hh"

#include <algorithm>
#include <utility>

namespace tracemod {
namespace {

// Hands what one stage releases to the next, arriving when it left (so a delay runs from then, and a link spends
// no opportunity before it).
class Forward : public PacketSink {
 public:
  Forward(PacketQueue& next, Nanos now) : next_(next), now_(now) {}
  void send(Packet&& p) override {
    p.arrival = p.release;
    next_.enqueue(std::move(p), now_);
  }

 private:
  PacketQueue& next_;
  Nanos now_;
};

}  // namespace

SeriesQueue::SeriesQueue(std::vector<std::unique_ptr<PacketQueue>> stages) : stages_(std::move(stages)) {}

void SeriesQueue::enqueue(Packet&& p, Nanos now) {
  stages_.front()->enqueue(std::move(p), now);
  count();
}

void SeriesQueue::dequeue_ready(Nanos now, PacketSink& out) {
  for (size_t i = 0; i + 1 < stages_.size(); ++i) {
    Forward next(*stages_[i + 1], now);
    stages_[i]->dequeue_ready(now, next);
  }
  stages_.back()->dequeue_ready(now, out);
  count();
}

Nanos SeriesQueue::next_event() const {
  Nanos next = kNever;
  for (const auto& s : stages_) next = std::min(next, s->next_event());
  return next;
}

bool SeriesQueue::finished() const {
  return std::any_of(stages_.begin(), stages_.end(), [](const auto& s) { return s->finished(); });
}

std::string SeriesQueue::summary() const {
  std::string text;
  for (const auto& s : stages_)
    if (const std::string one = s->summary(); !one.empty()) text += (text.empty() ? "" : "; ") + one;
  return text;
}

// The series' counters from its stages': in at the first, out of the last, dropped and queued anywhere, so that
// in == out + dropped + queued holds for the whole as for each stage.
void SeriesQueue::count() {
  stats_ = QueueStats{};
  stats_.in_packets = stages_.front()->stats().in_packets;
  stats_.out_packets = stages_.back()->stats().out_packets;
  for (const auto& s : stages_) {
    stats_.dropped_packets += s->stats().dropped_packets;
    stats_.queued_packets += s->stats().queued_packets;
    stats_.queued_bytes += s->stats().queued_bytes;
  }
}

}  // namespace tracemod
