// What every tool shares: option parsing (Boost.Program_options), --help/--version/-v, the command after
// `--`, error reporting and exit statuses. A tool's main only describes its own options and queues.
#pragma once

#include <boost/program_options.hpp>
#include <functional>
#include <string>
#include <vector>

#include "cli/command.hh"  // usage_error, answered_help_or_version
#include "shell/shell_runner.hh"
#include "util/file_descriptor.hh"  // NamedFile
#include "util/parse.hh"            // the value parsers every tool uses

namespace tracemod {

namespace po = boost::program_options;

// A shell: its usage ({"tm-delay", "[OPTIONS] MS [-- COMMAND [ARGS...]]", "what it does"}), its options, and
// what makes its queues.
struct Tool : Usage {
  using Usage::Usage;
  // Checks the parsed values and returns the queue factory; fills the prompt tag and log lines.
  // Throws UsageError naming the bad option.
  std::function<QueueFactory(const po::variables_map&, ShellOptions&)> configure;
  // Instead of configure, for a shell with several paths (tm-multipath): a factory per path.
  std::function<std::vector<QueueFactory>(const po::variables_map&, ShellOptions&)> configure_paths;
  // The files the command line names, inputs and outputs (traces, schedules, logs), if any: checked with the
  // captures' (check_outputs) before configure opens any of them.
  std::function<std::vector<NamedFile>(const po::variables_map&)> files;
};

// Parses ARGV, runs the shell, and returns the process exit status: the command's, or 2 for bad usage and
// 1 when the shell cannot be set up.
int run_tool(int argc, char** argv, Tool& tool);

// What run_tool does before the shell runs, for a shell fusing another (fusion.hh): TOOL with the options every
// shell shares; ARGV (with the tool's name first) read into VM and SHELL's command, names and flags; then the
// shared options checked and TOOL's queues configured, its files opened. Throw as run_tool reports.
Tool& with_common_options(Tool& tool);
void read_command_line(const Tool& tool, const std::vector<std::string>& argv, po::variables_map& vm,
                       ShellOptions& shell);
std::vector<QueueFactory> configure_shell(const Tool& tool, const po::variables_map& vm, ShellOptions& shell);


// What the tools' configure functions share.

// An option that takes text, called VALUE_NAME in --help.
po::typed_value<std::string>* text_value(const char* value_name);
// The text given for option NAME, or "" if it was not given.
std::string option_text(const po::variables_map& vm, const std::string& name);
// --seed N if given (a UsageError if bad), else a random seed: every random choice of a shell derives from it.
uint64_t read_seed(const po::variables_map& vm);
// Declares the --seed that read_seed reads; WHAT says what it seeds ("the jitter").
void add_seed_option(po::options_description& options, const std::string& what);
// PATH made absolute, for a program started elsewhere; UsageError naming NAMED for '' or a current directory that
// is gone (what std::filesystem::absolute would throw).
std::string absolute_path(const std::string& named, const std::string& path);

// The path of helper program NAME (libexec/, e.g. "webreplay-server"): beside the tools as the build tree and
// the tests' staged copies have it (BINDIR/../libexec/NAME), else where `make install` put it
// ($(pkglibexecdir)/NAME). Throws Error naming both places if it is in neither.
std::string helper_program(const std::string& name);
// V as the prompt and log lines show numbers: what operator<< writes ("0.25", "1e-06").
std::string number_text(double v);
// The option that sets KEY for direction DIR ("uplink"): "--DIR-KEY" if given, else "--KEY" (both directions)
// if given, else "".
std::string direction_option(const po::variables_map& vm, const std::string& dir, const std::string& key);
// Declares --uplink-KEY and --downlink-KEY, and with BOTH also --KEY for both directions; each takes text called
// VALUE_NAME in --help, or nothing if VALUE_NAME is null (a flag). HELP says what the option sets.
void add_per_direction(po::options_description& options, const std::string& key, const char* value_name,
                       const std::string& help, bool both = true);

}  // namespace tracemod
