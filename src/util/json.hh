// Writing JSON (tm-graph --json, tm-top --json and its web page): the one string escape they share. Nothing
// here parses JSON.
#pragma once

#include <string>

namespace tracemod {

// TEXT as a JSON string literal, quotes included (control characters escaped, UTF-8 passed through, each byte
// that is not well-formed UTF-8 as U+FFFD: the text may come from a file or a page no tracemod tool wrote).
std::string json_string(const std::string& text);

// V as a JSON number, or null if V is not finite (or, with NEGATIVE_IS_NULL, below 0: "none").
std::string json_number(double v, bool negative_is_null = false);

}  // namespace tracemod
