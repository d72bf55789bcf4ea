#include "packet/series_queue.hh"

#include <algorithm>
#include <utility>

namespace tracemod {

// Hands what one stage releases to the next (or, from the last, to the link's far side), arriving when it left,
// so a delay runs from then and a link spends no opportunity before it; counts the departure and the arrival.
class SeriesQueue::Forward : public PacketSink {
 public:
  Forward(SeriesQueue& s, size_t from, PacketSink* out, Nanos now) : s_(s), from_(from), out_(out), now_(now) {}
  void send(Packet&& p) override {
    const uint64_t bytes = wire_ip_bytes(p);
    FlowCounters& f = s_.flows_[from_];
    const Nanos stay = p.release - p.arrival;
    f.out_bytes += bytes;
    ++f.departures;
    f.sojourn_sum += stay;
    f.sojourn_max = std::max(f.sojourn_max, stay);
    if (out_) return out_->send(std::move(p));
    s_.flows_[from_ + 1].in_bytes += bytes;
    p.arrival = p.release;
    s_.stages_[from_ + 1]->enqueue(std::move(p), now_);
  }

 private:
  SeriesQueue& s_;
  size_t from_;
  PacketSink* out_;
  Nanos now_;
};

SeriesQueue::SeriesQueue(std::vector<std::unique_ptr<PacketQueue>> stages)
    : stages_(std::move(stages)), flows_(stages_.size()) {}

void SeriesQueue::enqueue(Packet&& p, Nanos now) {
  flows_.front().in_bytes += wire_ip_bytes(p);
  stages_.front()->enqueue(std::move(p), now);
  count();
}

void SeriesQueue::dequeue_ready(Nanos now, PacketSink& out) {
  for (size_t i = 0; i < stages_.size(); ++i) {
    Forward next(*this, i, i + 1 == stages_.size() ? &out : nullptr, now);
    stages_[i]->dequeue_ready(now, next);
  }
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

// Every stage missed the same time: a link among them must not send it in a burst either.
void SeriesQueue::stalled(Nanos from, Nanos to) {
  for (auto& s : stages_) s->stalled(from, to);
}

Nanos SeriesQueue::take_stage_sojourn_max(size_t i) {
  return std::exchange(flows_[i].sojourn_max, 0);
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
    stats_.dropped_bytes += s->stats().dropped_bytes;
    for (int c = 0; c < kDropCauses; ++c) stats_.dropped_by[c] += s->stats().dropped_by[c];
  }
}

}  // namespace tracemod
