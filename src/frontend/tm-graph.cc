// tm-graph: the summary and the pictures of a link log, ours or Mahimahi's.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <iostream>
#include <vector>

#include "analysis/gnuplot.hh"
#include "analysis/json_report.hh"
#include "analysis/link_log_reader.hh"
#include "analysis/plot_script.hh"
#include "cli/command.hh"
#include "util/file_descriptor.hh"
#include "util/parse.hh"

using namespace tracemod;

namespace {

struct Options {
  std::vector<std::string> logs;  // several: one picture of them all (tm-multipath's paths), a summary each
  std::string svg, png, title;
  Nanos bin = 500 * kMillisecond;
  bool json = false;
};

Nanos parse_bin(const std::string& text) {
  return parse_duration_between("--bin", text, kMillisecond, 1000, kMaxDelay);  // 1 us to 1 h, as tm-delay's
}

void add_options(Command& graph, Options& o) {
  graph.options.add_options()                                                                         //
      ("bin", po::value<std::string>()->value_name("MS"), "width of a time bin in ms (default 500)")  //
      ("json", po::bool_switch(&o.json), "print the summary and the per-bin series as JSON instead")  //
      ("svg", po::value(&o.svg)->value_name("FILE"), "draw the graphs as SVG into FILE")              //
      ("png", po::value(&o.png)->value_name("FILE"), "draw the graphs as PNG into FILE")              //
      ("title", po::value(&o.title)->value_name("T"), "title of the graphs (default: the LOGs)");
  graph.hidden.add_options()("log", po::value(&o.logs));
  graph.positional.add("log", -1);
}

void check_options(const po::variables_map& vm, Options& o) {
  if (vm.count("bin")) o.bin = parse_bin(vm["bin"].as<std::string>());
  if (o.logs.empty()) throw UsageError("missing LOG: the link log to read");
  if (o.json && o.logs.size() > 1) throw UsageError("--json reads one LOG");
  if (!vm.count("title"))
    for (const std::string& log : o.logs) o.title += (o.title.empty() ? "" : ", ") + log;
}

LinkLogStats read_log(const std::string& log, Nanos bin) {
  if (log == "-") {
    LineReader in(STDIN_FILENO, "standard input");
    return read_link_log(in, bin);
  }
  LineReader in(log);
  return read_link_log(in, bin);
}

// Refuses a picture that would be drawn over a LOG, or over the other picture, before anything is read.
void check_files(const Options& o) {
  std::vector<NamedFile> files;
  for (const std::string& log : o.logs)
    if (log != "-") files.push_back({"the log '" + log + "'", log});
  if (!o.svg.empty()) files.push_back({"--svg", o.svg, true});
  if (!o.png.empty()) files.push_back({"--png", o.png, true});
  check_outputs(files);
}

// One summary per log; with several, each under a line naming it.
std::string summaries(const std::vector<LinkLogStats>& stats, const Options& o) {
  if (o.json) return format_json(stats[0], o.logs[0]);
  if (stats.size() == 1) return format_summary(stats[0]);
  std::string out;
  for (size_t i = 0; i < stats.size(); ++i) out += (i ? "\n" : "") + o.logs[i] + ":\n" + format_summary(stats[i]);
  return out;
}

// Writes one picture; a failed one is removed rather than left half-written.
void draw(const std::vector<LinkLogStats>& stats, const Options& o, PlotFormat format, const std::string& path) {
  const std::string gnuplot = find_gnuplot();
  if (gnuplot.empty())
    throw Error(std::string("--") + (format == PlotFormat::kSvg ? "svg" : "png") +
                " needs gnuplot, which is not on PATH (Debian: gnuplot-nox)");
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (fd < 0) throw Error(path + ": cannot open for writing: " + std::strerror(errno));
  FileDescriptor out(fd);
  try {
    std::vector<const LinkLogStats*> logs;
    for (const LinkLogStats& s : stats) logs.push_back(&s);
    run_gnuplot(gnuplot, plot_script(logs, o.logs, format, o.title), out.get());
  } catch (const Error&) {
    ::unlink(path.c_str());
    throw;
  }
}

int graph(const Options& o) {
  check_files(o);
  std::vector<LinkLogStats> stats;
  for (const std::string& log : o.logs) stats.push_back(read_log(log, o.bin));
  std::cout << summaries(stats, o) << std::flush;
  if (!o.svg.empty()) draw(stats, o, PlotFormat::kSvg, o.svg);
  if (!o.png.empty()) draw(stats, o, PlotFormat::kPng, o.png);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::signal(SIGPIPE, SIG_IGN);  // a gnuplot that dies early must not kill us: its error is reported
  Options o;
  Command command("tm-graph", "LOG [LOG...] [--bin MS] [--json] [--svg FILE] [--png FILE] [--title T]",
      "Print the capacity, throughput, queueing delay and drops of a link log (tracemod's or\n"
      "Mahimahi's), and draw them with gnuplot; several logs (one per path) share one picture.");
  add_options(command, o);
  command.check = [&o](const po::variables_map& vm) { check_options(vm, o); };
  command.run = [&o] { return graph(o); };
  return run_command(argc, argv, command);
}
