#include "analysis/text.hh"

#include <cstdarg>
#include <cstdio>

namespace tracemod {

void append_format(std::string& out, const char* format, ...) {
  char text[512];
  va_list args;
  va_start(args, format);
  const int n = std::vsnprintf(text, sizeof text, format, args);
  va_end(args);
  if (n > 0) out.append(text, static_cast<size_t>(n) < sizeof text ? static_cast<size_t>(n) : sizeof text - 1);
}

}  // namespace tracemod
