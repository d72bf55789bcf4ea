// tm-top: the running tracemod shells of this user, live: in the terminal, as text or JSON once, or as a page.
#include <sys/ioctl.h>
#include <unistd.h>

#include <boost/program_options.hpp>
#include <chrono>
#include <iostream>
#include <thread>

#include "config.h"
#include "live/reader.hh"
#include "top/render.hh"
#include "top/terminal.hh"
#include "top/web.hh"
#include "util/error.hh"
#include "util/parse.hh"

namespace po = boost::program_options;
using namespace tracemod;

namespace {

constexpr const char* kSynopsis = "[--once | --json | --web [ADDR:]PORT] [--interval DURATION]";

struct Options {
  bool once = false, json = false;
  bool web = false;
  top::WebOptions web_options;
  Nanos interval = 250 * kMillisecond;
  size_t width = 0;  // --once: 0 is the terminal's width, or no limit off a terminal
};

// Returns false if --help or --version was answered.
bool parse_options(int argc, char** argv, Options& o) {
  po::options_description visible("Options");
  visible.add_options()                                                                                  //
      ("once", po::bool_switch(&o.once), "print one snapshot as text (rates over one second) and exit")  //
      ("json", po::bool_switch(&o.json), "print one snapshot as JSON and exit")                          //
      ("web", po::value<std::string>()->value_name("[ADDR:]PORT"),
       "serve the live view as a web page on ADDR (default 127.0.0.1) and PORT (0: any free port)")  //
      ("expose-to-network",
       "with --web on an address that is not loopback: serve every shell's command and counters to anyone who "
       "reaches it")  //
      ("interval", po::value<std::string>()->value_name("DURATION"),
       "how often the view is refreshed (default 250ms, at most 1s)")                             //
      ("width", po::value<std::string>()->value_name("COLUMNS"), "--once: cut lines to COLUMNS")  //
      ("help,h", "show this help and exit")                                                       //
      ("version", "show the version and exit");
  po::variables_map vm;
  po::store(po::command_line_parser(argc, argv).options(visible).run(), vm);
  po::notify(vm);
  if (vm.count("help")) {
    std::cout << "usage: tm-top " << kSynopsis << "\n"
              << "Show every running tracemod shell of this user, nested as they run, with each direction's rate,\n"
              << "capacity, queue, delay and drops, refreshed live.\n\n"
              << visible;
    return false;
  }
  if (vm.count("version")) {
    std::cout << "tm-top (" PACKAGE_NAME ") " PACKAGE_VERSION "\n";
    return false;
  }
  if (o.once + o.json + vm.count("web") > 1) throw UsageError("--once, --json and --web exclude each other");
  if (vm.count("expose-to-network") && !vm.count("web")) throw UsageError("--expose-to-network needs --web");
  if (vm.count("web")) {
    o.web = true;
    o.web_options.expose = vm.count("expose-to-network") > 0;
    top::parse_web_address(vm["web"].as<std::string>(), o.web_options);
  }
  if (vm.count("interval"))
    o.interval = parse_duration_between("--interval", vm["interval"].as<std::string>(), 0, 10 * kMillisecond,
                                        1000 * kMillisecond);
  if (vm.count("width"))
    o.width = parse_whole_number("--width", vm["width"].as<std::string>(), 20, 10000, "a number of columns");
  return true;
}

size_t terminal_width() {
  winsize w{};
  return isatty(1) && ioctl(1, TIOCGWINSZ, &w) == 0 && w.ws_col > 0 ? w.ws_col : 0;
}

// One snapshot: the shells read for a second (their rates need an interval), then printed.
int print_once(const Options& o) {
  live::Monitor monitor;
  const Nanos until = monotonic_now() + live::Monitor::kRecent + 50 * kMillisecond;
  for (monitor.refresh(); monotonic_now() < until; monitor.refresh())
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const auto shells = monitor.shells();
  std::cout << (o.json ? top::json_view(shells, 0) : top::text_view(shells, o.width ? o.width : terminal_width()));
  return 0;
}

int usage_error(const std::string& message) {
  std::cerr << "tm-top: " << message << "\nusage: tm-top " << kSynopsis
            << "\nTry 'tm-top --help' for more information.\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  try {
    if (!parse_options(argc, argv, o)) return 0;
  } catch (const po::error& e) {
    return usage_error(e.what());
  } catch (const UsageError& e) {
    return usage_error(e.what());
  }
  try {
    if (o.once || o.json) return print_once(o);
    live::Monitor monitor;
    if (o.web) return top::run_web(monitor, o.web_options, o.interval);
    if (!isatty(0) || !isatty(1)) throw UsageError("the live view needs a terminal: use --once, --json or --web");
    return top::run_terminal(monitor, o.interval);
  } catch (const UsageError& e) {
    return usage_error(e.what());
  } catch (const std::exception& e) {
    std::cerr << "tm-top: " << e.what() << "\n";
    return 1;
  }
}
