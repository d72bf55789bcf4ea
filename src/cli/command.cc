#include "cli/command.hh"

#include <iostream>

#include "config.h"
#include "util/error.hh"

namespace tracemod {

int usage_error(const std::string& name, const std::string& synopsis, const std::string& message) {
  std::cerr << name << ": " << message << "\n"
            << "usage: " << name << " " << synopsis << "\n"
            << "Try '" << name << " --help' for more information.\n";
  return 2;
}

bool answered_help_or_version(const po::variables_map& vm, const std::string& name, const std::string& synopsis,
                              const std::string& summary, const po::options_description& options) {
  if (vm.count("help"))
    std::cout << "usage: " << name << " " << synopsis << "\n" << summary << "\n\n" << options;
  else if (vm.count("version"))
    std::cout << name << " (" PACKAGE_NAME ") " PACKAGE_VERSION "\n";
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
    if (answered_help_or_version(vm, command.name, command.synopsis, command.summary, command.options)) return 0;
    command.check(vm);
  } catch (const po::error& e) {
    return usage_error(command.name, command.synopsis, e.what());
  } catch (const UsageError& e) {
    return usage_error(command.name, command.synopsis, e.what());
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
