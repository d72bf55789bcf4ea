// What every tool shares: option parsing (Boost.Program_options), --help/--version/-v, the command after
// `--`, error reporting and exit statuses. A tool's main only describes its own options and queues.
#pragma once

#include <boost/program_options.hpp>
#include <functional>
#include <string>

#include "shell/shell_runner.hh"
#include "util/parse.hh"  // the value parsers every tool uses

namespace tracemod {

namespace po = boost::program_options;

struct Tool {
  std::string name;      // "tm-delay"
  std::string synopsis;  // "[OPTIONS] MS [-- COMMAND [ARGS...]]"
  std::string summary;   // one line for --help
  po::options_description options{"Options"};
  po::positional_options_description positional;
  // Checks the parsed values and returns the queue factory; fills the prompt tag and log lines.
  // Throws UsageError naming the bad option.
  std::function<QueueFactory(const po::variables_map&, ShellOptions&)> configure;
};

// Parses ARGV, runs the shell, and returns the process exit status: the command's, or 2 for bad usage and
// 1 when the shell cannot be set up.
int run_tool(int argc, char** argv, Tool& tool);

}  // namespace tracemod
