// When the bottleneck queue ran out of the recorder's packets, judged from each arrival's send and receive
// times, and what that cost the recording. A trace holds only the opportunities that found a packet waiting:
// while the queue is dry, the link's opportunities go unrecorded. Never reads the clock.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <vector>

#include "util/clock.hh"

namespace tracemod::record {

// A packet that reached the bottleneck after the packet before it had left found the queue empty. It reached
// the bottleneck no earlier than its send time plus the smallest one-way delay seen (that delay is the path
// without queueing; it also holds the clocks' offset, which cancels). The packet before left no later than it
// was received; packets the link delivers at once (a batch: a TTI, an aggregate, a Mahimahi millisecond)
// arrive one after another as they cross the wire, so a batch left when its first packet was received
// (arrivals less than kBatchGap apart, spanning at most kBatchSpan, make one batch). Timing noise after the
// bottleneck can hide a dry moment but not invent one; a smallest delay that is not yet the path's own (early
// in a recording) can.
class DryQueue {
 public:
  static constexpr Nanos kBatchGap = 200 * 1000, kBatchSpan = kMillisecond;

  struct Arrival {
    Nanos qdelay = 0;  // one-way delay above the smallest seen
    Nanos gap = 0;     // since the arrival before
    bool dry = false;  // the queue was empty between dry_from and dry_to (receiver clock)
    Nanos dry_from = 0, dry_to = 0;
  };
  // The next arrival, in arrival order (a packet overtaken by a later one is judged like any other).
  Arrival add(Nanos send, Nanos recv);
  bool started() const { return started_; }

 private:
  bool started_ = false;
  Nanos min_owd_ = 0, last_recv_ = 0, batch_head_ = 0;
};

// The opportunities a recording missed while the queue was dry, estimated per millisecond of receiver time
// (the trace's resolution): a millisecond in which the queue ran dry missed max(0, r - its arrivals), where r
// is what the link was last seen able to deliver: its rate over the most recent milliseconds in which the
// queue did not run dry (the fewest holding at least kRateArrivals arrivals, at most kRateSpan of them), or,
// if more, the most it delivered in one of the kPeakSpan milliseconds before (a burst shows there, while a
// rate over time averages it away with the stall before it). Milliseconds in which the queue did not run dry
// missed nothing: every opportunity found a packet. Fixed memory however long the recording.
class ShortfallEstimate {
 public:
  static constexpr uint64_t kRateArrivals = 32;
  static constexpr size_t kRateSpan = 1000;  // ms
  static constexpr size_t kPeakSpan = 3;     // ms

  void add(Nanos recv, const DryQueue::Arrival& a);  // in arrival order
  void finish();                                     // closes the milliseconds still open
  double missed() const { return missed_; }          // opportunities, estimated
  uint64_t moments() const { return moments_; }      // arrivals that found the queue dry
  Nanos dry_time() const { return dry_time_; }

 private:
  struct Bin {
    uint64_t arrivals = 0;
    bool dry = false;
  };
  // After this many milliseconds without arrivals, closing one more changes nothing but missed().
  static constexpr int64_t kSameAfter = kRateSpan + kPeakSpan;

  Bin& bin(int64_t index);
  void close_before(int64_t index);
  void close(const Bin& b);
  void close_gap(int64_t now, int64_t from, int64_t to);
  void close_empty(int64_t count, bool dry);
  double recent_rate() const;

  bool started_ = false;
  Nanos first_ = 0;
  int64_t first_open_ = 0;
  std::deque<Bin> open_;           // milliseconds first_open_, first_open_ + 1, ...
  std::vector<uint64_t> backlog_;  // arrivals of the last kRateSpan milliseconds that did not run dry (a ring)
  size_t backlog_next_ = 0;
  std::deque<uint64_t> last_;  // arrivals of the last kPeakSpan milliseconds closed
  double missed_ = 0;
  uint64_t moments_ = 0;
  Nanos dry_time_ = 0;
};

}  // namespace tracemod::record
