// tm-top: the running tracemod shells of this user, live: in the terminal, as text or JSON once, or as a page.
#include <sys/ioctl.h>
#include <unistd.h>

#include <chrono>
#include <iostream>
#include <thread>

#include "cli/command.hh"
#include "live/reader.hh"
#include "top/render.hh"
#include "top/terminal.hh"
#include "top/web.hh"
#include "util/error.hh"
#include "util/parse.hh"

using namespace tracemod;

namespace {

struct Options {
  bool once = false, json = false;
  bool web = false;
  top::WebOptions web_options;
  Nanos interval = 250 * kMillisecond;
  size_t width = 0;  // --once: 0 is the terminal's width, or no limit off a terminal
  pid_t pid = 0;     // --pid: 0 for every shell
};

// What tm-top refuses rather than ignores. --once --json is one request: a snapshot, as JSON.
void check_combination(const po::variables_map& vm, Options& o) {
  if (vm.count("argument"))
    throw UsageError("unexpected argument '" + vm["argument"].as<std::vector<std::string>>()[0] +
                     "': tm-top takes options only");
  if (o.json) o.once = false;
  if (o.once + o.json + vm.count("web") > 1)
    throw UsageError("--web shows the live view: give it without --once or --json");
  if (vm.count("width") && !o.once)
    throw UsageError("--width cuts --once's lines: JSON and the live views are not cut");
  if (vm.count("interval") && (o.once || o.json))
    throw UsageError("--interval is the live view's refresh: a snapshot reads the shells for one second");
}

void add_options(Command& top, Options& o) {
  top.options.add_options()                                                                              //
      ("once", po::bool_switch(&o.once), "print one snapshot as text (rates over one second) and exit")  //
      ("json", po::bool_switch(&o.json), "print one snapshot as JSON and exit")                          //
      ("web", po::value<std::string>()->value_name("[ADDR:]PORT"),
       "serve the live view as a web page on ADDR (default 127.0.0.1) and PORT (0: any free port)")  //
      ("expose-to-network",
       "with --web on an address that is not loopback: serve every shell's command and counters to anyone who "
       "reaches it")  //
      ("interval", po::value<std::string>()->value_name("DURATION"),
       "how often the view is refreshed (default 250ms, at most 1s)")                                     //
      ("width", po::value<std::string>()->value_name("COLUMNS"), "--once: cut lines to COLUMNS")          //
      ("pid", po::value<std::string>()->value_name("PID"), "show only the shell PID and the shells it encloses");
  top.hidden.add_options()("argument", po::value<std::vector<std::string>>());
  top.positional.add("argument", -1);
}

void read_options(const po::variables_map& vm, Options& o) {
  check_combination(vm, o);
  if (vm.count("expose-to-network") && !vm.count("web")) throw UsageError("--expose-to-network needs --web");
  if (vm.count("web")) {
    o.web = true;
    o.web_options.expose = vm.count("expose-to-network") > 0;
    top::parse_web_address(vm["web"].as<std::string>(), o.web_options);
  }
  if (vm.count("interval"))
    o.interval = parse_duration_between("--interval", vm["interval"].as<std::string>(), 0, 10 * kMillisecond,
                                        1000 * kMillisecond);
  if (vm.count("pid"))
    o.pid = static_cast<pid_t>(parse_whole_number("--pid", vm["pid"].as<std::string>(), 1, 4194304, "a process id"));
  if (vm.count("width"))
    o.width = parse_whole_number("--width", vm["width"].as<std::string>(), 20, 10000, "a number of columns");
}

size_t terminal_width() {
  winsize w{};
  return isatty(1) && ioctl(1, TIOCGWINSZ, &w) == 0 && w.ws_col > 0 ? w.ws_col : 0;
}

// One snapshot: the shells read for a second (their rates need an interval), then printed.
int print_once(const Options& o) {
  live::Monitor monitor;
  monitor.only(o.pid);
  const Nanos until = monotonic_now() + live::Monitor::kRecent + 50 * kMillisecond;
  for (monitor.refresh(); monotonic_now() < until; monitor.refresh())
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const auto shells = monitor.shells();
  // The text says so and fails; JSON's empty list is an answer (scripts poll with it until a shell is up).
  if (o.pid && shells.empty() && !o.json)
    throw Error("no tracemod shell of this user has pid " + std::to_string(o.pid));
  std::cout << (o.json ? top::json_view(shells, 0) : top::text_view(shells, o.width ? o.width : terminal_width()));
  return 0;
}

int show(const Options& o) {
  if (o.once || o.json) return print_once(o);
  live::Monitor monitor;
  monitor.only(o.pid);
  if (o.web) return top::run_web(monitor, o.web_options, o.interval);
  if (!isatty(0) || !isatty(1)) throw UsageError("the live view needs a terminal: use --once, --json or --web");
  return top::run_terminal(monitor, o.interval);
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  Command command("tm-top", "[--once | --json | --web [ADDR:]PORT] [--pid PID] [--interval DURATION]",
      "Show every running tracemod shell of this user, nested as they run, with each direction's rate,\n"
      "capacity, queue, delay and drops, refreshed live.");
  add_options(command, o);
  command.check = [&o](const po::variables_map& vm) { read_options(vm, o); };
  command.run = [&o] { return show(o); };
  return run_command(argc, argv, command);
}
