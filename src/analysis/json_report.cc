#include "analysis/json_report.hh"

#include <cinttypes>

#include "analysis/text.hh"

namespace tracemod {

namespace {

double ms(Nanos t) {
  return static_cast<double>(t) / 1e6;
}

// Bytes in a bin of WIDTH as Mbit/s.
double rate(uint64_t bytes, Nanos width) {
  return static_cast<double>(bytes) * 8e3 / static_cast<double>(width);
}

// One column of the per-bin series: "KEY": [VALUE(bin)...].
template <typename Value>
void append_column(std::string& out, const char* key, const LinkLogStats& s, Value value, bool last = false) {
  append_format(out, "    \"%s\": [", key);
  const auto& bins = s.bins();
  for (size_t i = 0; i < bins.size(); ++i) {
    if (i) out += ", ";
    value(out, bins[i], i);
  }
  out += last ? "]\n" : "],\n";
}

void append_summary(std::string& out, const LinkLogStats& s) {
  const LogBin& t = s.totals();
  append_format(out, "  \"events\": %" PRIu64 ",\n  \"start_ms\": %.3f,\n  \"end_ms\": %.3f,\n", s.events(),
                ms(s.first()), ms(s.last()));
  append_format(out, "  \"capacity_mbps\": %.6f,\n  \"throughput_mbps\": %.6f,\n", s.capacity_mbps(),
                s.throughput_mbps());
  if (t.capacity_bytes > 0)
    append_format(out, "  \"utilization\": %.6f,\n", s.throughput_mbps() / s.capacity_mbps());
  else
    out += "  \"utilization\": null,\n";
  if (s.delays().count() > 0)
    append_format(out, "  \"delay_ms\": {\"p50\": %.3f, \"p95\": %.3f, \"p99\": %.3f},\n", s.delay_ms(0.5),
                  s.delay_ms(0.95), s.delay_ms(0.99));
  else
    out += "  \"delay_ms\": null,\n";
  append_format(out, "  \"departures\": %" PRIu64 ",\n", t.departures);
  append_format(out, "  \"drops\": {\"packets\": %" PRIu64 ", \"bytes\": %" PRIu64 "},\n", t.drop_packets,
                t.drop_bytes);
}

void append_bins(std::string& out, const LinkLogStats& s) {
  const Nanos w = s.bin_width();
  out += "  \"bins\": {\n";
  append_column(out, "start_ms", s, [&](std::string& o, const LogBin&, size_t i) {
    append_format(o, "%.3f", ms((s.first_bin() + static_cast<int64_t>(i)) * w));
  });
  append_column(out, "capacity_mbps", s,
                [&](std::string& o, const LogBin& b, size_t) { append_format(o, "%.6f", rate(b.capacity_bytes, w)); });
  append_column(out, "arrival_mbps", s,
                [&](std::string& o, const LogBin& b, size_t) { append_format(o, "%.6f", rate(b.arrival_bytes, w)); });
  append_column(out, "throughput_mbps", s,
                [&](std::string& o, const LogBin& b, size_t) { append_format(o, "%.6f", rate(b.departure_bytes, w)); });
  append_column(out, "mean_delay_ms", s, [](std::string& o, const LogBin& b, size_t) {
    if (b.departures == 0)
      o += "null";
    else
      append_format(o, "%.3f", ms(b.delay_sum) / static_cast<double>(b.departures));
  });
  append_column(out, "max_delay_ms", s, [](std::string& o, const LogBin& b, size_t) {
    if (b.departures == 0)
      o += "null";
    else
      append_format(o, "%.3f", ms(b.max_delay));
  });
  append_column(
      out, "drop_packets", s,
      [](std::string& o, const LogBin& b, size_t) { append_format(o, "%" PRIu64, b.drop_packets); }, true);
  out += "  }\n";
}

}  // namespace

std::string format_json(const LinkLogStats& s, const std::string& name) {
  std::string out = "{\n  \"log\": " + json_string(name) + ",\n";
  append_format(out, "  \"bin_ms\": %.3f,\n", ms(s.bin_width()));
  append_summary(out, s);
  append_bins(out, s);
  return out + "}\n";
}

}  // namespace tracemod
