// tm-delay: a fixed one-way delay in each direction.
#include <cmath>
#include <sstream>

#include "frontend/tool.hh"
#include "packet/delay_queue.hh"
#include "util/error.hh"

namespace {

constexpr uint64_t kQueueMemory = 256ull << 20;  // per direction; see man/tm-delay.1

std::string ms_text(double ms) {
  std::ostringstream s;
  s << ms;
  return s.str();
}

tracemod::QueueFactory configure(const tracemod::po::variables_map& vm, tracemod::ShellOptions& shell) {
  auto get = [&](const char* name) { return vm.count(name) ? vm[name].as<std::string>() : std::string(); };
  const std::string both = get("delay"), up_text = get("uplink-delay"), down_text = get("downlink-delay");
  if (both.empty() && (up_text.empty() || down_text.empty()))
    throw tracemod::UsageError(both.empty() && up_text.empty() && down_text.empty()
                                   ? "missing delay: give MS, or both --uplink-delay and --downlink-delay"
                                   : "missing delay for the other direction: give MS or both direction options");
  const double base = both.empty() ? 0 : tracemod::parse_milliseconds("delay", both);
  const double up = up_text.empty() ? base : tracemod::parse_milliseconds("--uplink-delay", up_text);
  const double down = down_text.empty() ? base : tracemod::parse_milliseconds("--downlink-delay", down_text);
  shell.prompt_tag =
      up == down ? "[delay " + ms_text(up) + "]" : "[delay up " + ms_text(up) + " down " + ms_text(down) + "]";
  // Rounded up to whole nanoseconds: never shorter than asked.
  const tracemod::Nanos up_ns = static_cast<tracemod::Nanos>(std::ceil(up * 1e6));
  const tracemod::Nanos down_ns = static_cast<tracemod::Nanos>(std::ceil(down * 1e6));
  return [=](tracemod::Ferry::Direction d, tracemod::BufferPool&) -> std::unique_ptr<tracemod::PacketQueue> {
    return std::make_unique<tracemod::DelayQueue>(d == tracemod::Ferry::kUplink ? up_ns : down_ns, kQueueMemory);
  };
}

}  // namespace

int main(int argc, char** argv) {
  tracemod::Tool tool;
  tool.name = "tm-delay";
  tool.synopsis = "[OPTIONS] MS [-- COMMAND [ARGS...]]";
  tool.summary =
      "Run COMMAND (default: your $SHELL) behind a link that delays every packet by MS milliseconds\n"
      "in each direction (fractions allowed, e.g. 0.25).";
  tool.options.add_options()                                                                                    //
      ("delay", tracemod::po::value<std::string>()->value_name("MS"), "one-way delay in ms, both directions")   //
      ("uplink-delay", tracemod::po::value<std::string>()->value_name("MS"), "delay from the command outward")  //
      ("downlink-delay", tracemod::po::value<std::string>()->value_name("MS"), "delay toward the command");
  tool.positional.add("delay", 1);
  tool.configure = configure;
  return tracemod::run_tool(argc, argv, tool);
}
