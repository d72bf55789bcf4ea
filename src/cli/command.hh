// A tool's command line answered as every tracemod tool answers it: --help and --version, and a bad option or
// value said in one line with the usage lines after it (exit 2). The shells' run_tool (frontend/tool.cc) answers
// through these too; the tools that are not shells (tm-graph, tm-top) run through run_command, which links none of
// the shell's code into them.
#pragma once

#include <boost/program_options.hpp>
#include <functional>
#include <string>

namespace tracemod {

namespace po = boost::program_options;

struct Command {
  std::string name;      // "tm-graph"
  std::string synopsis;  // "LOG [LOG...] [--bin MS] ..."
  std::string summary;   // what it does, for --help
  po::options_description options{"Options"};
  po::options_description hidden;  // what the positional arguments fill, kept out of --help
  po::positional_options_description positional;
  // Reads and checks the parsed options; a UsageError is bad usage (exit 2, said with the usage lines).
  std::function<void(const po::variables_map&)> check;
  // Does the tool's work and returns its exit status. A UsageError is bad input, such as a malformed file (exit 2,
  // one line naming it); any other exception a failure (exit 1, one line).
  std::function<int()> run;
};

// Parses ARGV for COMMAND, answers --help and --version, then checks and runs it; returns the exit status.
int run_command(int argc, char** argv, Command& command);

// "NAME: MESSAGE", the usage line and where to find more, on standard error; returns 2.
int usage_error(const std::string& name, const std::string& synopsis, const std::string& message);

// Answers --help (usage, SUMMARY, OPTIONS) or --version if VM asks for one; returns whether it did.
bool answered_help_or_version(const po::variables_map& vm, const std::string& name, const std::string& synopsis,
                              const std::string& summary, const po::options_description& options);

}  // namespace tracemod
