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

// Appends "key": VALUE to J, opening and closing the objects of dotted keys ("drops_per_s.queue") as the rows
// pass from one group to the next; GROUP is the one open.
void add_field(std::string& j, std::string& group, const std::string& key, const std::string& value) {
  const auto separator = [&j] { return j.back() == '{' ? "" : ", "; };
  const size_t dot = key.find('.');
  const std::string g = dot == std::string::npos ? "" : key.substr(0, dot);
  if (g != group) {
    if (!group.empty()) j += "}";
    if (!g.empty()) j += separator() + json_string(g) + ": {";
    group = g;
  }
  j += separator() + json_string(dot == std::string::npos ? key : key.substr(dot + 1)) + ": " + value;
}

void close_group(std::string& j, std::string& group) {
  if (!group.empty()) j += "}";
  group.clear();
}

std::string figure_json(const live::Metric& m, double v) {
  if (v < 0) return "null";
  return m.integer ? std::to_string(live::whole_number(v)) : json_number(v);
}

std::string history_json(const live::ShellState& s, int d, int history_seconds) {
  const std::vector<live::Rates> seconds = s.per_second(history_seconds);
  std::string j;
  const std::vector<live::Metric>& rows = live::metrics();
  for (size_t i = 0; i < rows.size(); ++i) {
    if (!rows[i].history) continue;
    j += ", " + json_string("history_" + rows[i].key) + ": [";
    for (size_t k = 0; k < seconds.size(); ++k) j += (k ? ", " : "") + json_number(seconds[k].dir[d][int(i)], true);
    j += "]";
  }
  return j;
}

// Direction D: a field per row with a key, the text line's columns, its counts since the start per row with
// a total, and with HISTORY_SECONDS > 0 the charted rows' last seconds.
std::string direction_json(const live::ShellState& s, int d, int history_seconds) {
  const live::DirectionRates& r = s.recent.dir[d];
  const live::Direction& t = s.latest().dir[d];
  const std::vector<live::Metric>& rows = live::metrics();
  std::string j = "{", group;
  for (size_t i = 0; i < rows.size(); ++i)
    if (!rows[i].key.empty()) add_field(j, group, rows[i].key, figure_json(rows[i], r[int(i)]));
  close_group(j, group);
  j += ", \"state\": " + json_string(r.state) + ", \"text\": " + json_string(live::columns_text(r)) +
       ", \"totals\": {";
  for (size_t i = 0; i < rows.size(); ++i)
    if (!rows[i].total.empty()) add_field(j, group, rows[i].total, std::to_string(t.value[i]));
  close_group(j, group);
  j += "}";
  if (history_seconds > 0) j += history_json(s, d, history_seconds);
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
  char name[16];
  std::snprintf(name, sizeof name, "       %-5s", kDirNames[d]);
  return fit(indent(s) + name + live::columns_text(s.recent.dir[d]), width);
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
