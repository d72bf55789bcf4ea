// tm-probe: the collection workload of trace modulation (probe), its UDP echo server, and the distillation of a
// probe record into a replay schedule for tm-modulate.
#include <iostream>

#include "probe/probe_cli.hh"
#include "util/error.hh"

int main(int argc, char** argv) {
  try {
    return tracemod::probe::run_cli(std::vector<std::string>(argv + 1, argv + argc));
  } catch (const tracemod::UsageError& e) {
    std::cerr << "tm-probe: " << e.what() << "\n"
              << tracemod::probe::usage() << "\nTry 'tm-probe --help' for more information.\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "tm-probe: " << e.what() << "\n";
    return 1;
  }
}
