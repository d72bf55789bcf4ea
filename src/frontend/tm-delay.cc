// tm-delay: a one-way delay in each direction, fixed or with jitter.
#include <array>
#include <cmath>
#include <memory>
#include <sstream>

#include "frontend/tool.hh"
#include "packet/delay_queue.hh"
#include "packet/jitter_queue.hh"
#include "util/error.hh"

namespace {

using namespace tracemod;

constexpr uint64_t kQueueMemory = 256ull << 20;  // per direction; see man/tm-delay.1

std::string ms_text(double ms) {
  std::ostringstream s;
  s << ms;
  return s.str();
}

std::string get(const po::variables_map& vm, const std::string& name) {
  return vm.count(name) ? vm[name].as<std::string>() : std::string();
}

// The option that sets KEY for DIR: --DIR-KEY if given, else --KEY (both directions); empty if neither.
std::string pick(const po::variables_map& vm, const std::string& dir, const std::string& key) {
  return vm.count(dir + "-" + key) ? "--" + dir + "-" + key : vm.count(key) ? "--" + key : "";
}

// One direction's jitter; no distribution means none.
struct Jitter {
  std::shared_ptr<const Distribution> distribution;
  double ms = 0;  // as given, or a FILE's own standard deviation
  double correlation = 0;
  bool reorder = false;
};

Jitter read_jitter(const po::variables_map& vm, const std::string& dir) {
  const std::string jitter = pick(vm, dir, "jitter"), dist = pick(vm, dir, "distribution");
  const std::string corr = pick(vm, dir, "correlation"), reorder = pick(vm, dir, "reorder");
  const std::string name = dist.empty() ? "uniform" : get(vm, dist.substr(2));
  const bool named = name == "uniform" || name == "normal" || name == "pareto" || name == "paretonormal";
  Jitter j;
  if (jitter.empty() && (named || dist.empty())) {  // a FILE of samples brings its own spread
    // An option for both directions is fine where the other direction has jitter (checked in configure).
    for (const std::string& o : {dist, corr, reorder})
      if (o.rfind("--" + dir, 0) == 0) throw UsageError(o + " needs --" + dir + "-jitter MS (or --jitter)");
    return j;
  }
  const double ms = jitter.empty() ? 0 : parse_milliseconds(jitter, get(vm, jitter.substr(2)));
  if (!jitter.empty() && ms == 0) return j;  // --jitter 0: a plain delay line
  const Nanos ns = static_cast<Nanos>(std::ceil(ms * 1e6));
  j.distribution =
      std::make_shared<const Distribution>(jitter_distribution(dist.empty() ? "--distribution" : dist, name, ns));
  j.ms = ms > 0 ? ms : j.distribution->stddev() / 1e6;
  if (!corr.empty()) j.correlation = parse_probability(corr, get(vm, corr.substr(2)));
  j.reorder = !reorder.empty();
  return j;
}

std::string tag(double ms, const Jitter& j) {
  if (!j.distribution) return ms_text(ms);
  return ms_text(ms) + " jitter " + ms_text(j.ms);
}

QueueFactory configure(const po::variables_map& vm, ShellOptions& shell) {
  const std::string both = get(vm, "delay"), up_text = get(vm, "uplink-delay"), down_text = get(vm, "downlink-delay");
  if (both.empty() && (up_text.empty() || down_text.empty()))
    throw UsageError(both.empty() && up_text.empty() && down_text.empty()
                         ? "missing delay: give MS, or both --uplink-delay and --downlink-delay"
                         : "missing delay for the other direction: give MS or both direction options");
  const double base = both.empty() ? 0 : parse_milliseconds("delay", both);
  const double up = up_text.empty() ? base : parse_milliseconds("--uplink-delay", up_text);
  const double down = down_text.empty() ? base : parse_milliseconds("--downlink-delay", down_text);
  const std::array<Jitter, 2> jitter{read_jitter(vm, "uplink"), read_jitter(vm, "downlink")};
  if (!jitter[0].distribution && !jitter[1].distribution)
    for (const char* o : {"distribution", "correlation", "reorder"})
      if (vm.count(o)) throw UsageError(std::string("--") + o + " needs --jitter MS");
  const std::string up_tag = tag(up, jitter[0]), down_tag = tag(down, jitter[1]);
  shell.prompt_tag = up_tag == down_tag ? "[delay " + up_tag + "]" : "[delay up " + up_tag + " down " + down_tag + "]";
  const uint64_t seed = vm.count("seed") ? parse_seed(get(vm, "seed")) : random_seed();
  if (jitter[0].distribution || jitter[1].distribution) shell.log_lines.push_back("seed " + std::to_string(seed));
  // Rounded up to whole nanoseconds: never shorter than asked.
  const std::array<Nanos, 2> delay{static_cast<Nanos>(std::ceil(up * 1e6)), static_cast<Nanos>(std::ceil(down * 1e6))};
  return [=](Ferry::Direction d, BufferPool& pool) -> std::unique_ptr<PacketQueue> {
    const Jitter& j = jitter[d];
    if (!j.distribution) return std::make_unique<DelayQueue>(delay[d], kQueueMemory);
    Sampler sampler(*j.distribution, j.correlation, RandomStream(seed, stream_id(d, StreamPurpose::kJitter)));
    return std::make_unique<JitterQueue>(delay[d], std::move(sampler), j.reorder, pool, kQueueMemory);
  };
}

// --KEY, --uplink-KEY and --downlink-KEY.
void add_per_direction(po::options_description& options, const std::string& key, const char* value_name,
                       const std::string& help) {
  for (const std::string& dir : {std::string(), std::string("uplink-"), std::string("downlink-")}) {
    const std::string what = dir.empty()        ? help + ", both directions"
                             : dir == "uplink-" ? "the same, outward only"
                                                : "the same, toward the command only";
    if (value_name)
      options.add_options()((dir + key).c_str(), po::value<std::string>()->value_name(value_name), what.c_str());
    else
      options.add_options()((dir + key).c_str(), what.c_str());
  }
}

}  // namespace

int main(int argc, char** argv) {
  Tool tool;
  tool.name = "tm-delay";
  tool.synopsis = "[OPTIONS] MS [-- COMMAND [ARGS...]]";
  tool.summary =
      "Run COMMAND (default: your $SHELL) behind a link that delays every packet by MS milliseconds\n"
      "in each direction (fractions allowed, e.g. 0.25), optionally with jitter.";
  tool.options.add_options()                                                                          //
      ("delay", po::value<std::string>()->value_name("MS"), "one-way delay in ms, both directions")   //
      ("uplink-delay", po::value<std::string>()->value_name("MS"), "delay from the command outward")  //
      ("downlink-delay", po::value<std::string>()->value_name("MS"), "delay toward the command");
  add_per_direction(tool.options, "jitter", "MS", "jitter: half-width (uniform) or standard deviation");
  add_per_direction(tool.options, "distribution", "D", "uniform (default), normal, pareto, paretonormal or FILE");
  add_per_direction(tool.options, "correlation", "PCT", "correlation of successive jitter samples (e.g. 25%)");
  add_per_direction(tool.options, "reorder", nullptr, "let jitter reorder packets (netem's behaviour)");
  tool.options.add_options()("seed", po::value<std::string>()->value_name("N"),
                             "seed of the jitter (default: random; -v shows it)");
  tool.positional.add("delay", 1);
  tool.configure = configure;
  return run_tool(argc, argv, tool);
}
