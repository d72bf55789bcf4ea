// printf-style formatting onto a string, for reports and generated scripts.
#pragma once

#include <string>

namespace tracemod {

// Appends FORMAT's output (at most 511 characters) to OUT.
void append_format(std::string& out, const char* format, ...) __attribute__((format(printf, 2, 3)));

}  // namespace tracemod
