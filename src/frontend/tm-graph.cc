// tm-graph: the summary and the pictures of a link log, ours or Mahimahi's.
#include <fcntl.h>
#include <unistd.h>

#include <boost/program_options.hpp>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <iostream>
#include <vector>

#include "analysis/gnuplot.hh"
#include "analysis/json_report.hh"
#include "analysis/link_log_reader.hh"
#include "analysis/plot_script.hh"
#include "config.h"
#include "util/file_descriptor.hh"
#include "util/parse.hh"

namespace po = boost::program_options;
using namespace tracemod;

namespace {

constexpr const char* kSynopsis = "LOG [LOG...] [--bin MS] [--json] [--svg FILE] [--png FILE] [--title T]";

struct Options {
  std::vector<std::string> logs;  // several: one picture of them all (tm-multipath's paths), a summary each
  std::string svg, png, title;
  Nanos bin = 500 * kMillisecond;
  bool json = false;
};

Nanos parse_bin(const std::string& text) {
  return parse_duration_between("--bin", text, kMillisecond, 1000, kMaxDelay);  // 1 us to 1 h, as tm-delay's
}

// Returns false if --help or --version was answered.
bool parse_options(int argc, char** argv, Options& o) {
  po::options_description visible("Options");
  visible.add_options()                                                                               //
      ("bin", po::value<std::string>()->value_name("MS"), "width of a time bin in ms (default 500)")  //
      ("json", po::bool_switch(&o.json), "print the summary and the per-bin series as JSON instead")  //
      ("svg", po::value(&o.svg)->value_name("FILE"), "draw the graphs as SVG into FILE")              //
      ("png", po::value(&o.png)->value_name("FILE"), "draw the graphs as PNG into FILE")              //
      ("title", po::value(&o.title)->value_name("T"), "title of the graphs (default: the LOGs)")      //
      ("help,h", "show this help and exit")                                                           //
      ("version", "show the version and exit");
  po::options_description all;
  all.add(visible).add_options()("log", po::value(&o.logs));
  po::positional_options_description positional;
  positional.add("log", -1);
  po::variables_map vm;
  po::store(po::command_line_parser(argc, argv).options(all).positional(positional).run(), vm);
  po::notify(vm);
  if (vm.count("help")) {
    std::cout << "usage: tm-graph " << kSynopsis << "\n"
              << "Print the capacity, throughput, queueing delay and drops of a link log (tracemod's or\n"
              << "Mahimahi's), and draw them with gnuplot; several logs (one per path) share one picture.\n\n"
              << visible;
    return false;
  }
  if (vm.count("version")) {
    std::cout << "tm-graph (" PACKAGE_NAME ") " PACKAGE_VERSION "\n";
    return false;
  }
  if (vm.count("bin")) o.bin = parse_bin(vm["bin"].as<std::string>());
  if (o.logs.empty()) throw UsageError("missing LOG: the link log to read");
  if (o.json && o.logs.size() > 1) throw UsageError("--json reads one LOG");
  if (!vm.count("title"))
    for (const std::string& log : o.logs) o.title += (o.title.empty() ? "" : ", ") + log;
  return true;
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

int usage_error(const std::string& message) {
  std::cerr << "tm-graph: " << message << "\nusage: tm-graph " << kSynopsis
            << "\nTry 'tm-graph --help' for more information.\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::signal(SIGPIPE, SIG_IGN);  // a gnuplot that dies early must not kill us: its error is reported
  Options o;
  try {
    if (!parse_options(argc, argv, o)) return 0;
  } catch (const po::error& e) {
    return usage_error(e.what());
  } catch (const UsageError& e) {
    return usage_error(e.what());
  }
  try {
    std::vector<LinkLogStats> stats;
    check_files(o);
    for (const std::string& log : o.logs) stats.push_back(read_log(log, o.bin));
    std::cout << summaries(stats, o) << std::flush;
    if (!o.svg.empty()) draw(stats, o, PlotFormat::kSvg, o.svg);
    if (!o.png.empty()) draw(stats, o, PlotFormat::kPng, o.png);
    return 0;
  } catch (const UsageError& e) {
    std::cerr << "tm-graph: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "tm-graph: " << e.what() << "\n";
    return 1;
  }
}
