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

// What --help and a usage error say of a tool, and the options it reads: every tool's, shell or not.
struct Usage {
  Usage() = default;
  Usage(std::string name_, std::string synopsis_, std::string summary_)
      : name(std::move(name_)), synopsis(std::move(synopsis_)), summary(std::move(summary_)) {}
  std::string name;      // "tm-graph"
  std::string synopsis;  // "LOG [LOG...] [--bin MS] ..."
  std::string summary;   // what it does, for --help
  po::options_description options{"Options"};
  po::positional_options_description positional;
};

struct Command : Usage {
  using Usage::Usage;
  po::options_description hidden;  // what the positional arguments fill, kept out of --help
  // Reads and checks the parsed options; a UsageError is bad usage (exit 2, said with the usage lines).
  std::function<void(const po::variables_map&)> check;
  // Does the tool's work and returns its exit status. A UsageError is bad input, such as a malformed file (exit 2,
  // one line naming it); any other exception a failure (exit 1, one line).
  std::function<int()> run;
};

// Parses ARGV for COMMAND, answers --help and --version, then checks and runs it; returns the exit status.
int run_command(int argc, char** argv, Command& command);

// "NAME: MESSAGE", USAGE's usage line and where to find more, on standard error; returns 2.
int usage_error(const Usage& usage, const std::string& message);

// Answers --help (usage line, summary, options) or --version if VM asks for one; returns whether it did.
bool answered_help_or_version(const po::variables_map& vm, const Usage& usage);

}  // namespace tracemod
