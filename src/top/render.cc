#include "top/render.hh"

#include <algorithm>
#include <cstdio>

#include "util/json.hh"

namespace tracemod::top {
namespace {

constexpr const char* kDirNames[2] = {"up", "down"};
constexpr const char* kJsonDirs[2] = {"uplink", "downlink"};

std::string fit(std::string s, size_t width) {
  if (width > 0 && s.size() > width) s.resize(width);
  return s;
}

std::string indent(const live::ShellState& s) {
  return std::string(2 * static_cast<size_t>(s.level), ' ');
}

std::string direction_json(const live::ShellState& s, int d, int history_seconds) {
  const live::DirectionRates& r = s.recent.dir[d];
  const live::Direction& t = s.latest().dir[d];
  std::string j = "{\"delivered_bps\": " + json_number(r.delivered_bps) +
                  ", \"arrived_bps\": " + json_number(r.arrived_bps) +
                  ", \"offered_bps\": " + json_number(r.offered_bps, true) + ", \"drops_per_s\": {";
  for (int c = 0; c < kDropCauses; ++c)
    j += std::string(c ? ", " : "") + "\"" + live::drop_cause_name(c) + "\": " + json_number(r.drops_per_s[c]);
  j += "}, \"drops_total_per_s\": " + json_number(r.drops_total_per_s) + ", \"ce_per_s\": " + json_number(r.ce_per_s) +
       ", \"queued_packets\": " + std::to_string(r.queued_packets) +
       ", \"queued_bytes\": " + std::to_string(r.queued_bytes) + ", \"delay_ms\": " + json_number(r.delay_ms, true) +
       ", \"delay_max_ms\": " + json_number(r.delay_max_ms, true) + ", \"state\": " + json_string(r.state) +
       ", \"totals\": {\"in_packets\": " + std::to_string(t.in_packets) +
       ", \"in_bytes\": " + std::to_string(t.in_bytes) + ", \"out_packets\": " + std::to_string(t.out_packets) +
       ", \"out_bytes\": " + std::to_string(t.out_bytes) + ", \"dropped_packets\": {";
  for (int c = 0; c < kDropCauses; ++c)
    j += std::string(c ? ", " : "") + "\"" + live::drop_cause_name(c) + "\": " + std::to_string(t.dropped[c]);
  j += "}, \"ce_marked\": " + std::to_string(t.ce_marked) + "}";
  if (history_seconds > 0) {
    const std::vector<live::Rates> seconds = s.per_second(history_seconds);
    const auto series = [&](const char* name, double live::DirectionRates::*field) {
      j += std::string(", \"") + name + "\": [";
      for (size_t i = 0; i < seconds.size(); ++i) j += (i ? ", " : "") + json_number(seconds[i].dir[d].*field, true);
      j += "]";
    };
    series("history_delivered_bps", &live::DirectionRates::delivered_bps);
    series("history_offered_bps", &live::DirectionRates::offered_bps);
    series("history_delay_ms", &live::DirectionRates::delay_ms);
  }
  return j + "}";
}

std::string shell_json(const live::ShellState& s, int history_seconds) {
  const live::Header& h = s.header;
  std::string j = "{\"pid\": " + std::to_string(s.pid) + ", \"parent\": " + std::to_string(s.parent) +
                  ", \"level\": " + std::to_string(s.level) + ", \"depth\": " + std::to_string(h.depth) +
                  ", \"tool\": " + json_string(h.tool) + ", \"tag\": " + json_string(h.tag) +
                  ", \"arguments\": " + json_string(h.arguments) + ", \"command\": " + json_string(h.command) +
                  ", \"ended\": " + (s.ended ? "true" : "false") +
                  ", \"interval_s\": " + json_number(s.recent.seconds) +
                  ", \"ferry_lost\": " + std::to_string(s.latest().ferry_lost);
  for (int d = 0; d < 2; ++d) j += ", \"" + std::string(kJsonDirs[d]) + "\": " + direction_json(s, d, history_seconds);
  return j + "}";
}

}  // namespace

std::string shell_line(const live::ShellState& s, size_t width) {
  const live::Header& h = s.header;
  char pid[16];
  std::snprintf(pid, sizeof pid, "%6d ", static_cast<int>(s.pid));
  std::string line = indent(s) + pid + h.tool + (h.arguments[0] ? " " : "") + h.arguments;
  if (h.command[0]) line += std::string(" -- ") + h.command;
  if (s.ended) line += " (ended)";
  std::replace_if(
      line.begin(), line.end(), [](unsigned char c) { return c < 0x20 || c == 0x7f; }, ' ');
  return fit(line, width);
}

std::string direction_line(const live::ShellState& s, int d, size_t width) {
  const live::DirectionRates& r = s.recent.dir[d];
  char capacity[32] = "         ", delay[32] = "         -", b[160];
  if (r.offered_bps >= 0) std::snprintf(capacity, sizeof capacity, " / %6.1f", r.offered_bps / 1e6);
  if (r.delay_ms >= 0) std::snprintf(delay, sizeof delay, " %7.1fms", r.delay_ms);
  std::snprintf(b, sizeof b, "       %-5s%6.1f%s Mbit/s  q %5llup %6s%s  drop %5.0f/s", kDirNames[d],
                r.delivered_bps / 1e6, capacity, static_cast<unsigned long long>(r.queued_packets),
                live::bytes_text(r.queued_bytes).c_str(), delay, r.drops_total_per_s);
  std::string line = indent(s) + b;
  if (!r.state.empty()) line += " " + r.state;
  return fit(line, width);
}

std::string text_view(const std::vector<const live::ShellState*>& shells, size_t width) {
  if (shells.empty()) return "no tracemod shell is running\n";
  std::string out;
  for (const live::ShellState* s : shells) {
    out += shell_line(*s, width) + "\n";
    for (int d = 0; d < 2; ++d) out += direction_line(*s, d, width) + "\n";
  }
  return out;
}

std::string json_view(const std::vector<const live::ShellState*>& shells, int history_seconds) {
  std::string j = "{\"shells\": [";
  for (size_t i = 0; i < shells.size(); ++i) j += (i ? ", " : "") + shell_json(*shells[i], history_seconds);
  return j + "]}\n";
}

std::string sparkline(const std::vector<double>& values, double max, bool unicode) {
  static const char* const kBlocks[8] = {"\u2581", "\u2582", "\u2583", "\u2584",
                                         "\u2585", "\u2586", "\u2587", "\u2588"};
  static const char kAscii[] = "_.-=+*#@";
  std::string out;
  for (double v : values) {
    if (v < 0) {
      out += ' ';
      continue;
    }
    const int level = max > 0 ? std::clamp(static_cast<int>(v / max * 7.999), 0, 7) : 0;
    out += unicode ? std::string(kBlocks[level]) : std::string(1, kAscii[level]);
  }
  return out;
}

}  // namespace tracemod::top
