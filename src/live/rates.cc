#include "live/rates.hh"

#include <cstring>

namespace tracemod::live {
namespace {

// In doubles: a page's counters are whatever it holds, and their difference may not fit in 64 bits.
double growth(uint64_t later, uint64_t earlier) {
  return later > earlier ? static_cast<double>(later - earlier) : 0;
}

double figure(const Metric& m, const Direction& a, const Direction& b, int i, double seconds) {
  if (m.needs_capacity && !b.limited) return kNoFigure;
  switch (m.kind) {
    case MetricKind::kRate:
      return seconds > 0 ? m.scale * growth(b.value[i], a.value[i]) / seconds : 0;
    case MetricKind::kLevel:
      return m.scale * static_cast<double>(b.value[i]);
    case MetricKind::kMean: {
      const double n = m.per >= 0 && m.per < kMaxMetrics ? growth(b.value[m.per], a.value[m.per]) : 0;
      return n > 0 ? m.scale * growth(b.value[i], a.value[i]) / n : kNoFigure;
    }
    case MetricKind::kPeak:
      return b.value[i] > 0 ? m.scale * static_cast<double>(b.value[i]) : kNoFigure;
  }
  return kNoFigure;
}

DirectionRates direction_rates(const Direction& a, const Direction& b, double seconds) {
  DirectionRates r;
  const std::vector<Metric>& rows = metrics();
  for (size_t i = 0; i < rows.size(); ++i) r.value[i] = figure(rows[i], a, b, static_cast<int>(i), seconds);
  r.state.assign(b.state, strnlen(b.state, sizeof b.state));
  return r;
}

}  // namespace

Rates rates_between(const Snapshot& a, const Snapshot& b) {
  Rates r;
  r.seconds =
      b.published > a.published ? (static_cast<double>(b.published) - static_cast<double>(a.published)) / 1e9 : 0;
  for (int d = 0; d < 2; ++d) r.dir[d] = direction_rates(a.dir[d], b.dir[d], r.seconds);
  return r;
}

uint64_t whole_number(double v) {
  if (!(v > 0)) return 0;
  return v >= 18446744073709551616.0 ? UINT64_MAX : static_cast<uint64_t>(v);
}

std::string bytes_text(uint64_t b) {
  if (b < 10000) return std::to_string(b) + "B";
  if (b < 10000000) return std::to_string((b + 500) / 1000) + "kB";
  return std::to_string(b / 1000000 + (b % 1000000 >= 500000 ? 1 : 0)) + "MB";  // rounded, without wrapping
}

std::string columns_text(const DirectionRates& r) {
  std::string out;
  const std::vector<Metric>& rows = metrics();
  for (size_t i = 0; i < rows.size(); ++i) {
    const Metric& m = rows[i];
    if (!m.text) continue;
    out += r.value[i] < 0 ? std::string(m.absent) : m.before + m.text(r.value[i]);
  }
  if (!r.state.empty()) out += " " + r.state;
  return out;
}

}  // namespace tracemod::live
