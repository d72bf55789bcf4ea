#include "analysis/plot_script.hh"

#include <algorithm>

#include "analysis/text.hh"

namespace tracemod {
namespace {

double seconds(Nanos t) {
  return static_cast<double>(t) / 1e9;
}
double millis(Nanos t) {
  return static_cast<double>(t) / 1e6;
}
double mbits_per_second(uint64_t bytes, Nanos width) {
  return static_cast<double>(bytes) * 8e3 / static_cast<double>(width);
}

void append_row(std::string& out, double t, const LogBin& b, Nanos width) {
  append_format(out, "%.6f %.4f %.4f ", t, mbits_per_second(b.capacity_bytes, width),
                mbits_per_second(b.departure_bytes, width));
  if (b.departures == 0) {
    out += "NaN NaN\n";  // no packet left in this bin: no delay to show
    return;
  }
  append_format(out, "%.3f %.3f\n", millis(b.max_delay), millis(b.delay_sum) / static_cast<double>(b.departures));
}

// One row per bin at its start (time s, capacity, delivered Mbit/s, max and mean delay ms), and a last row
// that ends the last step. The ends are clipped to the first and last event, the x range: gnuplot refuses a
// plot whose points all lie outside it.
std::string data_block(const LinkLogStats& s, const std::string& name = "$bins") {
  std::string out = name + " << EOD\n";
  const auto& bins = s.bins();
  for (size_t i = 0; i < bins.size(); ++i) {
    const Nanos start = (s.first_bin() + static_cast<int64_t>(i)) * s.bin_width();
    append_row(out, seconds(i == 0 ? s.first() : start), bins[i], s.bin_width());
  }
  append_row(out, seconds(s.last()), bins.back(), s.bin_width());
  return out + "EOD\n";
}

std::string terminal(PlotFormat format) {
  if (format == PlotFormat::kSvg) return "set terminal svg size 1024,720 fixed font 'sans,12' background '#ffffff'\n";
  return "set terminal pngcairo size 1024,720 font 'sans,10' background '#ffffff'\n";
}

std::string throughput_panel(const LinkLogStats& s) {
  std::string out =
      "set ylabel 'throughput (Mbit/s)'\n"
      "set yrange [0:*]\n"
      "set format x ''\n"
      "set style fill solid 0.35 noborder\n";
  append_format(out,
                "plot $bins using 1:2 with fillsteps lc rgb '#6a9fd4' title sprintf('capacity (mean %%.2f Mbit/s)', "
                "%.4f), \\\n     $bins using 1:3 with steps lw 2 lc rgb '#c0392b' "
                "title sprintf('delivered (mean %%.2f Mbit/s)', %.4f)\n",
                s.capacity_mbps(), s.throughput_mbps());
  return out;
}

std::string delay_panel(const LinkLogStats& s) {
  std::string out =
      "set ylabel 'queueing delay (ms)'\n"
      "set xlabel 'time (s)'\n"
      "set format x '%g'\n";
  if (s.delays().count() == 0)
    return out + "set yrange [0:1]\nplot $bins using 1:(0) with lines lc rgb '#999999' title 'no packet departed'\n";
  out += "set yrange [0:*]\n";
  append_format(out,
                "plot $bins using 1:4 with steps lw 1.5 lc rgb '#2c7a3f' title 'maximum per bin', \\\n"
                "     $bins using 1:5 with steps lw 1 lc rgb '#8e44ad' title 'mean per bin', \\\n"
                "     %.3f with lines dt 2 lc rgb '#555555' title '95th percentile, %.3f ms'\n",
                s.delay_ms(0.95), s.delay_ms(0.95));
  return out;
}

// Colours of several logs: capacity shaded and delivered drawn in one hue per log.
constexpr const char* kHues[] = {"#c0392b", "#2471a3", "#1e8449", "#b9770e",
                                 "#7d3c98", "#117a65", "#5d6d7e", "#a04000"};

std::string hue(size_t i) {
  return kHues[i % (sizeof kHues / sizeof kHues[0])];
}

std::string several_throughput(const std::vector<const LinkLogStats*>& logs, const std::vector<std::string>& names) {
  std::string out =
      "set ylabel 'throughput (Mbit/s)'\nset yrange [0:*]\nset format x ''\nset style fill transparent solid 0.2 "
      "noborder\nplot ";
  for (size_t i = 0; i < logs.size(); ++i)
    append_format(out,
                  "%s$bins%zu using 1:2 with fillsteps lc rgb '%s' title %s, \\\n     $bins%zu using 1:3 with steps "
                  "lw 2 lc rgb '%s' title %s",
                  i ? ", \\\n     " : "", i, hue(i).c_str(), gnuplot_quote(names[i] + " capacity").c_str(), i,
                  hue(i).c_str(), gnuplot_quote(names[i] + " delivered").c_str());
  return out + "\n";
}

std::string several_delays(const std::vector<const LinkLogStats*>& logs, const std::vector<std::string>& names) {
  std::string out =
      "set ylabel 'queueing delay (ms)'\nset xlabel 'time (s)'\nset format x '%g'\nset yrange [0:*]\nplot ";
  for (size_t i = 0; i < logs.size(); ++i)
    append_format(out, "%s$bins%zu using 1:5 with steps lw 1.5 lc rgb '%s' title %s", i ? ", \\\n     " : "", i,
                  hue(i).c_str(), gnuplot_quote(names[i] + " mean per bin").c_str());
  return out + "\n";
}

}  // namespace

std::string gnuplot_quote(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '\\' || c == '"') out += '\\';
    out += static_cast<unsigned char>(c) < 0x20 || c == 0x7f ? ' ' : c;
  }
  return out + "\"";
}

std::string plot_script(const LinkLogStats& s, PlotFormat format, const std::string& title) {
  std::string out = terminal(format) + "set encoding utf8\n" + data_block(s);
  append_format(out, "set xrange [%.6f:%.6f]\n", seconds(s.first()), seconds(s.last()));
  out +=
      "set grid\n"
      "set offsets 0, 0, graph 0.08, 0\n"  // headroom: a saturated link's line would sit on the border
      "set key outside top right horizontal noenhanced\n"
      "set lmargin 10\n"
      "set multiplot layout 2,1 title " +
      gnuplot_quote(title) +
      " font ',13' noenhanced\n"
      "set tmargin 3\n" +
      throughput_panel(s) + delay_panel(s) + "unset multiplot\n";
  return out;
}

}  // namespace tracemod

namespace tracemod {

std::string plot_script(const std::vector<const LinkLogStats*>& logs, const std::vector<std::string>& names,
                        PlotFormat format, const std::string& title) {
  if (logs.size() == 1) return plot_script(*logs[0], format, title);
  std::string out = terminal(format) + "set encoding utf8\n";
  Nanos first = logs[0]->first(), last = logs[0]->last();
  for (size_t i = 0; i < logs.size(); ++i) {
    out += data_block(*logs[i], "$bins" + std::to_string(i));
    first = std::min(first, logs[i]->first());
    last = std::max(last, logs[i]->last());
  }
  append_format(out, "set xrange [%.6f:%.6f]\n", seconds(first), seconds(last));
  out +=
      "set grid\nset offsets 0, 0, graph 0.08, 0\nset key outside top right horizontal noenhanced\n"
      "set lmargin 10\nset multiplot layout 2,1 title " +
      gnuplot_quote(title) + " font ',13' noenhanced\nset tmargin 3\n" + several_throughput(logs, names) +
      several_delays(logs, names) + "unset multiplot\n";
  return out;
}

}  // namespace tracemod
