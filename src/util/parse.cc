#include "util/parse.hh"

#include <cmath>
#include <stdexcept>

namespace tracemod {

bool parse_double(const std::string& text, double& out) {
  size_t used = 0;
  double v;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {  // not a number, or out of range
    return false;
  }
  if (used != text.size() || !std::isfinite(v)) return false;
  out = v;
  return true;
}

}  // namespace tracemod
