#include "disciplines/aqm_codel.hh"

#include <cmath>

namespace tracemod {

void CodelQueue::enqueue(QueuedPacket&& p, Nanos now, DropSink& drops) {
  if (!fits(params_.limits, p)) return drops.dropped(std::move(p), now, DropCause::kQueue);
  push(std::move(p));
}

// Takes the head into OUT and says whether the sojourn time has been above target for an interval
// (the RFC's dodequeue). A queue left with at most one MTU is never considered above target.
bool CodelQueue::take_checked(QueuedPacket& out, Nanos now, bool& ok_to_drop) {
  ok_to_drop = false;
  if (!take(out)) {
    above_ = false;
    return false;
  }
  if (now - out.enqueued < params_.target || bytes() <= kMaxPacketBytes) {
    above_ = false;
  } else if (!above_) {
    above_ = true;
    first_above_ = now + params_.interval;
  } else if (now >= first_above_) {
    ok_to_drop = true;
  }
  return true;
}

Nanos CodelQueue::control_law(Nanos t) const {
  return t + static_cast<Nanos>(static_cast<double>(params_.interval) / std::sqrt(static_cast<double>(count_)));
}

// Re-entering soon after leaving, start from the drop rate that controlled the queue last time (RFC 8289 5.5:
// count becomes the number of drops of the last dropping state).
void CodelQueue::enter_dropping(Nanos now) {
  dropping_ = true;
  const uint32_t delta = count_ - lastcount_;
  count_ = delta > 1 && now - drop_next_ < 16 * params_.interval ? delta : 1;
  drop_next_ = control_law(now);
  lastcount_ = count_;
}

bool CodelQueue::dequeue(QueuedPacket& out, Nanos now, DropSink& drops) {
  bool ok_to_drop = false;
  if (!take_checked(out, now, ok_to_drop)) {
    dropping_ = false;
    return false;
  }
  if (dropping_) {
    if (!ok_to_drop) dropping_ = false;
    // A large backlog may make several drops due at once.
    while (dropping_ && now >= drop_next_) {
      ++count_;
      if (params_.ecn && mark(out)) {
        drop_next_ = control_law(drop_next_);
        return true;
      }
      drops.dropped(std::move(out), now, DropCause::kAqm);
      if (!take_checked(out, now, ok_to_drop)) {
        dropping_ = false;
        return false;
      }
      if (!ok_to_drop)
        dropping_ = false;
      else
        drop_next_ = control_law(drop_next_);
    }
    return true;
  }
  if (!ok_to_drop) return true;
  if (params_.ecn && mark(out)) {
    enter_dropping(now);
    return true;
  }
  drops.dropped(std::move(out), now, DropCause::kAqm);
  const bool have = take_checked(out, now, ok_to_drop);
  enter_dropping(now);
  return have;
}

std::string CodelQueue::describe() const {
  return "codel target=" + format_ms(params_.target) + " interval=" + format_ms(params_.interval) +
         describe_queue_size(params_.limits) + (params_.ecn ? " ecn=1" : "");
}

}  // namespace tracemod
