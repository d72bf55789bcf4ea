#include "effects/onoff_queue.hh"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "packet/segmenter.hh"
#include "util/error.hh"
#include "util/file_descriptor.hh"
#include "util/parse.hh"

namespace tracemod {

RandomOnOff::RandomOnOff(Distribution on, Distribution off, RandomStream random, Nanos start)
    : on_(std::move(on)), off_(std::move(off)), random_(random) {
  ends_ = saturating_add(start, draw(on_));
}

// A heavy tail (pareto with a shape near 1) can draw more nanoseconds than an int64 holds: such a state lasts for
// good rather than wrapping into the past.
Nanos RandomOnOff::draw(const Distribution& d) {
  return ceil_nanos(std::max(0.0, d.quantile(random_.open_uniform())));
}

bool RandomOnOff::on_at(Nanos t) {
  while (ends_ <= t) {
    is_on_ = !is_on_;
    ends_ = saturating_add(ends_, draw(is_on_ ? on_ : off_));
  }
  return is_on_;
}

std::string RandomOnOff::describe() const {
  return on_.describe() + " on, " + off_.describe() + " off";
}

FileOnOff::FileOnOff(std::vector<Event> events, std::string name, Nanos start)
    : events_(std::move(events)), name_(std::move(name)), start_(start) {}

bool FileOnOff::on_at(Nanos t) {
  while (next_ < events_.size() && start_ + events_[next_].at <= t) is_on_ = events_[next_++].on;
  return is_on_;
}

Nanos FileOnOff::state_ends() const {
  return next_ < events_.size() ? start_ + events_[next_].at : kNever;
}

std::vector<FileOnOff::Event> FileOnOff::load(const std::string& path) {
  LineReader in(path);
  std::vector<Event> events;
  bool on = true;
  for (std::string_view line; in.next(line);) {
    std::istringstream words(std::string(line.substr(0, line.find('#'))));
    std::string time, state, extra;
    if (!(words >> time)) continue;
    if (!(words >> state) || (state != "on" && state != "off") || (words >> extra))
      in.fail("expected TIME on or TIME off (e.g. 12.5s off)");
    Nanos at = 0;
    try {
      at = parse_duration(time, 1000 * kMillisecond);
    } catch (const UsageError& e) {
      in.fail("invalid time " + quote_text(time) + ": " + e.what());
    }
    if (!events.empty() && at < events.back().at) in.fail("time goes back (" + time + ")");
    if ((state == "on") == on) in.fail("the link is already " + state + " (states alternate; it starts on)");
    on = state == "on";
    events.push_back(Event{at, on});
  }
  if (events.empty()) throw UsageError(path + ": no events (lines such as '12.5s off' and '13s on')");
  return events;
}

OnOffQueue::OnOffQueue(std::unique_ptr<OnOffSchedule> schedule, OffMode mode, const QueueSize& hold, BufferPool& pool)
    : schedule_(std::move(schedule)), mode_(mode), limits_(hold), pool_(pool) {}

bool OnOffQueue::fits(uint64_t segments, uint64_t ip_bytes, uint64_t buffer_bytes) const {
  return stats_.queued_bytes + buffer_bytes <= kQueueMemoryLimit &&
         (limits_.packets == 0 || stats_.queued_packets - control_packets_ + segments <= limits_.packets) &&
         (limits_.bytes == 0 || queued_ip_bytes_ + ip_bytes <= limits_.bytes);
}

void OnOffQueue::queue(Ring<Packet>& ring, Packet&& p, uint32_t segments, uint32_t ip_bytes, Nanos release) {
  p.release = release;
  stats_.queued_packets += segments;
  stats_.queued_bytes += p.buf.capacity();
  queued_ip_bytes_ += ip_bytes;
  if (&ring == &control_) control_packets_ += segments;
  ring.push_back(std::move(p));
}

// Held until the link comes back; a frame that does not fit whole is split, and what does not fit dropped.
void OnOffQueue::hold(Packet&& p, uint32_t segments, Nanos release, Nanos now) {
  const SegmentShape shape = segment_shape(p);
  if (fits(segments, shape.total_ip_bytes(), p.buf.capacity())) {
    held_ += segments;
    return queue(queue_, std::move(p), segments, shape.total_ip_bytes(), release);
  }
  const auto one = [&](Packet&& s) {
    if (!fits(1, s.ip_size(), s.buf.capacity())) return drop(s, 1, now, DropCause::kQueue);
    ++held_;
    queue(queue_, std::move(s), 1, s.ip_size(), release);
  };
  if (segments == 1 || !segment_gso(p, pool_, one)) drop(p, segments, now, DropCause::kQueue);
}

void OnOffQueue::enqueue(Packet&& p, Nanos now) {
  const uint32_t n = p.segments();
  stats_.in_packets += n;
  seen_ = std::max(seen_, p.arrival);
  // Link-control frames (ARP, neighbour discovery) belong to the emulation's Ethernet, not the emulated link,
  // and pass at once whatever the state, not behind held packets: held, they would make the kernel give up
  // resolving its neighbour during a long outage and drop the very packets the user asked to be held
  // (docs/ARCHITECTURE.md, "Link-control frames").
  if (is_link_control(p)) return queue(control_, std::move(p), n, 0, seen_);
  if ((on_ = schedule_->on_at(seen_))) return queue(queue_, std::move(p), n, segment_shape(p).total_ip_bytes(), seen_);
  if (mode_ == OffMode::kDrop) {
    dropped_off_ += n;
    return drop(p, n, now, DropCause::kOutage);
  }
  hold(std::move(p), n, schedule_->state_ends(), now);
}

void OnOffQueue::send_front(Ring<Packet>& ring, PacketSink& out) {
  Packet p = ring.pop_front();
  const uint32_t n = p.segments();
  if (&ring == &queue_)
    queued_ip_bytes_ -= segment_shape(p).total_ip_bytes();
  else
    control_packets_ -= n;
  release(std::move(p), n, out);
}

void OnOffQueue::dequeue_ready(Nanos now, PacketSink& out) {
  if (now - kArrivalSlack > seen_) on_ = schedule_->on_at(seen_ = now - kArrivalSlack);
  send_due_in_order(queue_, control_, now, release_of, [&](Ring<Packet>& ring) { send_front(ring, out); });
}

Nanos OnOffQueue::next_event() const {
  return first_release(queue_, control_, release_of);
}

std::string OnOffQueue::summary() const {
  std::string s = schedule_->describe() + "; off: ";
  if (mode_ == OffMode::kDrop) return s + "drop: " + std::to_string(dropped_off_) + " packets dropped";
  return s + "hold" + describe_queue_size(limits_) + ": " + std::to_string(held_) + " packets held";
}

}  // namespace tracemod
