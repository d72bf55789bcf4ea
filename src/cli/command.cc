#include "cli/command.hh"

#include <iostream>

#include "config.h"
#include "util/error.hh"

namespace tracemod {

int usage_error(const Usage& usage, const std::string& message) {
  std::cerr << usage.name << ": " << message << "\n"
            << "usage: " << usage.name << " " << usage.synopsis << "\n"
            << "Try '" << usage.name << " --help' for more information.\n";
  return 2;
}

bool answered_help_or_version(const po::variables_map& vm, const Usage& usage) {
  if (vm.count("help"))
    std::cout << "usage: " << usage.name << " " << usage.synopsis << "\n" << usage.summary << "\n\n" << usage.options;
  else if (vm.count("version"))
    std::cout << usage.name << " (" PACKAGE_NAME ") " PACKAGE_VERSION "\n";
  return vm.count("help") || vm.count("version");
}

int run_command(int argc, char** argv, Command& command) {
  command.options.add_options()              //
      ("help,h", "show this help and exit")  //
      ("version", "show the version and exit");
  po::options_description all;
  all.add(command.options).add(command.hidden);
  try {
    po::variables_map vm;
    po::store(po::command_line_parser(argc, argv).options(all).positional(command.positional).run(), vm);
    po::notify(vm);
    if (answered_help_or_version(vm, command)) return 0;
    command.check(vm);
  } catch (const po::error& e) {
    return usage_error(command, e.what());
  } catch (const UsageError& e) {
    return usage_error(command, e.what());
  }
  try {
    return command.run();
  } catch (const UsageError& e) {
    std::cerr << command.name << ": " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << command.name << ": " << e.what() << "\n";
    return 1;
  }
}

}  // namespace tracemod
