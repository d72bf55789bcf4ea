// tm-link: a trace-driven link per direction (Mahimahi delivery traces, read unchanged, or a constant rate),
// with a queue discipline and an optional Mahimahi-format log per direction.
#include <array>
#include <memory>

#include "config.h"
#include "frontend/tool.hh"
#include "packet/link_queue.hh"
#include "util/error.hh"

namespace {

using namespace tracemod;

// One direction's link as the command line describes it, built before any namespace is made so that a bad
// trace, queue or log path is reported (exit 2) before anything starts.
struct Direction {
  std::string name;    // "uplink"
  std::string source;  // the trace path, or the rate as given ("12mbit"), for the log header
  std::shared_ptr<const DeliveryTrace> trace;
  uint64_t rate = 0;
  std::unique_ptr<QueueDiscipline> discipline;  // handed to the link when the shell makes it
  std::shared_ptr<LinkLog> log;
};

std::string get(const po::variables_map& vm, const std::string& key) {
  return vm.count(key) ? vm[key].as<std::string>() : std::string();
}

uint64_t option_rate(const std::string& option, const std::string& text) {
  try {
    return parse_rate(text);
  } catch (const UsageError& e) {
    throw UsageError(option + ": " + e.what());
  }
}

LinkLog::Format log_format(const std::string& text) {
  if (text == "tracemod") return LinkLog::Format::kTracemod;
  if (text == "mahimahi") return LinkLog::Format::kMahimahi;
  throw UsageError("invalid --log-format '" + text + "': expected tracemod or mahimahi");
}

Direction read_direction(const po::variables_map& vm, const std::string& name, uint64_t seed, int stream,
                         LinkLog::Format format) {
  Direction d;
  d.name = name;
  const std::string path = get(vm, name + "-trace"), rate = get(vm, name + "-rate");
  if (path.empty() == rate.empty())
    throw UsageError(path.empty() ? "missing " + name + ": give a trace file or --" + name + "-rate"
                                  : name + ": give a trace file ('" + path + "') or --" + name +
                                        "-rate, not both (a command goes after --)");
  if (!path.empty())
    d.trace = std::make_shared<const DeliveryTrace>(DeliveryTrace::load(path));
  else
    d.rate = option_rate("--" + name + "-rate", rate);
  d.source = path.empty() ? rate : path;
  const std::string queue = vm[name + "-queue"].as<std::string>();
  d.discipline = make_queue_discipline("--" + name + "-queue-args", queue, get(vm, name + "-queue-args"),
                                       RandomStream(seed, static_cast<uint64_t>(stream)));
  if (const std::string log = get(vm, name + "-log"); !log.empty()) d.log = std::make_shared<LinkLog>(log, format);
  return d;
}

void write_header(const Direction& d, const ShellOptions& shell, uint64_t seed, Nanos start) {
  d.log->header({"tracemod tm-link (" + d.name + ") [" + d.source + "] > " + d.log->path(),
                 "command line: " + shell.command_line, "version: " PACKAGE_NAME " " PACKAGE_VERSION,
                 "queue: " + d.discipline->describe(), "seed: " + std::to_string(seed),
                 "times in ms of CLOCK_MONOTONIC; sizes in IP bytes; an opportunity carries 1500 bytes"},
                start);
}

QueueFactory configure(const po::variables_map& vm, ShellOptions& shell) {
  const uint64_t seed = vm.count("seed") ? parse_seed(get(vm, "seed")) : random_seed();
  const LinkLog::Format format = log_format(get(vm, "log-format"));
  auto dirs = std::make_shared<std::array<Direction, 2>>();
  (*dirs)[Ferry::kUplink] = read_direction(vm, "uplink", seed, Ferry::kUplink, format);
  (*dirs)[Ferry::kDownlink] = read_direction(vm, "downlink", seed, Ferry::kDownlink, format);
  const bool once = vm.count("once") > 0;
  if (once && !(*dirs)[0].trace && !(*dirs)[1].trace)
    throw UsageError("--once: both directions have a constant rate, which never ends");
  shell.log_lines.push_back("seed " + std::to_string(seed));
  shell.prompt_tag = "[link]";
  auto start = std::make_shared<Nanos>(0);  // both directions start their traces at the same instant
  return [=, shell = shell](Ferry::Direction which, BufferPool& pool) -> std::unique_ptr<PacketQueue> {
    if (*start == 0) *start = monotonic_now();
    Direction& d = (*dirs)[which];
    if (d.log) write_header(d, shell, seed, *start);
    std::unique_ptr<OpportunitySource> source;
    if (d.trace)
      source = d.trace->cursor(once);
    else
      source = std::make_unique<ConstantRate>(d.rate);
    const Nanos end = once && d.trace ? static_cast<Nanos>(d.trace->period_ms()) * kMillisecond : kNever;
    return std::make_unique<LinkQueue>(std::move(source), *start, end, std::move(d.discipline), pool, d.log);
  };
}

}  // namespace

int main(int argc, char** argv) {
  Tool tool;
  tool.name = "tm-link";
  tool.synopsis =
      "[OPTIONS] UPLINK-TRACE DOWNLINK-TRACE [-- COMMAND [ARGS...]]\n"
      "       tm-link [OPTIONS] --uplink-rate RATE --downlink-rate RATE [-- COMMAND [ARGS...]]";
  tool.summary =
      "Run COMMAND (default: your $SHELL) behind a link whose capacity follows a Mahimahi delivery\n"
      "trace (or a constant rate) in each direction.";
  auto text = [](const char* value_name) { return po::value<std::string>()->value_name(value_name); };
  tool.options.add_options()                                                                             //
      ("uplink-trace", text("FILE"), "delivery trace from the command outward")                          //
      ("downlink-trace", text("FILE"), "delivery trace toward the command")                              //
      ("uplink-rate", text("RATE"), "constant uplink rate instead of a trace (e.g. 12mbit)")             //
      ("downlink-rate", text("RATE"), "constant downlink rate instead of a trace")                       //
      ("uplink-queue", text("NAME")->default_value("infinite"), "infinite|droptail|drophead|codel|pie")  //
      ("downlink-queue", text("NAME")->default_value("infinite"), "the same, toward the command")        //
      ("uplink-queue-args", text("ARGS"),
       "e.g. packets=100 or bytes=150000; codel target=,interval=; pie "
       "qdelay_ref=,max_burst=")                                                                                //
      ("downlink-queue-args", text("ARGS"), "the same, toward the command")                                     //
      ("uplink-log", text("FILE"), "write the uplink's Mahimahi-format log to FILE")                            //
      ("downlink-log", text("FILE"), "write the downlink's log to FILE")                                        //
      ("log-format", text("F")->default_value("tracemod"), "tracemod (us, drop lines) or mahimahi (whole ms)")  //
      ("once", "stop at the end of the trace instead of looping (the command is then stopped)")                 //
      ("seed", text("N"), "seed of the queues' random drops (PIE)");
  tool.positional.add("uplink-trace", 1).add("downlink-trace", 1);
  tool.configure = configure;
  return run_tool(argc, argv, tool);
}
