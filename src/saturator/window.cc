#include "saturator/window.hh"

#include <algorithm>

namespace tracemod::record {
namespace {
// The largest RTT is remembered over two windows of this length, so it decays after a long outage.
constexpr Nanos kRttMemory = 10000 * kMillisecond;
}  // namespace

WindowParams wifi_window() {
  WindowParams p;
  p.low_delay = 20 * kMillisecond;  // a Wi-Fi driver queue holds tens of ms; fq_codel targets 5-20 ms
  p.high_delay = 80 * kMillisecond;
  p.max_window = 2048;
  p.loss_timeout = 300 * kMillisecond;
  p.loss_shrinks = true;
  return p;
}

WindowParams lte_window() {
  WindowParams p;
  p.low_delay = 750 * kMillisecond;  // the Saturator's thresholds: LTE buffers absorb seconds
  p.high_delay = 3000 * kMillisecond;
  p.max_window = 16384;
  p.loss_timeout = 2000 * kMillisecond;
  return p;
}

WindowParams auto_window() {
  WindowParams p = wifi_window();
  p.adaptive = true;
  return p;
}

WindowControl::WindowControl(const WindowParams& params)
    : p_(params), start_(params), window_(std::clamp(params.initial_window, params.min_window, params.max_window)) {}

void WindowControl::on_sent(uint64_t seq, Nanos now, bool held) {
  sent_.push_back({seq, now, State::kInFlight, held, ack_lateness_});
  ++in_flight_;
}

WindowControl::Sent* WindowControl::find(uint64_t seq) {
  if (sent_.empty() || seq < sent_.front().seq || seq > sent_.back().seq) return nullptr;
  Sent& s = sent_[seq - sent_.front().seq];  // sequence numbers are consecutive
  return s.seq == seq ? &s : nullptr;
}

void WindowControl::on_ack(uint64_t seq, Nanos send, Nanos recv, Nanos now) {
  const DryQueue::Arrival arrival = dry_.add(send, recv);
  last_qdelay_ = arrival.qdelay;
  const Nanos ack_delay = now - recv;
  if (!have_ack_delay_ || ack_delay < min_ack_delay_) min_ack_delay_ = ack_delay, have_ack_delay_ = true;
  ack_lateness_ = ack_delay - min_ack_delay_;
  const Nanos rtt = now - send;
  if (now - max_rtt_since_ > kRttMemory) prev_max_rtt_ = max_rtt_, max_rtt_ = 0, max_rtt_since_ = now;
  max_rtt_ = std::max(max_rtt_, rtt);
  last_rtt_ = rtt;
  // Not dry: it waited in the queue through the gap before it, so the link delivered nothing meanwhile.
  if (!arrival.dry && arrival.gap >= p_.low_delay) stall_end_ = recv, stall_qdelay_ = arrival.qdelay;
  Sent* s = find(seq);
  if (s && p_.adaptive && arrival.dry && stall_qdelay_ > 0 && recv - stall_end_ < kBurstAfterStall) adapt(*s, now);
  if (s && s->state == State::kInFlight) {
    --in_flight_;
    ++acked_;
    adjust(last_qdelay_, now);
  } else if (!s || s->state == State::kLost) {
    auto it = std::lower_bound(recently_lost_.begin(), recently_lost_.end(), seq);
    if (it != recently_lost_.end() && *it == seq) {
      recently_lost_.erase(it);
      --lost_, ++acked_;  // it was only late; its slot was already given back
    }
  }
  if (s) s->state = State::kAcked;
  if (seq >= kReorderSlack) declare_lost_before(seq - kReorderSlack + 1, now);
  trim();
}

void WindowControl::adjust(Nanos qdelay, Nanos now) {
  if (qdelay < p_.low_delay && window_ < p_.max_window && now >= grow_after_) ++window_;
  if (qdelay > p_.high_delay && window_ > p_.min_window) --window_;
}

void WindowControl::adapt(const Sent& s, Nanos now) {
  const Nanos queued = stall_qdelay_;
  if (s.held || 2 * s.ack_lateness >= queued || start_.low_delay <= 0) return;
  const WindowParams lte = lte_window();
  const Nanos top_low = std::max(start_.low_delay, lte.low_delay);
  if (p_.low_delay >= top_low) return;
  unsigned n = doublings_ + 1;
  while ((start_.low_delay << n) < 2 * queued && (start_.low_delay << n) < top_low) ++n;
  doublings_ = n;
  p_.low_delay = std::min(start_.low_delay << n, top_low);
  p_.high_delay = std::min(start_.high_delay << n, std::max(start_.high_delay, lte.high_delay));
  p_.max_window = static_cast<uint32_t>(
      std::min<uint64_t>(uint64_t{start_.max_window} << n, std::max(start_.max_window, lte.max_window)));
  p_.loss_shrinks = false;
  changes_.push_back({now, p_.low_delay, p_.high_delay, queued});
  stall_qdelay_ = 0;  // one stall, one rise
}

// Later packets got through: the queue dropped these, so it is full.
void WindowControl::declare_lost_before(uint64_t seq, Nanos now) {
  for (Sent& s : sent_) {
    if (s.seq >= seq) break;
    if (s.state != State::kInFlight) continue;
    mark_lost(s);
    if (!p_.loss_shrinks) continue;
    grow_after_ = std::max(grow_after_, now + last_rtt_);
    if (window_ > p_.min_window) --window_;
  }
}

void WindowControl::mark_lost(Sent& s) {
  if (s.state != State::kInFlight) return;
  s.state = State::kLost;
  --in_flight_;
  ++lost_;
  recently_lost_.push_back(s.seq);
  if (recently_lost_.size() > kRememberLost) recently_lost_.pop_front();
}

void WindowControl::trim() {
  while (!sent_.empty() && sent_.front().state != State::kInFlight) sent_.pop_front();
}

Nanos WindowControl::loss_deadline() const {
  return std::max(p_.loss_timeout, 2 * std::max(max_rtt_, prev_max_rtt_));
}

Nanos WindowControl::next_expiry() const {
  return sent_.empty() ? kNever : sent_.front().time + loss_deadline();
}

uint64_t WindowControl::expire(Nanos now) {
  uint64_t n = 0;
  const Nanos deadline = loss_deadline();
  for (Sent& s : sent_) {
    if (now - s.time < deadline) break;
    if (s.state == State::kInFlight) mark_lost(s), ++n;
  }
  trim();
  return n;
}

}  // namespace tracemod::record
