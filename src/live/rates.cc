#include "live/rates.hh"

#include <cstring>

namespace tracemod::live {
namespace {

double per_second(uint64_t later, uint64_t earlier, double seconds) {
  return seconds > 0 && later > earlier ? static_cast<double>(later - earlier) / seconds : 0;
}

DirectionRates direction_rates(const Direction& a, const Direction& b, double s) {
  DirectionRates r;
  r.arrived_bps = 8 * per_second(b.in_bytes, a.in_bytes, s);
  r.delivered_bps = 8 * per_second(b.out_bytes, a.out_bytes, s);
  if (b.limited) r.offered_bps = 8 * per_second(b.offered_bytes, a.offered_bytes, s);
  for (int c = 0; c < kDropCauses; ++c) {
    r.drops_per_s[c] = per_second(b.dropped[c], a.dropped[c], s);
    r.drops_total_per_s += r.drops_per_s[c];
  }
  r.ce_per_s = per_second(b.ce_marked, a.ce_marked, s);
  r.queued_packets = b.queued_packets;
  r.queued_bytes = queued_bytes(b);
  if (b.departures > a.departures)
    r.delay_ms = (static_cast<double>(b.sojourn_sum) - static_cast<double>(a.sojourn_sum)) /  // no signed overflow
                 static_cast<double>(b.departures - a.departures) / 1e6;
  if (b.sojourn_max > 0) r.delay_max_ms = static_cast<double>(b.sojourn_max) / 1e6;
  r.state.assign(b.state, strnlen(b.state, sizeof b.state));
  return r;
}

}  // namespace

uint64_t queued_bytes(const Direction& d) {
  const uint64_t gone = d.out_bytes + d.dropped_bytes;
  return d.in_bytes > gone ? d.in_bytes - gone : 0;
}

Rates rates_between(const Snapshot& a, const Snapshot& b) {
  Rates r;
  // In doubles: a page's time stamps are whatever it holds, and their difference may not fit in 64 bits.
  r.seconds =
      b.published > a.published ? (static_cast<double>(b.published) - static_cast<double>(a.published)) / 1e9 : 0;
  for (int d = 0; d < 2; ++d) r.dir[d] = direction_rates(a.dir[d], b.dir[d], r.seconds);
  return r;
}

std::string bytes_text(uint64_t b) {
  if (b < 10000) return std::to_string(b) + "B";
  if (b < 10000000) return std::to_string((b + 500) / 1000) + "kB";
  return std::to_string((b + 500000) / 1000000) + "MB";
}

const char* drop_cause_name(int cause) {
  static const char* const kNames[kDropCauses] = {"queue", "loss", "outage", "aqm"};
  return cause >= 0 && cause < kDropCauses ? kNames[cause] : "?";
}

}  // namespace tracemod::live
