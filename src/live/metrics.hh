// Every figure a running shell shows of each direction, described once: where the publisher reads it, how two
// snapshots turn it into a figure, its JSON key, its column in tm-top's text line (which --meter and the web
// page show too) and whether the web page charts its last minute. The page (live/page.hh) holds one counter
// per row, the rates (live/rates.hh) one figure per row, and every view loops over the rows: a new metric is
// one row of metrics.cc's table. docs/ARCHITECTURE.md, "Live counters".
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "packet/ferry.hh"
#include "packet/packet_queue.hh"

namespace tracemod::live {

// Slots in a snapshot's direction: the table's rows, and room for more without changing the page's size.
constexpr int kMaxMetrics = 32;

// What the publisher reads one direction of one link from (tm-multipath's paths are summed).
struct MetricSource {
  const QueueStats& stats;
  const QueueLive& live;
  const FlowCounters& flow;
  Nanos sojourn_max;  // the longest stay since the previous snapshot
};

enum class MetricKind : uint8_t {
  kRate,   // a count since the start: shown per second between two snapshots
  kLevel,  // a level now (summed over links): shown as the later snapshot holds it
  kMean,   // a sum since the start: shown as its growth over the growth of row `per`'s count
  kPeak,   // the largest since the previous snapshot (the largest of the links'); 0: none, shown as absent
};

struct Metric {
  std::string key;    // the figure's JSON key ("" none); "group.name" puts it in object "group" (drops by cause)
  std::string total;  // the JSON key of its count in "totals" ("" none); nests the same way
  MetricKind kind = MetricKind::kRate;
  double scale = 1;           // the figure is scale x (the count per second | the level | the mean | the peak)
  int per = -1;               // kMean: the row whose count it is averaged over
  bool needs_capacity = false;  // absent where the direction has no capacity (a trace, a rate)
  bool integer = false;       // JSON prints the figure as a whole number
  bool history = false;       // the web page charts its last minute: JSON "history_<key>"
  uint64_t (*read)(const MetricSource&) = nullptr;
  // Its column in the text line: BEFORE, then the figure shown by TEXT, or ABSENT where it has none. No
  // text: not a column.
  const char* before = "";
  std::string (*text)(double) = nullptr;
  const char* absent = "";
};

// The built-in rows, in the table's order (which is the text line's order).
enum Figure : int {
  kArrived, kDelivered, kOffered, kQueuedPackets, kQueuedBytes, kDeparted, kDelay, kDelayMax,
  kDropsQueue, kDropsLoss, kDropsOutage, kDropsAqm, kDropsTotal, kCeMarked, kInPackets, kOutPackets,
  kBuiltInFigures
};

// The table. A reader refuses a page published from another table (metrics_fingerprint).
const std::vector<Metric>& metrics();
uint32_t metrics_fingerprint();

// Adds ROW to the table for as long as the object lives: how a test proves a new row reaches every view.
class ExtraMetric {
 public:
  explicit ExtraMetric(Metric row);
  ~ExtraMetric();
  ExtraMetric(const ExtraMetric&) = delete;
  ExtraMetric& operator=(const ExtraMetric&) = delete;
  int index() const { return index_; }

 private:
  int index_;
};

}  // namespace tracemod::live
