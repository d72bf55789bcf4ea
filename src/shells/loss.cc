// tm-loss: random loss per packet, per direction: independent, bursty (Gilbert-Elliott, netem's four-state
// chain) or by bit-error rate; what a hit costs (drop, corrupt, link-layer retries); duplication.
#include <array>
#include <memory>

#include "effects/loss_queue.hh"
#include "shells/shells.hh"
#include "shells/tool.hh"
#include "util/error.hh"

namespace {

using namespace tracemod;

// One direction as the command line describes it, checked before anything starts.
struct Direction {
  std::unique_ptr<LossModel> model;  // handed to the queue when the shell makes it
  ChannelEffects effects;
  bool given = false;  // a loss or duplication was asked for
};

// The model of DIR: the Mahimahi form ("uplink RATE") or --DIR-loss, not both.
std::string model_spec(const po::variables_map& vm, const std::string& dir) {
  const std::string positional = option_text(vm, "direction"), rate = option_text(vm, "rate"),
                    option = option_text(vm, dir + "-loss");
  if (positional != dir) return option;
  if (rate.empty()) throw UsageError("missing loss rate after '" + dir + "'");
  if (!option.empty()) throw UsageError("the " + dir + " loss rate is given twice");
  return rate;
}

Direction read_direction(const po::variables_map& vm, const std::string& dir, int index, uint64_t seed) {
  Direction d;
  const std::string spec = model_spec(vm, dir);
  const std::string option = option_text(vm, "direction") == dir ? dir + " loss rate" : "--" + dir + "-loss";
  d.model =
      make_loss_model(option, spec.empty() ? "0" : spec, RandomStream(seed, stream_id(index, StreamPurpose::kLoss)));
  if (vm.count(dir + "-error-mode")) {
    const std::string mode = "--" + dir + "-error-mode";
    d.effects.error = parse_error_mode(mode, option_text(vm, dir + "-error-mode"));
    // An error mode says what a hit costs; without a model nothing is ever hit, so it would be silently idle.
    if (spec.empty())
      throw UsageError(mode + " needs a loss model for the " + dir + " (--" + dir + "-loss MODEL, or " + dir +
                       " MODEL): without one no packet is ever hit");
  }
  if (vm.count(dir + "-duplicate"))
    d.effects.duplicate = parse_probability("--" + dir + "-duplicate", option_text(vm, dir + "-duplicate"));
  d.effects.seed = seed;
  d.effects.direction = index;
  d.given = !spec.empty() || vm.count(dir + "-duplicate");
  return d;
}

// "0.01", "gilbert:p=0.1,r=0.5,h=0,k=1,arq", for the prompt.
std::string tag(const Direction& d) {
  const std::string model = d.model->describe();
  std::string s = model.substr(0, model.find(" ("));
  if (d.effects.error.kind != ErrorMode::Kind::kDrop) s += "," + d.effects.error.describe();
  if (d.effects.duplicate > 0) s += ",dup=" + number_text(d.effects.duplicate);
  return s;
}

QueueFactory configure(const po::variables_map& vm, ShellOptions& shell) {
  const std::string positional = option_text(vm, "direction");
  if (!positional.empty() && positional != "uplink" && positional != "downlink")
    throw UsageError("invalid direction '" + positional + "': expected uplink or downlink");
  const uint64_t seed = read_seed(vm);
  auto dirs = std::make_shared<std::array<Direction, 2>>();
  (*dirs)[Ferry::kUplink] = read_direction(vm, "uplink", Ferry::kUplink, seed);
  (*dirs)[Ferry::kDownlink] = read_direction(vm, "downlink", Ferry::kDownlink, seed);
  if (!(*dirs)[0].given && !(*dirs)[1].given)
    throw UsageError("missing loss rate: give uplink|downlink RATE, or --uplink-loss/--downlink-loss");
  shell.log_lines.push_back("seed " + std::to_string(seed));
  for (int i : {0, 1}) {
    const Direction& d = (*dirs)[i];
    shell.log_lines.push_back(std::string(i == 0 ? "uplink" : "downlink") + ": loss " + d.model->describe() +
                              ", error mode " + d.effects.error.describe() + ", duplicate " +
                              number_text(d.effects.duplicate));
  }
  shell.prompt_tag = "[loss up=" + tag((*dirs)[0]) + " down=" + tag((*dirs)[1]) + "]";
  return [dirs](Ferry::Direction which, BufferPool& pool) -> std::unique_ptr<PacketQueue> {
    Direction& d = (*dirs)[which];
    return std::make_unique<LossQueue>(std::move(d.model), d.effects, pool);
  };
}

}  // namespace

namespace tracemod {

std::unique_ptr<Tool> loss_tool() {
  auto made = std::make_unique<Tool>("tm-loss", "[OPTIONS] uplink|downlink MODEL [-- COMMAND [ARGS...]]\n       tm-loss [OPTIONS] "
      "--uplink-loss MODEL --downlink-loss MODEL [-- COMMAND [ARGS...]]",
      "Run COMMAND (default: your $SHELL) behind a link that loses packets at random in each direction.\n"
      "MODEL: a probability (0.01 or 1%), gilbert:p=P,r=R[,h=H][,k=K], markov4:p13=P[,p31=,p32=,p23=,p14=],\n"
      "or ber:B (see man tm-loss).");
  Tool& tool = *made;
  tool.options.add_options()                                                              //
      ("direction", text_value("DIR"), "uplink or downlink (Mahimahi form, with MODEL)")  //
      ("rate", text_value("MODEL"), "loss model for that direction");
  add_per_direction(tool.options, "loss", "MODEL", "loss model", false);
  add_per_direction(tool.options, "error-mode", "MODE",
                    "what a hit packet meets: drop, corrupt or arq:delay=MS,retries=N", false);
  add_per_direction(tool.options, "duplicate", "P", "probability of an extra copy of a delivered packet", false);
  add_seed_option(tool.options, "every random choice");
  tool.positional.add("direction", 1).add("rate", 1);
  tool.configure = configure;
  return made;
}

}  // namespace tracemod
