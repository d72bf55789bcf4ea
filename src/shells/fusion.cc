#include "shells/fusion.hh"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "shells/shells.hh"

namespace tracemod {
namespace {

namespace fs = std::filesystem;

// The options that need the level's own link: a capture point, a far side, a live line on the terminal of its
// own, an end (--once) that stops its command, and the outermost shell's ways to the host.
bool options_allow(const po::variables_map& vm) {
  for (const char* o : {"no-fuse", "help", "version", "pcap", "uplink-pcap", "downlink-pcap", "outside", "meter",
                        "once", "isolated", "pasta", "forwarding"})
    if (vm.count(o)) return false;
  return true;
}

bool shell_allows(const ShellOptions& o) {
  return !o.capture && o.outside.command.empty() && !o.multipath && o.far_addresses.empty() && o.environment.empty() &&
         o.fused.empty();
}

bool fusion_turned_off() {
  const char* v = getenv("TM_NO_FUSE");
  return v && *v && std::string(v) != "0";
}

// The program NAME runs (PATH searched as execvp does), or "" if none.
fs::path program_path(const std::string& name) {
  std::error_code ec;
  if (name.find('/') != std::string::npos) return fs::canonical(name, ec);
  const char* path = getenv("PATH");
  std::string dirs = path ? path : "/usr/local/bin:/usr/bin:/bin";
  for (size_t at = 0; at <= dirs.size();) {
    const size_t end = std::min(dirs.find(':', at), dirs.size());
    const fs::path candidate = fs::path(end > at ? dirs.substr(at, end - at) : ".") / name;
    if (::access(candidate.c_str(), X_OK) == 0) return fs::canonical(candidate, ec);
    at = end + 1;
  }
  return {};
}

// The tracemod shell COMMAND starts: one of ours, beside this program (a copy of the same name elsewhere may be
// another version, or not ours), or null.
std::unique_ptr<Tool> shell_started_by(const std::vector<std::string>& command) {
  if (command.empty()) return nullptr;
  std::error_code ec;
  const fs::path self = fs::canonical("/proc/self/exe", ec), program = program_path(command[0]);
  if (ec || program.empty() || program.parent_path() != self.parent_path()) return nullptr;
  return fusable_tool(program.filename().string());
}

// COMMAND's shell read and configured here, if it can fuse; false if not (whatever its configuring opened is
// closed again, and its own process, unfused, opens it anew).
bool read_level(const std::vector<std::string>& command, FusedLevel& level) {
  std::unique_ptr<Tool> tool = shell_started_by(command);
  if (!tool) return false;
  try {
    po::variables_map vm;
    read_command_line(with_common_options(*tool), command, vm, level.options);
    if (!options_allow(vm)) return false;
    std::vector<QueueFactory> queues = configure_shell(*tool, vm, level.options);
    if (queues.size() != 1 || !shell_allows(level.options)) return false;
    level.make_queue = queues.front();
    for (const auto& log : level.options.logs) log->set_speaker(level.options.tool);
    return true;
  } catch (const std::exception&) {
    return false;  // its own process, unfused, says what is wrong with its command line
  }
}

}  // namespace

std::vector<FusedLevel> fuse_command(const ShellOptions& shell, const po::variables_map& vm) {
  std::vector<FusedLevel> levels;
  if (fusion_turned_off() || vm.count("no-fuse") || !shell_allows(shell)) return levels;
  const std::vector<std::string>* command = &shell.command;
  for (FusedLevel level; read_level(*command, level); level = FusedLevel{}) {
    levels.push_back(std::move(level));
    command = &levels.back().options.command;
  }
  return levels;
}

}  // namespace tracemod
