// A modulation schedule: states held one after the other, each for its duration, looping (Noble et al.'s
// replay trace, Seawind's state changes). A state gives the per-packet model's parameters: latency F, per-byte
// cost Vb at the bottleneck (where packets queue), residual per-byte cost Vr (paid without queueing), a loss
// model, the bottleneck queue's limit, and whether the link is off (an outage that drops or holds).
//
// A file mixes two line forms; `#` starts a comment:
//   d F Vb Vr L                           Noble's 5-tuple: d and F in ms, Vb and Vr in us per byte, L a fraction
//   DURATION [key=value...] [off]         keys delay (F), rate (1/Vb), residual (1/Vr), loss, queue, off
// A keyed line sets what it names and keeps the rest from the state before (the first state starts from no
// delay, no bottleneck, no loss, no queue limit); `off` belongs to its own line only.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "util/clock.hh"
#include "util/file_descriptor.hh"
#include "util/parse.hh"

namespace tracemod::modulate {

enum class Outage { kNone, kDrop, kHold };

struct State {
  Nanos duration = 0;
  Nanos delay = 0;           // F
  double byte_cost = 0;      // Vb: ns per IP byte at the bottleneck; 0: no bottleneck
  double residual_cost = 0;  // Vr: ns per IP byte, without queueing
  std::string loss = "0";    // a loss model as tm-loss reads it
  QueueSize queue;           // the bottleneck queue's limit (waiting packets, not the one in service); 0: none
  Outage off = Outage::kNone;
  size_t line = 0;  // where the schedule file gave it

  // "F=200 Vb=833.333333 Vr=0 L=0.01 queue=7pkts off=no": the parameters in Noble's units, for logs.
  std::string describe() const;
};

class Schedule {
 public:
  // Reads the schedule file PATH. Throws UsageError("PATH:LINE: what is wrong"), or naming PATH alone for a
  // file that cannot be read or holds no state.
  static Schedule load(const std::string& path);
  // The same from TEXT, NAME standing for the file in messages.
  static Schedule parse(const std::string& text, const std::string& name);

  const std::string& name() const { return name_; }
  const std::vector<State>& states() const { return states_; }
  // When state I starts, from the schedule's start; and the whole period.
  Nanos begin(size_t i) const { return begins_[i]; }
  Nanos period() const { return period_; }
  // IP bytes the bottleneck carries in one period (infinite if some state has no bottleneck), and whether some
  // state is an outage that drops: what lets a long wait skip whole periods.
  double bytes_per_period() const { return bytes_per_period_; }
  bool drops_in_outages() const { return drops_in_outages_; }

 private:
  static Schedule read(LineReader& in);
  void add(State s);
  void finish();

  std::string name_;
  std::vector<State> states_;
  std::vector<Nanos> begins_;
  Nanos period_ = 0;
  double bytes_per_period_ = 0;
  bool drops_in_outages_ = false;
};

// A schedule laid on the clock: it starts at START and loops, or, ONCE, ends after one period.
class Timeline {
 public:
  static constexpr size_t kNone = static_cast<size_t>(-1);
  struct Segment {
    size_t state;  // kNone after the end of a schedule played once
    Nanos begin, end;
  };

  Timeline(std::shared_ptr<const Schedule> schedule, Nanos start, bool once);
  // The state in force at T (T >= start), and when that stretch of it began and ends.
  Segment at(Nanos t) const;
  const State& state(size_t i) const { return schedule_->states()[i]; }
  const Schedule& schedule() const { return *schedule_; }
  Nanos start() const { return start_; }
  Nanos end() const { return end_; }  // kNever if looping
  bool once() const { return end_ != kNever; }

 private:
  std::shared_ptr<const Schedule> schedule_;
  Nanos start_, end_;
};

}  // namespace tracemod::modulate
