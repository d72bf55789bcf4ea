#include "util/json.hh"

#include <cmath>
#include <cstdio>

namespace tracemod {

namespace {

// The length of the well-formed UTF-8 sequence at TEXT[I] (RFC 3629: no overlong form, no surrogate, nothing
// past U+10FFFF), or 0 if there is none there.
size_t utf8_length(const std::string& text, size_t i) {
  const auto byte = [&](size_t k) { return i + k < text.size() ? static_cast<unsigned char>(text[i + k]) : 0u; };
  const unsigned c = byte(0);
  const auto tail = [&](size_t k) { return (byte(k) & 0xc0) == 0x80; };
  if (c >= 0xc2 && c <= 0xdf) return tail(1) ? 2 : 0;
  if (c >= 0xe0 && c <= 0xef) {
    const unsigned c1 = byte(1);
    if ((c == 0xe0 && c1 < 0xa0) || (c == 0xed && c1 > 0x9f)) return 0;
    return tail(1) && tail(2) ? 3 : 0;
  }
  if (c >= 0xf0 && c <= 0xf4) {
    const unsigned c1 = byte(1);
    if ((c == 0xf0 && c1 < 0x90) || (c == 0xf4 && c1 > 0x8f)) return 0;
    return tail(1) && tail(2) && tail(3) ? 4 : 0;
  }
  return 0;
}

}  // namespace

std::string json_string(const std::string& text) {
  std::string out = "\"";
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (static_cast<unsigned char>(c) >= 0x80) {  // UTF-8 passed through; a byte that is not, U+FFFD
      const size_t n = utf8_length(text, i);
      if (n == 0) {
        out += "\\ufffd";
      } else {
        out.append(text, i, n);
        i += n - 1;
      }
      continue;
    }
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
