#include "probe/probe_cli.hh"

#include <boost/program_options.hpp>
#include <iostream>

#include "config.h"
#include "probe/distill.hh"
#include "probe/prober.hh"
#include "util/error.hh"
#include "util/file_descriptor.hh"
#include "util/parse.hh"

namespace tracemod::probe {
namespace {

namespace po = boost::program_options;

const char* const kUsage =
    "usage: tm-probe [OPTIONS] TARGET -o RAW\n"
    "       tm-probe server [--port N] [--bind ADDRESS] [-q]\n"
    "       tm-probe distill RAW [-o SCHEDULE] [--window TIME] [--step TIME] [--mean]\n"
    "       tm-probe print RAW";

std::string get(const po::variables_map& vm, const char* name) {
  return vm.count(name) ? vm[name].as<std::string>() : std::string();
}

po::options_description probe_options() {
  po::options_description o("Probe options");
  auto text = [](const char* v) { return po::value<std::string>()->value_name(v); };
  o.add_options()                                                                                                  //
      ("output,o", text("RAW"), "write the raw record to RAW (required)")                                          //
      ("small", text("BYTES"), "IP bytes of each triplet's first echo (64)")                                       //
      ("large", text("BYTES"), "IP bytes of the two echoes sent back to back on its reply (1400)")                 //
      ("interval", text("TIME"), "one triplet per TIME (1s)")                                                      //
      ("duration", text("TIME"), "probe for TIME, then stop (default: until Ctrl-C)")                              //
      ("timeout", text("TIME"), "an echo unanswered after TIME is lost (5s)")                                      //
      ("method", text("M"), "auto (ICMP: a ping socket, else a raw one), ping, raw, or udp (to tm-probe server)")  //
      ("port", text("N"), "the tm-probe server's UDP port, with --method udp (9475)")                              //
      ("quiet,q", "print nothing but errors");
  return o;
}

po::options_description server_options() {
  po::options_description o("Server options");
  o.add_options()                                                                    //
      ("port", po::value<std::string>()->value_name("N"), "UDP port (9475)")         //
      ("bind", po::value<std::string>()->value_name("ADDRESS"), "one address only")  //
      ("quiet,q", "print nothing but errors");
  return o;
}

po::options_description distill_options() {
  po::options_description o("Distill options");
  o.add_options()                                                                                                //
      ("output,o", po::value<std::string>()->value_name("SCHEDULE"), "the schedule (RAW without .raw, .sched)")  //
      ("window", po::value<std::string>()->value_name("TIME"), "width of the sliding window (5s)")               //
      ("step", po::value<std::string>()->value_name("TIME"), "its step: one schedule line each (1s)")            //
      ("mean", "average a window's estimates by their mean, as the paper did (default: their median)");
  return o;
}

po::variables_map parse(const std::vector<std::string>& args, po::options_description options, const char* positional) {
  options.add_options()(positional, po::value<std::string>());
  po::positional_options_description p;
  p.add(positional, 1);
  po::variables_map vm;
  po::store(po::command_line_parser(args).options(options).positional(p).run(), vm);
  po::notify(vm);
  return vm;
}

Nanos duration(const po::variables_map& vm, const char* name, Nanos fallback, Nanos low) {
  if (!vm.count(name)) return fallback;
  return parse_duration_between(std::string("--") + name, get(vm, name), 0, low, kMaxDuration);
}

uint16_t port(const po::variables_map& vm) {
  return vm.count("port") ? parse_port("--port", get(vm, "port")) : kDefaultPort;
}

int probe(const std::vector<std::string>& args) {
  const po::variables_map vm = parse(args, probe_options(), "target");
  ProbeConfig c;
  c.target = get(vm, "target");
  if (c.target.empty()) throw UsageError("missing TARGET: the host to probe");
  c.output = get(vm, "output");
  if (c.output.empty()) throw UsageError("missing -o RAW: where to write the raw record");
  c.method = vm.count("method") ? parse_method("--method", get(vm, "method")) : Method::kAuto;
  if (vm.count("port") && c.method != Method::kUdp) throw UsageError("--port goes with --method udp");
  if (vm.count("small"))
    c.small = static_cast<uint32_t>(parse_bytes("--small", get(vm, "small"), 1, 65000));
  if (vm.count("large"))
    c.large = static_cast<uint32_t>(parse_bytes("--large", get(vm, "large"), 1, 65000));
  c.interval = duration(vm, "interval", c.interval, 10 * kMillisecond);
  c.duration = duration(vm, "duration", 0, 1);
  c.timeout = duration(vm, "timeout", c.timeout, 1 * kMillisecond);
  c.quiet = vm.count("quiet") > 0;
  c.address = resolve("TARGET", c.target, port(vm));
  const std::string summary = run_probe(c);
  if (!c.quiet) std::cerr << summary << "\n";
  return 0;
}

int distill(const std::vector<std::string>& args) {
  const po::variables_map vm = parse(args, distill_options(), "raw");
  const std::string raw = get(vm, "raw");
  if (raw.empty()) throw UsageError("missing RAW: the raw record to distill");
  DistillConfig c;
  c.window = duration(vm, "window", c.window, 1);
  c.step = duration(vm, "step", c.step, 1 * kMillisecond);
  if (c.window < c.step) throw UsageError("--window must be at least one --step");
  c.mean = vm.count("mean") > 0;
  const std::string out = vm.count("output") ? get(vm, "output") : default_schedule_path(raw);
  check_outputs({{"the raw record", raw}, {vm.count("output") ? "-o" : "the schedule", out, true}});
  std::cout << distill_file(raw, out, c) << "\n";
  return 0;
}

int print(const std::vector<std::string>& args) {
  const po::variables_map vm = parse(args, po::options_description(), "raw");
  if (!vm.count("raw")) throw UsageError("missing RAW: the raw record to print");
  std::cout << print_file(get(vm, "raw"));
  return 0;
}

int server(const std::vector<std::string>& args) {
  const po::variables_map vm = parse(args, server_options(), "unexpected");
  if (vm.count("unexpected")) throw UsageError("unexpected argument '" + get(vm, "unexpected") + "'");
  return run_echo_server(get(vm, "bind"), port(vm), vm.count("quiet") > 0);
}

void help() {
  std::cout << kUsage << "\n\n"
            << "Probe a network path as Noble et al.'s trace modulation does (an echo of S1 bytes each interval and,\n"
               "on its reply, two of S2 back to back), and distill the record into a schedule for tm-modulate.\n\n"
            << probe_options() << "\n"
            << server_options() << "\n"
            << distill_options() << "\nprint RAW: the raw record as text, one line per echo.\n";
}

}  // namespace

int run_cli(const std::vector<std::string>& args) {
  if (args.empty()) throw UsageError("missing TARGET, or a subcommand (server, distill)");
  const std::string& first = args[0];
  if (first == "--help" || first == "-h") return help(), 0;
  if (first == "--version") return std::cout << "tm-probe (" PACKAGE_NAME ") " PACKAGE_VERSION "\n", 0;
  try {
    if (first == "server") return server({args.begin() + 1, args.end()});
    if (first == "distill") return distill({args.begin() + 1, args.end()});
    if (first == "print") return print({args.begin() + 1, args.end()});
    return probe(args);
  } catch (const po::error& e) {
    throw UsageError(e.what());
  }
}

const char* usage() {
  return kUsage;
}

}  // namespace tracemod::probe
