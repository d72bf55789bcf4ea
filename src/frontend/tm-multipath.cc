// tm-multipath: the command gets one interface per path (path1, path2...), each path its own link (trace or rate,
// queue, log per direction), delay, loss and address; MPTCP runs across them with no setup by the user.
#include <string>
#include <vector>

#include "shells/tool.hh"
#include "link/link_cli.hh"
#include "multipath/multipath_cli.hh"
#include "shell/mptcp.hh"
#include "util/error.hh"

namespace {

using namespace tracemod;

std::vector<QueueFactory> configure(const po::variables_map& vm, ShellOptions& shell) {
  MultipathOptions o;
  if (vm.count("path")) o.specs = vm["path"].as<std::vector<std::string>>();
  if (o.specs.empty()) throw UsageError("give each path with --path SPEC (e.g. --path rate=10mbit,delay=20)");
  // Each path is an IPv4 and an IPv6 endpoint, and the kernel holds 8 endpoints (MPTCP_PM_ADDR_MAX).
  constexpr size_t kMaxPaths = MptcpPathManager::kMaxLimit / 2;
  if (o.specs.size() > kMaxPaths)
    throw UsageError("at most " + std::to_string(kMaxPaths) + " paths (MPTCP's 8 endpoints, two per path)");
  for (const char* pcap : {"pcap", "uplink-pcap", "downlink-pcap"})
    if (vm.count(pcap))
      throw UsageError(std::string("--") + pcap + ": not available with several paths; use --path up-log=FILE");
  shell.multipath = true;
  if (const std::string n = option_text(vm, "default-path"); !n.empty())
    shell.default_path = parse_whole_number("--default-path", n, 1, o.specs.size()) - 1;
  o.seed = read_seed(vm);
  o.once = vm.count("once") > 0;
  o.log_format = read_log_format(option_text(vm, "log-format"));
  std::vector<QueueFactory> paths = read_paths(o, shell);
  shell.log_lines.push_back("seed " + std::to_string(o.seed));
  shell.prompt_tag = "[multipath " + std::to_string(o.specs.size()) + "]";
  return paths;
}

}  // namespace

int main(int argc, char** argv) {
  Tool tool("tm-multipath", "[OPTIONS] --path SPEC [--path SPEC...] [-- COMMAND [ARGS...]]",
      "Run COMMAND (default: your $SHELL) with one interface per path, each behind its own link, delay and\n"
      "loss; MPTCP is enabled and uses every path (try: mptcpize run COMMAND).");
  tool.options.add_options()  //
      ("path", po::value<std::vector<std::string>>()->value_name("SPEC")->composing(),
       "a path, in order (path1, path2...): comma-separated trace=FILE or rate=RATE, queue=NAME[:ARG...], "
       "delay=MS, loss=MODEL (each also up-KEY= and down-KEY=), up-log=FILE, down-log=FILE, notice=DURATION (the "
       "path leaves MPTCP while its trace is off that long)")                                                         //
      ("default-path", text_value("N"), "the path unbound traffic takes (default 1)")                                 //
      ("log-format", text_value("F")->default_value("tracemod"), "tracemod (us, drop lines) or mahimahi (whole ms)")  //
      ("once", "stop at the end of a path's trace instead of looping (the command is then stopped)");
  add_seed_option(tool.options, "each path's loss and the random drops of pie and red");
  tool.configure_paths = configure;
  tool.files = [](const po::variables_map& vm) {
    return path_files(vm.count("path") ? vm["path"].as<std::vector<std::string>>() : std::vector<std::string>());
  };
  return run_tool(argc, argv, tool);
}
