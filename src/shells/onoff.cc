// tm-onoff: a link that goes off and on, per direction: Mahimahi's mm-onoff (exponential on and off times),
// on and off times from other distributions, or a schedule of outages from a file; while off, packets are
// dropped or held until the link returns.
#include <array>
#include <memory>

#include "effects/onoff_queue.hh"
#include "shells/shells.hh"
#include "shells/tool.hh"
#include "util/error.hh"

namespace {

using namespace tracemod;

constexpr Nanos kSecond = 1000 * kMillisecond;
constexpr Nanos kMinCycle = 100 * 1000;  // mean on + mean off: transitions are simulated one by one

// One direction's schedule as the command line gives it: random, from a file, or none (always on).
struct Direction {
  std::shared_ptr<const Distribution> on, off;
  std::shared_ptr<const std::vector<FileOnOff::Event>> events;
  std::string source;  // the schedule file
  bool given() const { return on || events; }
};

void check_cycle(const std::string& dir, const Direction& d) {
  if (d.on->mean() + d.off->mean() < static_cast<double>(kMinCycle))
    throw UsageError(dir + ": the mean on and off times add up to less than 100us (at most one of them may be 0)");
}

Direction read_direction(const po::variables_map& vm, const std::string& dir) {
  Direction d;
  const bool mahimahi = option_text(vm, "direction") == dir;
  const std::string on = "--" + dir + "-on", off = "--" + dir + "-off";
  const std::string schedule = direction_option(vm, dir, "schedule");
  if (vm.count("schedule") && vm.count(dir + "-schedule"))
    throw UsageError("--schedule (both directions) and --" + dir + "-schedule (one) exclude each other: give " +
                     "--uplink-schedule and --downlink-schedule to follow two files");
  const int forms = mahimahi + (vm.count(dir + "-on") || vm.count(dir + "-off")) + !schedule.empty();
  if (forms > 1) throw UsageError(dir + ": give one of MEAN_ON MEAN_OFF, " + on + "/" + off + ", or a schedule file");
  if (mahimahi) {
    if (!vm.count("mean-on") || !vm.count("mean-off"))
      throw UsageError("missing mean on and off times after '" + dir + "' (seconds, e.g. " + dir + " 10 1)");
    const Nanos mean_on = parse_duration("mean on time", option_text(vm, "mean-on"), kSecond);
    const Nanos mean_off = parse_duration("mean off time", option_text(vm, "mean-off"), kSecond);
    d.on = std::make_shared<const Distribution>(Distribution::exponential(static_cast<double>(mean_on)));
    d.off = std::make_shared<const Distribution>(Distribution::exponential(static_cast<double>(mean_off)));
  } else if (vm.count(dir + "-on") || vm.count(dir + "-off")) {
    if (!vm.count(dir + "-on") || !vm.count(dir + "-off")) throw UsageError(on + " and " + off + " go together");
    d.on = std::make_shared<const Distribution>(parse_distribution(on, option_text(vm, dir + "-on"), kSecond));
    d.off = std::make_shared<const Distribution>(parse_distribution(off, option_text(vm, dir + "-off"), kSecond));
  } else if (!schedule.empty()) {
    d.source = option_text(vm, schedule.substr(2));
    d.events = std::make_shared<const std::vector<FileOnOff::Event>>(FileOnOff::load(d.source));
  }
  if (d.on) check_cycle(dir, d);
  return d;
}

// A hold limit (--hold-packets 1000 or 1000pkts, --hold-bytes 1500000 or 1500kB), as tm-link's queue limits;
// 0 means no limit of that kind.
uint64_t read_limit(const po::variables_map& vm, const std::string& name, LimitKind kind) {
  return parse_queue_limit("--" + name, option_text(vm, name), kind);
}

QueueFactory configure(const po::variables_map& vm, ShellOptions& shell) {
  const std::string positional = option_text(vm, "direction");
  if (!positional.empty() && positional != "uplink" && positional != "downlink")
    throw UsageError("invalid direction '" + positional + "': expected uplink or downlink");
  auto dirs = std::make_shared<std::array<Direction, 2>>();
  (*dirs)[Ferry::kUplink] = read_direction(vm, "uplink");
  (*dirs)[Ferry::kDownlink] = read_direction(vm, "downlink");
  if (!(*dirs)[0].given() && !(*dirs)[1].given())
    throw UsageError(
        "missing on and off times: give uplink|downlink MEAN_ON MEAN_OFF, --uplink-on/--uplink-off, "
        "or --schedule FILE");
  const std::string mode = option_text(vm, "off-mode");
  if (mode != "drop" && mode != "hold") throw UsageError("invalid --off-mode '" + mode + "': expected drop or hold");
  const OnOffQueue::OffMode off_mode = mode == "hold" ? OnOffQueue::OffMode::kHold : OnOffQueue::OffMode::kDrop;
  const QueueSize hold{read_limit(vm, "hold-packets", LimitKind::kPackets),
                       read_limit(vm, "hold-bytes", LimitKind::kBytes)};
  for (const char* limit : {"hold-packets", "hold-bytes"})
    if (off_mode != OnOffQueue::OffMode::kHold && !vm[limit].defaulted())
      throw UsageError(std::string("--") + limit + " limits what --off-mode hold holds: with --off-mode " + mode +
                       " nothing is held");
  const uint64_t seed = read_seed(vm);
  shell.log_lines.push_back("seed " + std::to_string(seed));
  shell.prompt_tag = std::string("[onoff") + ((*dirs)[0].given() ? " up" : "") + ((*dirs)[1].given() ? " down" : "") +
                     (off_mode == OnOffQueue::OffMode::kHold ? " hold]" : "]");
  auto start = std::make_shared<Nanos>(0);  // both directions' schedules start at the same instant
  return [=](Ferry::Direction which, BufferPool& pool) -> std::unique_ptr<PacketQueue> {
    if (*start == 0) *start = monotonic_now();
    const Direction& d = (*dirs)[which];
    std::unique_ptr<OnOffSchedule> schedule;
    if (d.on)
      schedule = std::make_unique<RandomOnOff>(*d.on, *d.off,
                                               RandomStream(seed, stream_id(which, StreamPurpose::kOnOff)), *start);
    else
      schedule = std::make_unique<FileOnOff>(d.events ? *d.events : std::vector<FileOnOff::Event>{},
                                             d.events ? d.source : "(always on)", *start);
    return std::make_unique<OnOffQueue>(std::move(schedule), off_mode, hold, pool);
  };
}

// The schedules read, so that no capture overwrites one (check_outputs).
std::vector<NamedFile> files(const po::variables_map& vm) {
  std::vector<NamedFile> files;
  for (const std::string option : {"schedule", "uplink-schedule", "downlink-schedule"})
    if (const std::string path = option_text(vm, option); !path.empty())
      files.push_back({"the schedule of --" + option, path});
  return files;
}

}  // namespace

namespace tracemod {

std::unique_ptr<Tool> onoff_tool() {
  auto made = std::make_unique<Tool>("tm-onoff", "[OPTIONS] uplink|downlink MEAN_ON MEAN_OFF [-- COMMAND [ARGS...]]\n"
      "       tm-onoff [OPTIONS] --uplink-on D --uplink-off D | --schedule FILE ... [-- COMMAND [ARGS...]]",
      "Run COMMAND (default: your $SHELL) behind a link that goes off and on: exponential on and off\n"
      "times with the given means in seconds (Mahimahi's mm-onoff), other distributions, or a schedule.");
  Tool& tool = *made;
  tool.options.add_options()                                                  //
      ("direction", text_value("DIR"), "uplink or downlink (Mahimahi form)")  //
      ("mean-on", text_value("S"), "mean on time, seconds (exponential)")     //
      ("mean-off", text_value("S"), "mean off time, seconds (exponential)");
  add_per_direction(tool.options, "on", "D",
                    "on times: exp:MEAN, uniform:A:B, const:X, normal:MEAN:SD, pareto:MEAN:SHAPE", false);
  add_per_direction(tool.options, "off", "D", "off times, the same forms", false);
  add_per_direction(tool.options, "schedule", "FILE", "follow FILE: lines 'TIME off' and 'TIME on'");
  tool.options.add_options()                                                                                          //
      ("off-mode", text_value("MODE")->default_value("drop"), "drop (Mahimahi) or hold packets while off")            //
      ("hold-packets", text_value("N")->default_value("1000"), "hold at most N packets per direction (0: no limit)")  //
      ("hold-bytes", text_value("N")->default_value("1500000"), "hold at most N IP bytes per direction (0: no limit)");
  add_seed_option(tool.options, "the on and off times");
  tool.positional.add("direction", 1).add("mean-on", 1).add("mean-off", 1);
  tool.configure = configure;
  tool.files = files;
  return made;
}

}  // namespace tracemod
