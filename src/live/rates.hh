// What two snapshots of a shell's live counters say about the time between them: one figure per row of the
// metrics table (live/metrics.hh): rates, the queue, delays. tm-top, its web page and --meter all show these.
#pragma once

#include <algorithm>
#include <iterator>
#include <string>

#include "live/page.hh"

namespace tracemod::live {

constexpr double kNoFigure = -1;  // a figure a direction does not have (no capacity, nothing sent)

struct DirectionRates {
  double value[kMaxMetrics];  // by row of metrics(); kNoFigure where there is none
  std::string state;
  DirectionRates() { std::fill(std::begin(value), std::end(value), 0.0); }
  double operator[](int row) const { return value[row]; }
};

struct Rates {
  double seconds = 0;  // between the snapshots; 0 if they are the same one
  DirectionRates dir[2];
};

// A is the earlier snapshot. A snapshot with itself gives the levels and state with zero rates.
Rates rates_between(const Snapshot& a, const Snapshot& b);

// V (>= 0) as a whole number, saturating: a page's counters are whatever it holds, and a double past 2^64 does
// not convert.
uint64_t whole_number(double v);

// B bytes for a person: "950B", "21kB", "3MB".
std::string bytes_text(uint64_t b);

// Direction R as the text line's columns (tm-top, --meter, the web page): each row with a column, in order.
std::string columns_text(const DirectionRates& r);

}  // namespace tracemod::live
