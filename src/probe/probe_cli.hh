// tm-probe's command line (Boost.Program_options): the probe itself, `server` and `distill`. Bad values throw
// UsageError naming the option.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tracemod::probe {

constexpr uint16_t kDefaultPort = 9475;

// Runs tm-probe with ARGS (without the program name); returns the exit status. Throws UsageError for bad
// usage, Error when probing cannot start.
int run_cli(const std::vector<std::string>& args);
// The usage lines, for an error message.
const char* usage();

}  // namespace tracemod::probe
