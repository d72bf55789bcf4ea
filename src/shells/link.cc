// tm-link: a trace-driven link per direction (Mahimahi delivery traces, read unchanged, or a constant rate),
// with a queue discipline and an optional Mahimahi-format log per direction.
#include <array>
#include <memory>
#include <utility>
#include <vector>

#include "disciplines/queue_factory.hh"
#include "shells/shells.hh"
#include "shells/tool.hh"
#include "link/link_cli.hh"
#include "link/link_queue.hh"
#include "util/error.hh"

namespace {

using namespace tracemod;

using Direction = LinkDirection;

Direction read_direction(const po::variables_map& vm, const std::string& name, uint64_t seed, int stream,
                         LinkLog::Format format) {
  Direction d;
  d.name = name;
  read_capacity(d, option_text(vm, name + "-trace"), option_text(vm, name + "-rate"), "a trace file",
                "--" + name + "-rate");
  const std::string queue = vm[name + "-queue"].as<std::string>();
  d.discipline = make_queue_discipline("--" + name + "-queue-args", queue, option_text(vm, name + "-queue-args"),
                                       RandomStream(seed, static_cast<uint64_t>(stream)));
  if (const std::string log = option_text(vm, name + "-log"); !log.empty())
    d.log = std::make_shared<LinkLog>(log, format, "--" + name + "-log");
  return d;
}

// --shared-medium: the uplink's trace (or rate), queue and log describe the one link both directions share.
void check_shared_medium(const po::variables_map& vm) {
  for (const char* option : {"downlink-trace", "downlink-rate", "downlink-queue-args", "downlink-log"})
    if (vm.count(option))
      throw UsageError(std::string("--shared-medium: one link carries both directions, so --") + option +
                       " has no meaning: give one trace (or --uplink-rate), and the uplink's queue and log options "
                       "for the shared link (a command goes after --)");
  if (!vm["downlink-queue"].defaulted())
    throw UsageError("--shared-medium: the shared link's queue is --uplink-queue; --downlink-queue has no meaning");
}

// The traces read and the logs written (check_outputs: no log over a trace or the other log).
std::vector<NamedFile> files(const po::variables_map& vm) {
  std::vector<NamedFile> files;
  for (const std::string dir : {"uplink", "downlink"})
    if (const std::string trace = option_text(vm, dir + "-trace"); !trace.empty())
      files.push_back({"the " + dir + " trace", DeliveryTrace::find_or_name(trace)});
  for (const std::string dir : {"uplink", "downlink"})
    if (const std::string log = option_text(vm, dir + "-log"); !log.empty())
      files.push_back({"--" + dir + "-log", log, true});
  return files;
}

QueueFactory configure(const po::variables_map& vm, ShellOptions& shell) {
  const uint64_t seed = read_seed(vm);
  const LinkLog::Format format = read_log_format(option_text(vm, "log-format"));
  const bool shared = vm.count("shared-medium") > 0;
  if (shared) check_shared_medium(vm);
  auto dirs = std::make_shared<std::array<Direction, 2>>();
  (*dirs)[Ferry::kUplink] = read_direction(vm, "uplink", seed, Ferry::kUplink, format);
  if (!shared) (*dirs)[Ferry::kDownlink] = read_direction(vm, "downlink", seed, Ferry::kDownlink, format);
  for (const Direction& d : *dirs)
    if (d.log) shell.logs.push_back(d.log->file());
  if (!vm["log-format"].defaulted() && shell.logs.empty())
    throw UsageError("--log-format: there is no --uplink-log or --downlink-log to write in it");
  const bool once = vm.count("once") > 0;
  if (once && !(*dirs)[0].trace && (shared || !(*dirs)[1].trace))
    throw UsageError(shared ? "--once: the shared link has a constant rate, which never ends"
                            : "--once: both directions have a constant rate, which never ends");
  if (shared) (*dirs)[Ferry::kUplink].name = "shared medium";
  shell.log_lines.push_back("seed " + std::to_string(seed));
  shell.prompt_tag = shared ? "[link shared]" : "[link]";
  auto start = std::make_shared<Nanos>(0);  // both directions start their traces at the same instant
  // Held weakly: the lanes own the link, which must go with them (it holds the shell's buffers).
  auto medium = std::make_shared<std::weak_ptr<LinkQueue>>();
  return [=, shell = shell](Ferry::Direction which, BufferPool& pool) -> std::unique_ptr<PacketQueue> {
    if (*start == 0) *start = monotonic_now();
    if (shared) {
      std::shared_ptr<LinkQueue> link = medium->lock();
      if (!link) {
        Direction& d = (*dirs)[Ferry::kUplink];
        if (d.log) write_link_header(d, "tm-link", shell.command_line, seed, *start);
        *medium = link = make_link(d, once, *start, pool);
      }
      return std::make_unique<Lane>(link, which);
    }
    Direction& d = (*dirs)[which];
    if (d.log) write_link_header(d, "tm-link", shell.command_line, seed, *start);
    return make_link(d, once, *start, pool);
  };
}

}  // namespace

namespace tracemod {

std::unique_ptr<Tool> link_tool() {
  auto made = std::make_unique<Tool>("tm-link", "[OPTIONS] UPLINK-TRACE DOWNLINK-TRACE [-- COMMAND [ARGS...]]\n"
      "       tm-link [OPTIONS] --uplink-rate RATE --downlink-rate RATE [-- COMMAND [ARGS...]]\n"
      "       tm-link [OPTIONS] --shared-medium TRACE [-- COMMAND [ARGS...]]",
      "Run COMMAND (default: your $SHELL) behind a link whose capacity follows a Mahimahi delivery\n"
      "trace (or a constant rate) in each direction.");
  Tool& tool = *made;
  tool.options.add_options()                                                                                       //
      ("uplink-trace", text_value("FILE"), "delivery trace from the command outward")                              //
      ("downlink-trace", text_value("FILE"), "delivery trace toward the command")                                  //
      ("uplink-rate", text_value("RATE"), "constant uplink rate instead of a trace (e.g. 12mbit)")                 //
      ("downlink-rate", text_value("RATE"), "constant downlink rate instead of a trace")                           //
      ("uplink-queue", text_value("NAME")->default_value("infinite"), "infinite|droptail|drophead|codel|pie|red")  //
      ("downlink-queue", text_value("NAME")->default_value("infinite"), "the same, toward the command")            //
      ("uplink-queue-args", text_value("ARGS"),
       "e.g. packets=100 or bytes=150000; codel target=,interval=; pie "
       "qdelay_ref=,max_burst=; red min=,max=; ecn=1")                                                                //
      ("downlink-queue-args", text_value("ARGS"), "the same, toward the command")                                     //
      ("uplink-log", text_value("FILE"), "write the uplink's Mahimahi-format log to FILE")                            //
      ("downlink-log", text_value("FILE"), "write the downlink's log to FILE")                                        //
      ("log-format", text_value("F")->default_value("tracemod"), "tracemod (us, drop lines) or mahimahi (whole ms)")  //
      ("once", "stop at the end of the trace instead of looping (the command is then stopped)")                       //
      ("shared-medium",
       "one link (UPLINK-TRACE or --uplink-rate, and the uplink's queue and log) carries both directions in one "
       "queue, as a half-duplex radio does");
  add_seed_option(tool.options, "the random drops of pie and red");
  tool.positional.add("uplink-trace", 1).add("downlink-trace", 1);
  tool.configure = configure;
  tool.files = files;
  return made;
}

}  // namespace tracemod
