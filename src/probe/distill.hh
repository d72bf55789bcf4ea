// `tm-probe distill`: Noble et al.'s distillation of a probe record into a replay schedule of 5-tuples
// d F Vb Vr L that tm-modulate plays.
//
// Per triplet (small echo of S1 bytes, then two of S2 sent back to back on its reply), with round trips
// t1, t2, t3 and reply arrivals r2, r3 of the pair:
//   t1 = 2(F + S1 V), t2 = 2(F + S2 V)    ->  V = (t2 - t1) / 2(S2 - S1),  F = t1/2 - S1 V
//   the third queues behind the second at the bottleneck: it arrives S2 Vb after it, so Vb = (r3 - r2) / S2
//   (Noble's (t3 - t2) / S2, with the gap between the two sends added back), and Vr = V - Vb.
// A triplet whose solution has a negative F, Vb or Vr saw different conditions between its echoes: the last
// valid triplet's Vb and Vr are used instead, and the difference between the round trips expected with them
// and those observed goes to F. Corrected values never serve as the base of a later correction.
// A sliding window (5 s) averages the estimates around each step, by their median unless the paper's mean is
// asked for: a probing host that wakes late inflates one round trip by milliseconds, and a single such triplet
// drags a mean (Vr, a difference of differences, most). The loss L = 1 - sqrt(b/a) counts the echoes sent in
// the window (a) and their replies (b): an echo and its reply each cross a link that loses L.
#pragma once

#include <string>
#include <vector>

#include "util/clock.hh"

namespace tracemod::probe {

struct EchoRecord {
  uint64_t seq = 0, triplet = 0;
  uint32_t index = 0, size = 0;
  Nanos send = 0, recv = 0;
  bool replied = false;
  bool kernel_send = false;  // SEND is the kernel's transmit time stamp
};

struct DistillConfig {
  Nanos window = 5000 * kMillisecond;
  Nanos step = 1000 * kMillisecond;
  bool mean = false;  // average a window's estimates by their mean (Noble's) instead of their median
};

// One line of the schedule. Costs in ns per byte, times in ns.
struct Tuple {
  Nanos duration = 0, delay = 0;
  double byte_cost = 0, residual_cost = 0, loss = 0;
};

struct Distilled {
  std::vector<Tuple> tuples;
  uint64_t triplets = 0, complete = 0, corrected = 0, unusable = 0, empty_windows = 0;
};

// Throws UsageError if no triplet is complete (nothing to estimate delays from), or if the echoes span more steps
// than a schedule holds (longer than 1000 hours, tm-modulate's limit, or more than kMaxWindows lines).
constexpr uint64_t kMaxWindows = 4000000;
Distilled distill(std::vector<EchoRecord> echoes, const DistillConfig& config);

// Reads the raw record at RAW, distills it and writes the schedule to OUT with a header naming the record, its
// sizes and the window. Returns the summary (windows, corrected triplets, mean and percentiles of F, 1/Vb, L).
std::string distill_file(const std::string& raw, const std::string& out, const DistillConfig& config);

// The record at RAW as text: its header, then one line per echo in send order,
// "SEQ TRIPLET INDEX SIZE SEND_MS RECV_MS|- kernel|user" (times: ms of CLOCK_MONOTONIC).
std::string print_file(const std::string& raw);

// RAW without a trailing ".raw", plus ".sched".
std::string default_schedule_path(const std::string& raw);

}  // namespace tracemod::probe
