#include "live/metrics.hh"

#include <cstdio>

#include "live/rates.hh"
#include "util/error.hh"

namespace tracemod::live {
namespace {

std::string mbit(double bps) {
  char b[32];
  std::snprintf(b, sizeof b, "%6.1f", bps / 1e6);
  return b;
}

std::string per_second(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%5.0f/s", v);
  return b;
}

// TEXT right-aligned in WIDTH columns.
std::string padded(std::string text, size_t width) {
  return text.size() < width ? std::string(width - text.size(), ' ') + text : text;
}

uint64_t sojourn(Nanos v) { return v > 0 ? static_cast<uint64_t>(v) : 0; }

// Wire IP bytes in the queue: what came in and neither left nor was dropped.
uint64_t queued_bytes(const MetricSource& s) {
  const uint64_t gone = s.flow.out_bytes + s.stats.dropped_bytes;
  return s.flow.in_bytes > gone ? s.flow.in_bytes - gone : 0;
}

template <DropCause C>
Metric drops(const char* name) {
  Metric m;
  m.key = std::string("drops_per_s.") + name;
  m.total = std::string("dropped_packets.") + name;
  m.read = [](const MetricSource& s) { return s.stats.dropped_by[static_cast<int>(C)]; };
  return m;
}

std::vector<Metric> built_in() {
  std::vector<Metric> t(kBuiltInFigures);
  t[kArrived] = {"arrived_bps", "in_bytes", MetricKind::kRate, 8};
  t[kArrived].read = [](const MetricSource& s) { return s.flow.in_bytes; };
  t[kDelivered] = {"delivered_bps", "out_bytes", MetricKind::kRate, 8};
  t[kDelivered].read = [](const MetricSource& s) { return s.flow.out_bytes; };
  t[kDelivered].history = true;
  t[kDelivered].text = mbit;
  t[kOffered] = {"offered_bps", "", MetricKind::kRate, 8};
  t[kOffered].read = [](const MetricSource& s) { return s.live.offered_bytes; };
  t[kOffered].needs_capacity = t[kOffered].history = true;
  t[kOffered].before = " / ";
  t[kOffered].text = mbit;
  t[kOffered].absent = "         ";
  t[kQueuedPackets] = {"queued_packets", "", MetricKind::kLevel, 1};
  t[kQueuedPackets].read = [](const MetricSource& s) { return s.stats.queued_packets; };
  t[kQueuedPackets].integer = true;
  t[kQueuedPackets].before = " Mbit/s  q ";
  t[kQueuedPackets].text = [](double v) { return padded(std::to_string(whole_number(v)) + "p", 6); };
  t[kQueuedBytes] = {"queued_bytes", "", MetricKind::kLevel, 1};
  t[kQueuedBytes].read = queued_bytes;
  t[kQueuedBytes].integer = true;
  t[kQueuedBytes].before = " ";
  t[kQueuedBytes].text = [](double v) { return padded(bytes_text(whole_number(v)), 6); };
  t[kDeparted] = {"", "", MetricKind::kRate, 1};  // frames sent: what the mean stay is over
  t[kDeparted].read = [](const MetricSource& s) { return s.flow.departures; };
  t[kDelay] = {"delay_ms", "", MetricKind::kMean, 1e-6, kDeparted};
  t[kDelay].read = [](const MetricSource& s) { return sojourn(s.flow.sojourn_sum); };
  t[kDelay].history = true;
  t[kDelay].before = " ";
  t[kDelay].text = [](double v) {
    char b[32];
    std::snprintf(b, sizeof b, "%7.1fms", v);
    return std::string(b);
  };
  t[kDelay].absent = "         -";
  t[kDelayMax] = {"delay_max_ms", "", MetricKind::kPeak, 1e-6};
  t[kDelayMax].read = [](const MetricSource& s) { return sojourn(s.sojourn_max); };
  t[kDropsQueue] = drops<DropCause::kQueue>("queue");
  t[kDropsLoss] = drops<DropCause::kLoss>("loss");
  t[kDropsOutage] = drops<DropCause::kOutage>("outage");
  t[kDropsAqm] = drops<DropCause::kAqm>("aqm");
  t[kDropsTotal] = {"drops_total_per_s", "", MetricKind::kRate, 1};
  t[kDropsTotal].read = [](const MetricSource& s) { return s.stats.dropped_packets; };
  t[kDropsTotal].before = "  drop ";
  t[kDropsTotal].text = per_second;
  t[kCeMarked] = {"ce_per_s", "ce_marked", MetricKind::kRate, 1};
  t[kCeMarked].read = [](const MetricSource& s) { return s.live.ce_marked; };
  t[kInPackets] = {"", "in_packets", MetricKind::kRate, 1};
  t[kInPackets].read = [](const MetricSource& s) { return s.stats.in_packets; };
  t[kOutPackets] = {"", "out_packets", MetricKind::kRate, 1};
  t[kOutPackets].read = [](const MetricSource& s) { return s.stats.out_packets; };
  return t;
}

std::vector<Metric>& table() {
  static std::vector<Metric> t = built_in();
  return t;
}

}  // namespace

const std::vector<Metric>& metrics() { return table(); }

// FNV-1a over each row's keys and kind: a page from a build with another table is refused, not misread.
uint32_t metrics_fingerprint() {
  uint32_t h = 2166136261u;
  const auto mix = [&h](const std::string& s) {
    for (unsigned char c : s + '\n') h = (h ^ c) * 16777619u;
  };
  for (const Metric& m : table()) mix(m.key + '|' + m.total + '|' + std::to_string(static_cast<int>(m.kind)));
  return h;
}

ExtraMetric::ExtraMetric(Metric row) : index_(static_cast<int>(table().size())) {
  if (index_ >= kMaxMetrics) throw Error("the live counters have no room for another metric");
  if (!row.read) throw Error("a metric needs a source");
  table().push_back(std::move(row));
}

ExtraMetric::~ExtraMetric() { table().resize(static_cast<size_t>(index_)); }

}  // namespace tracemod::live
