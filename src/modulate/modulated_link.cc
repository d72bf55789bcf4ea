#include "modulate/modulated_link.hh"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "packet/segmenter.hh"

namespace tracemod::modulate {
namespace {

// A random stream per direction and per stretch of a state (a state in a given loop of the schedule), so a
// seed reproduces every drop and a loop does not repeat the last one's.
RandomStream loss_stream(uint64_t seed, int lane, const Timeline& timeline, const Service& sv) {
  const uint64_t loop =
      static_cast<uint64_t>(sv.state_begin - timeline.start()) / static_cast<uint64_t>(timeline.schedule().period());
  return RandomStream(seed, (static_cast<uint64_t>(lane) + 1) * 0x9e3779b97f4a7c15ULL ^ loop * 0xbf58476d1ce4e5b9ULL ^
                                static_cast<uint64_t>(sv.state));
}

}  // namespace

ModulatedLink::ModulatedLink(const LinkConfig& config, BufferPool& pool)
    : config_(config),
      timeline_(config.schedule, config.start, config.once),
      bottleneck_(timeline_),
      pool_(pool),
      clock_(config.start),
      last_arrival_(config.start),
      next_state_(config.start),
      log_current_(config.log ? config.log->file() : nullptr) {
  for (const State& s : config.schedule->states())
    lossless_.push_back(make_loss_model("loss", s.loss, RandomStream(0, 0))->never());
}

// Logs the state changes up to T.
void ModulatedLink::advance(Nanos t) {
  clock_ = std::max(clock_, t);
  if (!config_.log) return;
  while (next_state_ <= clock_ && next_state_ != kNever) {
    const Timeline::Segment seg = timeline_.at(next_state_);
    if (seg.state == Timeline::kNone) {  // a schedule played once has ended
      next_state_ = kNever;
      break;
    }
    const char* d = config_.shared ? "both" : lanes_[0].queue ? "up" : "down";
    config_.log->state(seg.begin, d, seg.state, timeline_.state(seg.state));
    next_state_ = seg.end;
  }
}

// A GSO frame crosses whole only where that cannot be seen: no bottleneck, no residual cost, no loss and no
// outage at its arrival (then its wire packets would all have left at the same instant anyway).
bool ModulatedLink::whole(const Packet& p, Nanos arrival) const {
  const Timeline::Segment seg = timeline_.at(arrival);
  if (seg.state == Timeline::kNone) return true;
  const State& s = timeline_.state(seg.state);
  return s.off == Outage::kNone && s.byte_cost == 0 && s.residual_cost == 0 && lossless_[seg.state] &&
         (s.queue.packets == 0 || p.segments() <= s.queue.packets);
}

void ModulatedLink::enqueue(int lane, Packet&& p, Nanos now) {
  if (config_.shared) return merge_.push(lane, std::move(p));
  arrive(lane, std::move(p), now);
}

void ModulatedLink::arrive(int lane, Packet&& p, Nanos now) {
  // The kernel's receive time: when the packet entered the link, however late the ferry read it. Only the order
  // of arrivals is kept (the bottleneck serves in that order); a packet read after the link released others
  // later than it arrived is still served from its arrival.
  const Nanos arrival = std::clamp(p.arrival, last_arrival_, std::max(last_arrival_, now));
  last_arrival_ = arrival;
  advance(arrival);
  const SegmentShape shape = segment_shape(p);
  lanes_[lane].queue->counters().in_packets += shape.count;
  // Frames that exist only because the emulation's link is Ethernet: an outage that holds must not hold them
  // (the kernel would give up resolving its neighbour and drop what is held), nor a slow bottleneck spend
  // itself on the kernel's neighbour discovery.
  if (is_link_control(p)) return hold(lanes_[lane].control, lane, std::move(p), shape.count, arrival);
  if (shape.count > 1 && !whole(p, arrival)) {
    uint32_t i = 0;
    const bool split =
        segment_gso(p, pool_, [&](Packet&& s) { admit(lane, std::move(s), arrival, 1, shape.ip_bytes(i++)); });
    if (split) return;
  }
  admit(lane, std::move(p), arrival, shape.count, shape.total_ip_bytes());
}

void ModulatedLink::hold(Ring<Held>& ring, int lane, Packet&& p, uint32_t segments, Nanos when) {
  QueueStats& s = lanes_[lane].queue->counters();
  s.queued_packets += segments;
  s.queued_bytes += p.buf.capacity();
  memory_ += p.buf.capacity();
  p.release = when;
  ring.push_back(Held{std::move(p), segments});
}

// Whether the packet, served as SV, is lost after the bottleneck.
bool ModulatedLink::hit(int lane, uint64_t bytes, const Service& sv) {
  if (lossless_[sv.state]) return false;
  LaneState& l = lanes_[lane];
  if (l.loss_state_begin != sv.state_begin) {
    l.loss = make_loss_model("loss", timeline_.state(sv.state).loss, loss_stream(config_.seed, lane, timeline_, sv));
    l.loss_state_begin = sv.state_begin;
  }
  return l.loss->hit(static_cast<uint32_t>(bytes));
}

void ModulatedLink::admit(int lane, Packet&& p, Nanos arrival, uint32_t segments, uint64_t bytes) {
  LaneState& l = lanes_[lane];
  const ModulateLog::Passage passage{dir(lane), arrival, bytes, segments};
  if (memory_ + p.buf.capacity() > config_.memory_limit) {
    if (config_.log) config_.log->dropped(passage, arrival, "memory");
    return hold(l.refused, lane, std::move(p), segments, arrival);
  }
  const Service sv = bottleneck_.serve(arrival, bytes, segments);
  if (sv.fate != Service::kServed) {
    static const char* const why[] = {"", "queue", "outage", "ended"};
    if (config_.log) config_.log->dropped(passage, sv.dropped, why[sv.fate]);
    return hold(sv.dropped == arrival ? l.refused : l.lost, lane, std::move(p), segments, sv.dropped);
  }
  if (hit(lane, bytes, sv)) {
    if (config_.log) config_.log->lost(passage, sv.start, sv.end);
    return hold(l.lost, lane, std::move(p), segments, sv.end);
  }
  const State& s = timeline_.state(sv.state);
  const Nanos residual = static_cast<Nanos>(std::ceil(static_cast<double>(bytes) * s.residual_cost));
  l.last_release = std::max(sv.end + s.delay + residual, l.last_release);
  if (config_.log) config_.log->served(passage, sv.start, sv.end, l.last_release);
  hold(l.leaving, lane, std::move(p), segments, l.last_release);
}

// Tells the lane's observer of the drops due by NOW, in time order.
void ModulatedLink::report_drops(LaneState& l, Nanos now) {
  send_due_in_order(l.refused, l.lost, now, release_of, [&](Ring<Held>& ring) {
    Held h = ring.pop_front();
    release_memory(l, h);
    l.queue->count_drop(h.packet, h.segments, h.packet.release,
                        &ring == &l.lost ? DropCause::kLoss : DropCause::kQueue);
  });
}

void ModulatedLink::release_memory(LaneState& l, const Held& h) {
  QueueStats& s = l.queue->counters();
  s.queued_packets -= h.segments;
  s.queued_bytes -= h.packet.buf.capacity();
  memory_ -= h.packet.buf.capacity();
}

void ModulatedLink::dequeue_ready(int lane, Nanos now, PacketSink& out) {
  merge_.drain([&](int l, Packet&& p) { arrive(l, std::move(p), now); });
  advance(now);
  LaneState& l = lanes_[lane];
  report_drops(l, now);
  send_due_in_order(l.leaving, l.control, now, release_of, [&](Ring<Held>& ring) { send(l, ring, now, out); });
  log_current_.at(now);
}

void ModulatedLink::send(LaneState& l, Ring<Held>& ring, Nanos now, PacketSink& out) {
  Held h = ring.pop_front();
  memory_ -= h.packet.buf.capacity();
  if (&ring == &l.leaving) l.lateness.add(now - h.packet.release);
  l.queue->count_release(std::move(h.packet), h.segments, out);
}

Nanos ModulatedLink::next_event(int lane) const {
  if (!merge_.empty()) return merge_.earliest();  // already due: the arrivals wait to be served
  const LaneState& l = lanes_[lane];
  Nanos next = std::min(first_release(l.leaving, l.control, release_of), first_release(l.refused, l.lost, release_of));
  if (timeline_.once() && clock_ < timeline_.end()) next = std::min(next, timeline_.end());
  if (config_.log) next = std::min(next, next_state_);  // so the log shows each state change when it happens
  return std::min(next, log_current_.due());
}

void ModulatedLink::live(int, QueueLive& out) const {
  const Timeline::Segment now = timeline_.at(std::max(clock_, timeline_.start()));
  if (now.state == Timeline::kNone) {
    out.state = "ended";
    return;
  }
  const State& s = timeline_.state(now.state);
  out.state = "line " + std::to_string(s.line) + (s.off != Outage::kNone ? " off" : "");
}

std::string ModulatedLink::summary(int lane) const {
  const Schedule& sc = timeline_.schedule();
  std::ostringstream s;
  s << "schedule " << sc.name() << ": " << sc.states().size() << " states, " << static_cast<double>(sc.period()) / 1e9
    << " s" << (timeline_.once() ? " once" : " looping") << (config_.shared ? ", shared medium" : "") << "; ";
  const Lateness& late = lanes_[lane].lateness;
  if (late.count() == 0) return s.str() + "no departures";
  s << "departures late by p50 " << late.quantile_us(0.5) << " us, p99 " << late.quantile_us(0.99) << " us, max "
    << late.max() / 1000 << " us";
  return s.str();
}

}  // namespace tracemod::modulate
