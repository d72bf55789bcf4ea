// What two snapshots of a shell's live counters say about the time between them: rates, the queue, delays.
// tm-top, its web page and --meter all show these.
#pragma once

#include <string>

#include "live/page.hh"

namespace tracemod::live {

struct DirectionRates {
  double arrived_bps = 0, delivered_bps = 0;
  double offered_bps = -1;               // the capacity the link offered; -1: the direction has none
  double drops_per_s[kDropCauses] = {};  // by DropCause
  double drops_total_per_s = 0;
  double ce_per_s = 0;
  uint64_t queued_packets = 0, queued_bytes = 0;  // at the later snapshot (bytes: wire IP bytes)
  double delay_ms = -1;                           // mean stay of the frames sent in between; -1: none sent
  double delay_max_ms = -1;                       // the longest stay in the later snapshot's period; -1: none
  std::string state;
};

struct Rates {
  double seconds = 0;  // between the snapshots; 0 if they are the same one
  DirectionRates dir[2];
};

// A is the earlier snapshot. A snapshot with itself gives the queue and state with zero rates.
Rates rates_between(const Snapshot& a, const Snapshot& b);

// The wire IP bytes D holds now: what came in and neither left nor was dropped.
uint64_t queued_bytes(const Direction& d);

// B bytes for a person: "950B", "21kB", "3MB".
std::string bytes_text(uint64_t b);

// The names of the drop causes, as tm-top and --meter print them: "queue", "loss", "outage", "aqm".
const char* drop_cause_name(int cause);

}  // namespace tracemod::live
