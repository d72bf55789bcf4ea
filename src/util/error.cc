#include "util/error.hh"

#include <cerrno>
#include <cstring>

namespace tracemod {

void throw_errno(const std::string& what, int err) {
  throw Error(what + ": " + std::strerror(err));
}

std::string quote_text(std::string_view text, size_t max) {
  static const char hex[] = "0123456789abcdef";
  std::string out = "'";
  for (size_t i = 0; i < text.size() && i < max; ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out + (text.size() > max ? "...'" : "'");
}

long check_syscall(const std::string& what, long ret) {
  if (ret < 0) throw_errno(what, errno);
  return ret;
}

}  // namespace tracemod
