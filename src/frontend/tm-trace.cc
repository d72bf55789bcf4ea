// tm-trace: check, describe and make Mahimahi delivery traces. Subcommands: stats, make, validate.
#include <boost/program_options.hpp>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "config.h"
#include "link/trace_tools.hh"
#include "util/error.hh"
#include "util/parse.hh"
#include "util/random.hh"

namespace {

namespace po = boost::program_options;
using Strings = std::vector<std::string>;

struct Subcommand {
  const char* name;
  const char* synopsis;
  const char* summary;
  bool takes_files;  // FILE... as positional arguments
  void (*describe)(po::options_description&);
  int (*run)(const po::variables_map&);
};

Strings files_of(const po::variables_map& vm) {
  if (!vm.count("file")) throw tracemod::UsageError("missing FILE: name one or more trace files");
  return vm["file"].as<Strings>();
}

// Runs EACH on every file; a bad file prints its one-line error (PATH:LINE: ...) and makes the status 2.
template <typename Each>
int over_files(const po::variables_map& vm, Each each) {
  int status = 0;
  for (const std::string& f : files_of(vm)) {
    try {
      std::cout << each(f, tracemod::DeliveryTrace::load(tracemod::DeliveryTrace::find(f))) << std::flush;
    } catch (const tracemod::UsageError& e) {
      std::cerr << e.what() << "\n";
      status = 2;
    }
  }
  return status;
}

void describe_validate(po::options_description&) {}

int run_validate(const po::variables_map& vm) {
  return over_files(
      vm, [](const std::string& f, const tracemod::DeliveryTrace& t) { return tracemod::format_validation(f, t); });
}

void describe_stats(po::options_description& d) {
  d.add_options()("window,w", po::value<Strings>()->composing()->value_name("DURATION"),
                  "window for the rate percentiles, e.g. 100ms or 1s (repeat, or separate with commas; "
                  "default: 100ms and 1s)");
}

std::vector<uint64_t> windows_of(const po::variables_map& vm) {
  if (!vm.count("window")) return {100, 1000};
  std::vector<uint64_t> out;
  for (const std::string& list : vm["window"].as<Strings>()) {
    for (size_t begin = 0; begin <= list.size();) {
      const size_t comma = std::min(list.find(',', begin), list.size());
      out.push_back(tracemod::parse_duration_ms("--window", list.substr(begin, comma - begin)));
      begin = comma + 1;
    }
  }
  return out;
}

int run_stats(const po::variables_map& vm) {
  const std::vector<uint64_t> windows = windows_of(vm);
  files_of(vm);  // a usage error before any output
  return over_files(vm, [&](const std::string& f, const tracemod::DeliveryTrace& t) {
    return tracemod::format_stats(f, tracemod::trace_stats(t, windows));
  });
}

void describe_make(po::options_description& d) {
  d.add_options()                                                                                               //
      ("rate", po::value<std::string>()->value_name("RATE"), "a constant rate, e.g. 12mbit (with --duration)")  //
      ("duration", po::value<std::string>()->value_name("DURATION"),
       "length of the trace, e.g. 10s: with --rate, or to repeat --on-off")  //
      ("steps", po::value<std::string>()->value_name("RATE:DURATION,..."),
       "rates one after the other, once, e.g. 5mbit:10s,20mbit:10s (0 or off: no opportunity)")  //
      ("on-off", po::value<std::string>()->value_name("RATE:DURATION,..."),
       "a pattern repeated until --duration (default: once), e.g. 12mbit:2s,off:1s")  //
      ("stalls", po::value<std::string>()->value_name("EVERY:LENGTH"),
       "add stalls about EVERY apart lasting about LENGTH, each followed by a burst of what it withheld, "
       "e.g. 2s:300ms")  //
      ("burst-rate", po::value<std::string>()->value_name("RATE"),
       "rate of those bursts, on top of the link's own (default: 8 x the highest rate)")                    //
      ("seed", po::value<std::string>()->value_name("N"), "seed of the stalls (default: random, printed)")  //
      ("output,o", po::value<std::string>()->value_name("FILE"), "write the trace to FILE, not standard output");
}

tracemod::TracePlan plan_of(const po::variables_map& vm) {
  auto get = [&](const char* name) { return vm.count(name) ? vm[name].as<std::string>() : std::string(); };
  const int kinds = static_cast<int>(vm.count("rate") + vm.count("steps") + vm.count("on-off"));
  if (kinds != 1) throw tracemod::UsageError("give exactly one of --rate, --steps and --on-off");
  tracemod::TracePlan plan;
  if (vm.count("rate")) {
    const uint64_t rate = tracemod::parse_rate("--rate", get("rate"));
    if (!vm.count("duration")) throw tracemod::UsageError("--rate needs --duration");
    plan.total_ms = tracemod::parse_duration_ms("--duration", get("duration"));
    plan.pattern.push_back({rate, plan.total_ms});
    return plan;
  }
  if (vm.count("steps") && vm.count("duration"))
    throw tracemod::UsageError("--duration does not go with --steps: the steps give the length");
  const char* option = vm.count("steps") ? "steps" : "on-off";
  plan.pattern = tracemod::parse_segments(std::string("--") + option, get(option));
  for (const tracemod::RateSegment& s : plan.pattern) plan.total_ms += s.ms;
  if (plan.total_ms > tracemod::DeliveryTrace::kMaxMillis)
    throw tracemod::UsageError("the segments last longer than a trace can (4294967295 ms)");
  if (vm.count("duration")) plan.total_ms = tracemod::parse_duration_ms("--duration", get("duration"));
  return plan;
}

// --stalls, --burst-rate and --seed; a random seed is printed, so the trace can be made again.
void add_stalls(const po::variables_map& vm, tracemod::TracePlan& plan) {
  auto get = [&](const char* name) { return vm[name].as<std::string>(); };
  if (!vm.count("stalls")) {
    if (vm.count("burst-rate") || vm.count("seed")) throw tracemod::UsageError("--burst-rate and --seed need --stalls");
    return;
  }
  plan.stalls = tracemod::parse_stalls("--stalls", get("stalls"));
  if (vm.count("burst-rate"))
    plan.stalls.burst_bits_per_second = tracemod::parse_rate("--burst-rate", get("burst-rate"));
  if (vm.count("seed")) {
    plan.stalls.seed = tracemod::parse_seed(get("seed"));
  } else {
    plan.stalls.seed = tracemod::random_seed();
    std::cerr << "tm-trace: stalls drawn with --seed " << plan.stalls.seed << "\n";
  }
}

int run_make(const po::variables_map& vm) {
  tracemod::TracePlan plan = plan_of(vm);
  add_stalls(vm, plan);
  tracemod::write_trace(plan, vm.count("output") ? vm["output"].as<std::string>() : std::string());
  return 0;
}

const Subcommand kSubcommands[] = {
    {"validate", "validate FILE...", "Check each trace as tm-link and Mahimahi read it; print a summary or the error.",
     true, describe_validate, run_validate},
    {"stats", "stats [--window DURATION]... FILE...",
     "Print each trace's length, opportunities, mean rate, and rate percentiles over windows.", true, describe_stats,
     run_stats},
    {"make",
     "make (--rate RATE --duration DUR | --steps LIST | --on-off LIST [--duration DUR])\n"
     "         [--stalls EVERY:LENGTH [--burst-rate RATE] [--seed N]] [-o FILE]",
     "Write a synthetic trace: a constant rate, steps, or a repeated on/off pattern, with or without stalls.\n"
     "LIST is RATE:DUR,...; a stall holds opportunities back and releases them in a burst, as cellular links do.\n"
     "The last line is always the trace's length, which Mahimahi reads as its period: when no opportunity\n"
     "falls there, the last one moves there.",
     false, describe_make, run_make},
};

int usage_error(const std::string& message, const std::string& synopsis) {
  std::cerr << "tm-trace: " << message << "\nusage: tm-trace " << synopsis << "\n"
            << "Try 'tm-trace --help' for more information.\n";
  return 2;
}

void print_help() {
  std::cout << "usage:";
  for (const Subcommand& s : kSubcommands)
    std::cout << (&s == kSubcommands ? " " : "       ") << "tm-trace " << s.synopsis << "\n";
  std::cout << "Check, describe and make Mahimahi delivery traces (one time in ms per line, one 1500-byte\n"
               "opportunity per line, looping with period = the last value).\n\n";
  for (const Subcommand& s : kSubcommands) {
    const std::string first_line(s.summary, std::strcspn(s.summary, "\n"));
    std::cout << "  " << s.name << std::string(10 - std::strlen(s.name), ' ') << first_line << "\n";
  }
  std::cout << "\nRates: bit, kbit, mbit, gbit, kbps, mbps, gbps (all bits per second). Durations: ms, s, min.\n"
               "'tm-trace SUBCOMMAND --help' lists its options; see also man tm-trace.\n";
}

int run_subcommand(const Subcommand& sub, int argc, char** argv) {
  po::options_description visible(std::string("Options of tm-trace ") + sub.name), all;
  po::positional_options_description positional;
  visible.add_options()("help,h", "show this help and exit");
  sub.describe(visible);
  all.add(visible);
  if (sub.takes_files) {
    all.add_options()("file", po::value<Strings>());
    positional.add("file", -1);
  }
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(argc, argv).options(all).positional(positional).run(), vm);
    po::notify(vm);
    if (vm.count("help")) {
      std::cout << "usage: tm-trace " << sub.synopsis << "\n" << sub.summary << "\n\n" << visible;
      return 0;
    }
    return sub.run(vm);
  } catch (const po::error& e) {
    return usage_error(e.what(), sub.synopsis);
  } catch (const tracemod::UsageError& e) {
    return usage_error(e.what(), sub.synopsis);
  }
}

}  // namespace

int main(int argc, char** argv) {
  const std::string first = argc > 1 ? argv[1] : "";
  if (first == "--help" || first == "-h") return print_help(), 0;
  if (first == "--version") {
    std::cout << "tm-trace (" PACKAGE_NAME ") " PACKAGE_VERSION "\n";
    return 0;
  }
  const std::string any = "(stats|make|validate) ...";
  if (first.empty()) return usage_error("missing subcommand: stats, make or validate", any);
  for (const Subcommand& s : kSubcommands) {
    if (first != s.name) continue;
    try {
      return run_subcommand(s, argc - 1, argv + 1);
    } catch (const std::exception& e) {
      std::cerr << "tm-trace: " << e.what() << "\n";
      return 1;
    }
  }
  return usage_error("unknown subcommand '" + first + "': expected stats, make or validate", any);
}
