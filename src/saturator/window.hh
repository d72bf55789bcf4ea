// The sender's window, after the Saturator: keep the bottleneck queue backlogged without overflowing it.
// Each acknowledged packet gives a queueing-delay sample (one-way delay minus the smallest one seen, so the
// two clocks need not agree); below the low threshold the window grows by one packet, above the high one it
// shrinks by one, in between it holds. With Wi-Fi's thresholds, a packet lost while later ones got through
// shrinks it by one too, and growth pauses for a round trip after it: on Wi-Fi that loss is the recorder's
// own packets dropped by the driver's short queue or its AQM (Syed et al.), and a larger window adds nothing
// to the recording but drops. (A packet that times out tells of a stall, not of a full queue.) With LTE's,
// loss is ignored, as the Saturator does: a deep queue overflowing costs no opportunity, while one kept
// shorter can miss a burst. Adaptive thresholds (--profile auto) start as Wi-Fi's and rise when a burst after
// a stall shows the queue they keep too short for the link (see on_ack). Never reads the clock: callers pass
// `now`.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <vector>

#include "saturator/dry_queue.hh"
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
  bool adaptive = false;      // raise the thresholds (and max_window) when the queue proves too short
  bool loss_shrinks = false;  // a loss shrinks the window (see above); off once adaptive ones rise
};

// Presets documented in tm-record(1): Wi-Fi driver queues are shallow, LTE buffers deep and bursty; auto
// starts as Wi-Fi and may rise as far as LTE.
WindowParams wifi_window();
WindowParams lte_window();
WindowParams auto_window();

// A rise of adaptive thresholds: at AT (sender's clock), to LOW/HIGH, because the queue ran dry with the
// window full in a burst after a stall through which packets had queued QUEUED.
struct ThresholdChange {
  Nanos at = 0, low = 0, high = 0, queued = 0;
};

class WindowControl {
 public:
  explicit WindowControl(const WindowParams& params);

  bool can_send() const { return in_flight_ < window_; }
  // HELD: the sender had been held back by a full local queue (ENOBUFS), not by the window.
  void on_sent(uint64_t seq, Nanos now, bool held = false);
  // The receiver got SEQ (sent at SEND on our clock) at RECV on its clock; NOW is when we learnt it.
  // Adaptive thresholds rise when a burst after a stall empties the queue: a packet finds the queue dry
  // (DryQueue) less than kBurstAfterStall after a stall (the link delivering nothing for at least low_delay
  // while packets of ours waited, so that they came out having queued Q, at least low_delay), the sender
  // was held back by nothing but the window, and it had learnt of the arrival that freed the window
  // promptly (later than the fastest acknowledgement by less than Q / 2: a stalled sender or feedback path
  // empties a queue too, and says nothing about the link). The low threshold rises to 2 Q at least, by
  // doublings, and the high threshold and max_window with it, at most to LTE's (or the starting values,
  // if higher). A link that shows no stall keeps Wi-Fi's thresholds, however its rate moves.
  void on_ack(uint64_t seq, Nanos send, Nanos recv, Nanos now);
  // Declares lost what is overdue; returns how many were declared now.
  uint64_t expire(Nanos now);
  // When expire() next has something to do (kNever if nothing is in flight).
  Nanos next_expiry() const;

  const WindowParams& params() const { return p_; }
  const std::vector<ThresholdChange>& changes() const { return changes_; }
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
    bool held;
    Nanos ack_lateness;  // of the acknowledgement processed last before it was sent
  };
  // Packets this many sequence numbers behind an acknowledged one are lost (allows light reordering).
  static constexpr uint64_t kReorderSlack = 3;
  void adjust(Nanos qdelay, Nanos now);
  void adapt(const Sent& s, Nanos now);
  static constexpr Nanos kBurstAfterStall = 100 * kMillisecond;
  void declare_lost_before(uint64_t seq, Nanos now);
  void mark_lost(Sent& s);
  void trim();
  Sent* find(uint64_t seq);

  WindowParams p_, start_;
  unsigned doublings_ = 0;
  std::vector<ThresholdChange> changes_;
  uint32_t window_;
  uint32_t in_flight_ = 0;
  uint64_t acked_ = 0, lost_ = 0;
  std::deque<Sent> sent_;               // in sequence order; the front is the oldest not yet trimmed
  std::deque<uint64_t> recently_lost_;  // ascending; a late acknowledgement of one undoes its loss
  static constexpr size_t kRememberLost = 4096;
  DryQueue dry_;
  Nanos last_qdelay_ = 0;
  Nanos stall_end_ = 0, stall_qdelay_ = 0;  // receive time of the arrival that ended the latest stall, its qdelay
  bool have_ack_delay_ = false;
  Nanos min_ack_delay_ = 0, ack_lateness_ = 0;  // receive-to-acknowledgement time (clocks' offset included)
  Nanos max_rtt_ = 0, max_rtt_since_ = 0, prev_max_rtt_ = 0, last_rtt_ = 0;
  Nanos grow_after_ = 0;  // no growth before this: a round trip after the latest loss
};

}  // namespace tracemod::record
