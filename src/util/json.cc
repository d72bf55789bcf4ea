#include "util/json.hh"

#include <cmath>
#include <cstdio>

namespace tracemod {

std::string json_string(const std::string& text) {
  std::string out = "\"";
  for (const char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char b[8];
      std::snprintf(b, sizeof b, "\\u%04x", static_cast<unsigned>(static_cast<unsigned char>(c)));
      out += b;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string json_number(double v, bool negative_is_null) {
  if (!std::isfinite(v) || (negative_is_null && v < 0)) return "null";
  char b[32];
  std::snprintf(b, sizeof b, "%.6g", v);
  return b;
}

}  // namespace tracemod
