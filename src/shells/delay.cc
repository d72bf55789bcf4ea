// tm-delay: a one-way delay in each direction, fixed or with jitter.
#include <array>
#include <cmath>
#include <memory>

#include "effects/delay_queue.hh"
#include "effects/jitter_queue.hh"
#include "shells/shells.hh"
#include "shells/tool.hh"
#include "util/error.hh"

namespace {

using namespace tracemod;

// The text of the option direction_option() named ("--uplink-jitter").
std::string value_of(const po::variables_map& vm, const std::string& option) {
  return option_text(vm, option.substr(2));
}

// One direction's jitter; no distribution means none.
struct Jitter {
  std::shared_ptr<const Distribution> distribution;
  Nanos spread = 0;  // as given, or a FILE's own standard deviation (for the prompt)
  double correlation = 0;
  bool reorder = false;
};

// A correlation of 100% would tie every sample to the first for good (netem's too: its samples stop moving), so a
// "jitter" that never varies: refused.
double read_correlation(const std::string& option, const std::string& text) {
  const double rho = parse_probability(option, text);
  if (rho >= 1)
    throw UsageError("invalid " + option + " '" + text +
                     "': must be below 100% (at 100% every sample would repeat the first one for good)");
  return rho;
}

bool is_named_distribution(const std::string& name) {
  return name == "uniform" || name == "normal" || name == "pareto" || name == "paretonormal";
}

Jitter read_jitter(const po::variables_map& vm, const std::string& dir) {
  const std::string jitter = direction_option(vm, dir, "jitter"), dist = direction_option(vm, dir, "distribution");
  const std::string corr = direction_option(vm, dir, "correlation"), reorder = direction_option(vm, dir, "reorder");
  const std::string name = dist.empty() ? "uniform" : value_of(vm, dist);
  const bool named = is_named_distribution(name);
  Jitter j;
  if (jitter.empty() && (named || dist.empty())) {  // a FILE of samples brings its own spread
    // An option for both directions is fine where the other direction has jitter (checked in configure).
    for (const std::string& o : {dist, corr, reorder})
      if (o.rfind("--" + dir, 0) == 0) throw UsageError(o + " needs --" + dir + "-jitter MS (or --jitter)");
    return j;
  }
  const Nanos ns = jitter.empty() ? 0 : parse_delay(jitter, value_of(vm, jitter));
  if (!jitter.empty() && ns == 0) return j;  // --jitter 0: a plain delay line
  j.distribution =
      std::make_shared<const Distribution>(jitter_distribution(dist.empty() ? "--distribution" : dist, name, ns));
  j.spread = ns > 0 ? ns : static_cast<Nanos>(std::llround(j.distribution->stddev()));
  if (!corr.empty()) j.correlation = read_correlation(corr, value_of(vm, corr));
  j.reorder = !reorder.empty();
  return j;
}

// Exact to the nanosecond: "2.007" is 2007000 ns, not the nearest double's rounding.
std::string tag(Nanos delay, const Jitter& j) {
  if (!j.distribution) return format_ms(delay);
  return format_ms(delay) + " jitter " + format_ms(j.spread);
}

QueueFactory configure(const po::variables_map& vm, ShellOptions& shell) {
  const std::string both = option_text(vm, "delay"), up_text = option_text(vm, "uplink-delay"),
                    down_text = option_text(vm, "downlink-delay");
  if (both.empty() && (up_text.empty() || down_text.empty()))
    throw UsageError(both.empty() && up_text.empty() && down_text.empty()
                         ? "missing delay: give MS, or both --uplink-delay and --downlink-delay"
                         : "missing delay for the other direction: give MS or both direction options");
  const Nanos base = both.empty() ? 0 : parse_delay("delay", both);
  const std::array<Nanos, 2> delay{up_text.empty() ? base : parse_delay("--uplink-delay", up_text),
                                   down_text.empty() ? base : parse_delay("--downlink-delay", down_text)};
  const std::array<Jitter, 2> jitter{read_jitter(vm, "uplink"), read_jitter(vm, "downlink")};
  if (!jitter[0].distribution && !jitter[1].distribution)
    for (const char* o : {"distribution", "correlation", "reorder"})
      if (vm.count(o)) throw UsageError(std::string("--") + o + " needs --jitter MS");
  const std::string up_tag = tag(delay[0], jitter[0]), down_tag = tag(delay[1], jitter[1]);
  shell.prompt_tag = up_tag == down_tag ? "[delay " + up_tag + "]" : "[delay up " + up_tag + " down " + down_tag + "]";
  const uint64_t seed = read_seed(vm);
  if (jitter[0].distribution || jitter[1].distribution) shell.log_lines.push_back("seed " + std::to_string(seed));
  return [=](Ferry::Direction d, BufferPool& pool) -> std::unique_ptr<PacketQueue> {
    const Jitter& j = jitter[d];
    if (!j.distribution) return std::make_unique<DelayQueue>(delay[d], kQueueMemoryLimit);
    Sampler sampler(*j.distribution, j.correlation, RandomStream(seed, stream_id(d, StreamPurpose::kJitter)));
    return std::make_unique<JitterQueue>(delay[d], std::move(sampler), j.reorder, pool, kQueueMemoryLimit);
  };
}

// The distribution files read (a name such as normal is none), so that no capture overwrites one.
std::vector<NamedFile> files(const po::variables_map& vm) {
  std::vector<NamedFile> files;
  for (const std::string option : {"distribution", "uplink-distribution", "downlink-distribution"}) {
    const std::string name = option_text(vm, option);
    if (!name.empty() && !is_named_distribution(name)) files.push_back({"the samples of --" + option, name});
  }
  return files;
}

}  // namespace

namespace tracemod {

std::unique_ptr<Tool> delay_tool() {
  auto made = std::make_unique<Tool>("tm-delay", "[OPTIONS] MS [-- COMMAND [ARGS...]]",
      "Run COMMAND (default: your $SHELL) behind a link that delays every packet by MS milliseconds\n"
      "in each direction (fractions allowed, e.g. 0.25), optionally with jitter.");
  Tool& tool = *made;
  tool.options.add_options()                                                //
      ("delay", text_value("MS"), "one-way delay in ms, both directions")   //
      ("uplink-delay", text_value("MS"), "delay from the command outward")  //
      ("downlink-delay", text_value("MS"), "delay toward the command");
  add_per_direction(tool.options, "jitter", "MS", "jitter: half-width (uniform) or standard deviation");
  add_per_direction(tool.options, "distribution", "D", "uniform (default), normal, pareto, paretonormal or FILE");
  add_per_direction(tool.options, "correlation", "PCT", "correlation of successive jitter samples (e.g. 25%)");
  add_per_direction(tool.options, "reorder", nullptr, "let jitter reorder packets (netem's behaviour)");
  add_seed_option(tool.options, "the jitter");
  tool.positional.add("delay", 1);
  tool.configure = configure;
  tool.files = files;
  return made;
}

}  // namespace tracemod
