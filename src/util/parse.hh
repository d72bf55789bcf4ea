// Numbers typed on a command line: the whole text must be the number.
#pragma once

#include <string>

namespace tracemod {

// TEXT as a finite decimal number (std::stod's syntax), with nothing after it; false if it is not one.
bool parse_double(const std::string& text, double& out);

}  // namespace tracemod
