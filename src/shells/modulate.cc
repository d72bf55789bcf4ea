// tm-modulate: a link whose latency, bottleneck rate, residual per-byte cost, loss, queue limit and outages follow
// a schedule of states (Noble et al.'s trace modulation; Seawind's state changes), per direction or, with
// --shared-medium, through one bottleneck both directions share.
#include <array>
#include <memory>

#include "config.h"
#include "shells/shells.hh"
#include "shells/tool.hh"
#include "link/trace.hh"
#include "modulate/modulated_link.hh"
#include "util/error.hh"

namespace {

using namespace tracemod;
using namespace tracemod::modulate;

// A schedule named without a directory is also looked for where traces are (TM_TRACE_PATH, the installed ones).
std::shared_ptr<const Schedule> load(const std::string& name) {
  return std::make_shared<const Schedule>(Schedule::load(DeliveryTrace::find(name)));
}

// The schedule of each direction (the same one for both unless --uplink and --downlink are given).
std::array<std::shared_ptr<const Schedule>, 2> read_schedules(const po::variables_map& vm) {
  const std::string both = option_text(vm, "schedule"), up = option_text(vm, "uplink"),
                    down = option_text(vm, "downlink");
  if (!both.empty() && (!up.empty() || !down.empty()))
    throw UsageError(
        "give one SCHEDULE for both directions, or --uplink and --downlink, not both (a command goes "
        "after --)");
  if (both.empty() && (up.empty() || down.empty()))
    throw UsageError(up.empty() && down.empty() ? "missing SCHEDULE"
                                                : "--uplink and --downlink go together: give both schedules");
  if (!both.empty()) {
    auto s = load(both);
    return {s, s};
  }
  if (vm.count("shared-medium"))
    throw UsageError("--shared-medium: both directions share one bottleneck, so they follow one SCHEDULE");
  return {load(up), load(down)};
}

// The schedules read and the log written (check_outputs: no log over a schedule).
std::vector<NamedFile> files(const po::variables_map& vm) {
  std::vector<NamedFile> files;
  for (const std::string option : {"schedule", "uplink", "downlink"})
    if (const std::string name = option_text(vm, option); !name.empty())
      files.push_back(
          {option == "schedule" ? "the schedule" : "the " + option + "'s schedule", DeliveryTrace::find_or_name(name)});
  if (const std::string log = option_text(vm, "log"); !log.empty()) files.push_back({"--log", log, true});
  return files;
}

std::vector<std::string> log_header(const std::array<std::shared_ptr<const Schedule>, 2>& schedules,
                                    const ShellOptions& shell, const std::string& path, uint64_t seed, bool shared) {
  const std::string names =
      schedules[0] == schedules[1] ? schedules[0]->name() : schedules[0]->name() + " / " + schedules[1]->name();
  return {"tracemod tm-modulate [" + names + "] > " + path,
          "command line: " + shell.command_line,
          "version: " PACKAGE_NAME " " PACKAGE_VERSION,
          "seed: " + std::to_string(seed),
          std::string("shared medium: ") + (shared ? "yes" : "no"),
          "times in ms of CLOCK_MONOTONIC; sizes in IP bytes; F in ms, Vb and Vr in us per byte"};
}

QueueFactory configure(const po::variables_map& vm, ShellOptions& shell) {
  const auto schedules = read_schedules(vm);
  const uint64_t seed = read_seed(vm);
  const bool shared = vm.count("shared-medium") > 0, once = vm.count("once") > 0;
  std::shared_ptr<ModulateLog> log;
  if (const std::string path = option_text(vm, "log"); !path.empty()) {
    log = std::make_shared<ModulateLog>(path);
    shell.logs.push_back(log->file());
  }
  shell.log_lines.push_back("seed " + std::to_string(seed));
  shell.prompt_tag = shared ? "[modulate shared]" : "[modulate]";
  auto start = std::make_shared<Nanos>(0);  // both directions start their schedules at the same instant
  // Held weakly: the lanes own the shared link, which must go with them (it holds the shell's buffers).
  auto medium = std::make_shared<std::weak_ptr<ModulatedLink>>();
  return [=, shell = shell](Ferry::Direction which, BufferPool& pool) -> std::unique_ptr<PacketQueue> {
    if (*start == 0) {
      *start = monotonic_now();
      if (log) log->header(log_header(schedules, shell, log->path(), seed, shared), *start);
    }
    LinkConfig config{schedules[which], *start, once, seed, log, shared};
    std::shared_ptr<ModulatedLink> link = shared ? medium->lock() : nullptr;
    if (!link) link = std::make_shared<ModulatedLink>(config, pool);
    if (shared) *medium = link;
    return std::make_unique<Lane>(link, which);
  };
}

}  // namespace

namespace tracemod {

std::unique_ptr<Tool> modulate_tool() {
  auto made = std::make_unique<Tool>("tm-modulate", "[OPTIONS] SCHEDULE [-- COMMAND [ARGS...]]\n"
      "       tm-modulate [OPTIONS] --uplink SCHEDULE --downlink SCHEDULE [-- COMMAND [ARGS...]]",
      "Run COMMAND (default: your $SHELL) behind a link whose latency, bottleneck rate, residual per-byte\n"
      "cost, loss, queue limit and outages follow a schedule of states (see man tm-modulate).");
  Tool& tool = *made;
  tool.options.add_options()                                                                               //
      ("schedule", text_value("FILE"), "the schedule both directions follow")                              //
      ("uplink", text_value("FILE"), "the uplink's schedule (from the command outward), with --downlink")  //
      ("downlink", text_value("FILE"), "the downlink's schedule (toward the command)")                     //
      ("shared-medium", "both directions share one bottleneck queue, in arrival order (half-duplex)")      //
      ("once", "stop at the end of the schedule instead of looping (the command is then stopped)")         //
      ("log", text_value("FILE"), "write the state changes and every packet's times to FILE");
  add_seed_option(tool.options, "the random losses");
  tool.positional.add("schedule", 1);
  tool.configure = configure;
  tool.files = files;
  return made;
}

}  // namespace tracemod
