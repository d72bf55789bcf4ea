#include "record/window.hh"

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

WindowControl::WindowControl(const WindowParams& params)
    : p_(params), window_(std::clamp(params.initial_window, params.min_window, params.max_window)) {}

void WindowControl::on_sent(uint64_t seq, Nanos now) {
  sent_.push_back({seq, now, State::kInFlight});
  ++in_flight_;
}

WindowControl::Sent* WindowControl::find(uint64_t seq) {
  if (sent_.empty() || seq < sent_.front().seq || seq > sent_.back().seq) return nullptr;
  Sent& s = sent_[seq - sent_.front().seq];  // sequence numbers are consecutive
  return s.seq == seq ? &s : nullptr;
}

void WindowControl::on_ack(uint64_t seq, Nanos send, Nanos recv, Nanos now) {
  const Nanos owd = recv - send;
  if (!have_min_ || owd < min_owd_) min_owd_ = owd, have_min_ = true;
  last_qdelay_ = owd - min_owd_;
  const Nanos rtt = now - send;
  if (now - max_rtt_since_ > kRttMemory) prev_max_rtt_ = max_rtt_, max_rtt_ = 0, max_rtt_since_ = now;
  max_rtt_ = std::max(max_rtt_, rtt);
  Sent* s = find(seq);
  if (s && s->state == State::kInFlight) {
    --in_flight_;
    ++acked_;
    adjust(last_qdelay_);
  } else if (!s || s->state == State::kLost) {
    auto it = std::lower_bound(recently_lost_.begin(), recently_lost_.end(), seq);
    if (it != recently_lost_.end() && *it == seq) {
      recently_lost_.erase(it);
      --lost_, ++acked_;  // it was only late; its slot was already given back
    }
  }
  if (s) s->state = State::kAcked;
  if (seq >= kReorderSlack) declare_lost_before(seq - kReorderSlack + 1);
  trim();
}

void WindowControl::adjust(Nanos qdelay) {
  if (qdelay < p_.low_delay && window_ < p_.max_window) ++window_;
  if (qdelay > p_.high_delay && window_ > p_.min_window) --window_;
}

void WindowControl::declare_lost_before(uint64_t seq) {
  for (Sent& s : sent_) {
    if (s.seq >= seq) break;
    mark_lost(s);
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
