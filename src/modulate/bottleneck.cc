#include "modulate/bottleneck.hh"

#include <algorithm>
#include <cmath>

namespace tracemod::modulate {
namespace {

// About 146 years of CLOCK_MONOTONIC. A packet that would not leave the bottleneck before it (a rate of bits per
// second behind long outages) is refused as by a full queue: the times of those behind it would otherwise pass
// what an int64 holds. Every time computed below stays under it, plus at most a period and a packet's service.
constexpr Nanos kHorizon = kNever / 2;

}  // namespace

bool Bottleneck::full(const State& s, uint64_t bytes, uint32_t segments) const {
  return (s.queue.packets && waiting_packets_ + segments > s.queue.packets) ||
         (s.queue.bytes && waiting_bytes_ + bytes > s.queue.bytes);
}

Service Bottleneck::serve(Nanos arrival, uint64_t bytes, uint32_t segments) {
  while (!waiting_.empty() && waiting_.front().start <= arrival) {
    const Waiting w = waiting_.pop_front();
    waiting_bytes_ -= w.bytes;
    waiting_packets_ -= w.segments;
  }
  Service sv;
  const Timeline::Segment now = timeline_.at(arrival);
  if (now.state == Timeline::kNone) {
    sv.fate = Service::kEnded;
  } else if (timeline_.state(now.state).off == Outage::kDrop) {
    sv.fate = Service::kOutage;
  } else {
    const Nanos free = free_;
    sv = pass(std::max(arrival, free_), bytes);
    const bool never = sv.fate == Service::kServed && sv.end == kNever;  // beyond the horizon
    const bool waits = sv.fate == Service::kServed ? sv.start > arrival : sv.dropped > arrival;
    if (!waits && !never) return sv;
    if (!never && !full(timeline_.state(now.state), bytes, segments)) {
      if (sv.fate == Service::kServed) {
        waiting_.push_back({sv.start, bytes, segments});
        waiting_bytes_ += bytes;
        waiting_packets_ += segments;
      }
      return sv;
    }
    free_ = free;  // refused: it takes no part in the service
    sv = Service{};
    sv.fate = Service::kQueueFull;
  }
  sv.dropped = arrival;
  return sv;
}

// Serves BYTES from FROM on, state by state. A service that would end beyond the horizon ends at kNever, and
// leaves free_ as it was.
Service Bottleneck::pass(Nanos from, uint64_t bytes) {
  const Schedule& schedule = timeline_.schedule();
  Service sv;
  sv.start = -1;
  double left = static_cast<double>(bytes);
  Nanos t = from;
  for (size_t walked = 0;; ++walked) {
    if (t >= kHorizon) {
      sv.end = kNever;
      return sv;
    }
    const Timeline::Segment seg = timeline_.at(t);
    if (seg.state == Timeline::kNone) {  // the schedule, played once, ended first: nothing leaves any more
      sv.fate = Service::kEnded;
      sv.dropped = free_ = timeline_.end();
      return sv;
    }
    const State& s = timeline_.state(seg.state);
    if (s.off == Outage::kDrop) {  // it was waiting or in service when the outage began
      sv.fate = Service::kOutage;
      sv.dropped = free_ = t;
      return sv;
    }
    if (walked > schedule.states().size() && !schedule.drops_in_outages() && !timeline_.once()) {
      // A whole period has passed without finishing it: skip the periods it surely still needs.
      const double periods = std::floor(left / schedule.bytes_per_period()) - 1;
      if (periods >= 1 && static_cast<double>(t) + periods * static_cast<double>(schedule.period()) >= kHorizon) {
        t = kHorizon;
        continue;
      }
      if (periods >= 1) {
        t += static_cast<Nanos>(periods) * schedule.period();
        left -= periods * schedule.bytes_per_period();
        walked = 0;
        continue;
      }
    }
    if (s.off == Outage::kHold) {
      t = seg.end;
      continue;
    }
    if (sv.start < 0) sv.start = t;
    const double need = left * s.byte_cost;
    if (need <= static_cast<double>(seg.end - t)) {
      sv.end = free_ = std::min(t + static_cast<Nanos>(std::ceil(need)), seg.end);
      sv.state = seg.state;
      sv.state_begin = seg.begin;
      return sv;
    }
    left -= static_cast<double>(seg.end - t) / s.byte_cost;
    t = seg.end;
  }
}

}  // namespace tracemod::modulate
