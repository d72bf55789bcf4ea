// tm-loss: independent random loss per packet, per direction.
#include <sstream>

#include "frontend/tool.hh"
#include "packet/loss_queue.hh"
#include "util/error.hh"

namespace {

std::string text(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

tracemod::QueueFactory configure(const tracemod::po::variables_map& vm, tracemod::ShellOptions& shell) {
  auto get = [&](const char* name) { return vm.count(name) ? vm[name].as<std::string>() : std::string(); };
  double up = 0, down = 0;
  const std::string dir = get("direction"), rate = get("rate");
  if (!dir.empty()) {
    if (rate.empty()) throw tracemod::UsageError("missing loss rate after '" + dir + "'");
    if (dir == "uplink")
      up = tracemod::parse_probability("uplink loss rate", rate);
    else if (dir == "downlink")
      down = tracemod::parse_probability("downlink loss rate", rate);
    else
      throw tracemod::UsageError("invalid direction '" + dir + "': expected uplink or downlink");
    if (vm.count(dir == "uplink" ? "uplink-loss" : "downlink-loss"))
      throw tracemod::UsageError("the " + dir + " loss rate is given twice");
  }
  if (vm.count("uplink-loss")) up = tracemod::parse_probability("--uplink-loss", get("uplink-loss"));
  if (vm.count("downlink-loss")) down = tracemod::parse_probability("--downlink-loss", get("downlink-loss"));
  if (dir.empty() && !vm.count("uplink-loss") && !vm.count("downlink-loss"))
    throw tracemod::UsageError("missing loss rate: give uplink|downlink RATE, or --uplink-loss/--downlink-loss");
  const uint64_t seed = vm.count("seed") ? tracemod::parse_seed(get("seed")) : tracemod::random_seed();
  shell.log_lines.push_back("seed " + std::to_string(seed));
  shell.prompt_tag = "[loss up=" + text(up) + " down=" + text(down) + "]";
  return [=](tracemod::Ferry::Direction d, tracemod::BufferPool& pool) -> std::unique_ptr<tracemod::PacketQueue> {
    return std::make_unique<tracemod::LossQueue>(d == tracemod::Ferry::kUplink ? up : down,
                                                 tracemod::RandomStream(seed, d), pool);
  };
}

}  // namespace

int main(int argc, char** argv) {
  tracemod::Tool tool;
  tool.name = "tm-loss";
  tool.synopsis =
      "[OPTIONS] uplink|downlink RATE [-- COMMAND [ARGS...]]\n       tm-loss [OPTIONS] "
      "--uplink-loss R --downlink-loss R [-- COMMAND [ARGS...]]";
  tool.summary =
      "Run COMMAND (default: your $SHELL) behind a link that drops each packet independently\n"
      "with the given probability (0 to 1) in each direction.";
  tool.options.add_options()  //
      ("direction", tracemod::po::value<std::string>()->value_name("DIR"),
       "uplink or downlink (Mahimahi form, with RATE)")                                                              //
      ("rate", tracemod::po::value<std::string>()->value_name("RATE"), "loss probability for that direction")        //
      ("uplink-loss", tracemod::po::value<std::string>()->value_name("R"), "loss probability outward")               //
      ("downlink-loss", tracemod::po::value<std::string>()->value_name("R"), "loss probability toward the command")  //
      ("seed", tracemod::po::value<std::string>()->value_name("N"),
       "seed of the random drops (default: random; -v shows it)");
  tool.positional.add("direction", 1).add("rate", 1);
  tool.configure = configure;
  return tracemod::run_tool(argc, argv, tool);
}
