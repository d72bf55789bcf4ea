// The sender's window, after the Saturator: keep the bottleneck queue backlogged without overflowing it.
// Each acknowledged packet gives a queueing-delay sample (one-way delay minus the smallest one seen, so the
// two clocks need not agree); below the low threshold the window grows by one packet, above the high one it
// shrinks by one, in between it holds. Never reads the clock: callers pass `now`.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>

#include "util/clock.hh"

namespace tracemod::record {

struct WindowParams {
  Nanos low_delay = 50 * kMillisecond;
  Nanos high_delay = 200 * kMillisecond;
  uint32_t min_window = 4;
  uint32_t max_window = 4096;
  uint32_t initial_window = 16;
  // A packet unacknowledged for max(this, 2 x the largest recent RTT) is declared lost.
  Nanos loss_timeout = 500 * kMillisecond;
};

// Presets documented in tm-record(1): Wi-Fi driver queues are shallow, LTE buffers deep and bursty.
WindowParams wifi_window();
WindowParams lte_window();

class WindowControl {
 public:
  explicit WindowControl(const WindowParams& params);

  bool can_send() const { return in_flight_ < window_; }
  void on_sent(uint64_t seq, Nanos now);
  // The receiver got SEQ (sent at SEND on our clock) at RECV on its clock; NOW is when we learnt it.
  void on_ack(uint64_t seq, Nanos send, Nanos recv, Nanos now);
  // Declares lost what is overdue; returns how many were declared now.
  uint64_t expire(Nanos now);
  // When expire() next has something to do (kNever if nothing is in flight).
  Nanos next_expiry() const;

  const WindowParams& params() const { return p_; }
  uint32_t window() const { return window_; }
  uint32_t in_flight() const { return in_flight_; }
  uint64_t acked() const { return acked_; }
  uint64_t lost() const { return lost_; }  // declared lost and never acknowledged since
  Nanos queueing_delay() const { return last_qdelay_; }
  Nanos loss_deadline() const;

 private:
  enum class State : uint8_t { kInFlight, kAcked, kLost };
  struct Sent {
    uint64_t seq;
    Nanos time;
    State state;
  };
  // Packets this many sequence numbers behind an acknowledged one are lost (allows light reordering).
  static constexpr uint64_t kReorderSlack = 3;
  void adjust(Nanos qdelay);
  void declare_lost_before(uint64_t seq);
  void mark_lost(Sent& s);
  void trim();
  Sent* find(uint64_t seq);

  WindowParams p_;
  uint32_t window_;
  uint32_t in_flight_ = 0;
  uint64_t acked_ = 0, lost_ = 0;
  std::deque<Sent> sent_;               // in sequence order; the front is the oldest not yet trimmed
  std::deque<uint64_t> recently_lost_;  // ascending; a late acknowledgement of one undoes its loss
  static constexpr size_t kRememberLost = 4096;
  bool have_min_ = false;
  Nanos min_owd_ = 0, last_qdelay_ = 0;
  Nanos max_rtt_ = 0, max_rtt_since_ = 0, prev_max_rtt_ = 0;
};

}  // namespace tracemod::record
