#include "web/url.hh"

#include <algorithm>

namespace tracemod::web {
namespace {

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool unreserved(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
         c == '_' || c == '~';
}

// Calls EACH with every piece of TEXT between separators SEP.
template <class Each>
void split(std::string_view text, char sep, Each each) {
  for (size_t start = 0;;) {
    const size_t end = text.find(sep, start);
    each(text.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start));
    if (end == std::string_view::npos) return;
    start = end + 1;
  }
}

}  // namespace

std::string canonical_part(std::string_view part) {
  static const char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(part.size());
  for (size_t i = 0; i < part.size(); ++i) {
    auto c = static_cast<unsigned char>(part[i]);
    if (c == '%' && i + 2 < part.size() && hex_value(part[i + 1]) >= 0 && hex_value(part[i + 2]) >= 0) {
      c = static_cast<unsigned char>(hex_value(part[i + 1]) * 16 + hex_value(part[i + 2]));
      i += 2;
    }
    if (unreserved(c)) {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

Target canonical_target(std::string_view target) {
  Target t;
  const size_t query = target.find('?');
  const std::string_view path = target.substr(0, query);
  bool first = true;
  split(path, '/', [&](std::string_view segment) {
    if (!first) t.path.push_back('/');
    first = false;
    t.path += canonical_part(segment);
  });
  if (query == std::string_view::npos) return t;
  split(target.substr(query + 1), '&', [&](std::string_view pair) {
    if (pair.empty()) return;  // "a&&b", a trailing "&"
    const size_t eq = pair.find('=');
    t.params.emplace_back(canonical_part(pair.substr(0, eq)),
                          eq == std::string_view::npos ? std::string() : canonical_part(pair.substr(eq + 1)));
  });
  return t;
}

std::vector<Param> sorted(std::vector<Param> params) {
  std::sort(params.begin(), params.end());
  return params;
}

size_t common_params(const std::vector<Param>& a, const std::vector<Param>& b) {
  size_t n = 0;
  for (auto i = a.begin(), j = b.begin(); i != a.end() && j != b.end();) {
    if (*i < *j) {
      ++i;
    } else if (*j < *i) {
      ++j;
    } else {
      ++n, ++i, ++j;
    }
  }
  return n;
}

size_t common_names(const std::vector<Param>& a, const std::vector<Param>& b) {
  size_t n = 0;
  for (auto i = a.begin(), j = b.begin(); i != a.end() && j != b.end();) {
    if (i->first < j->first) {
      ++i;
    } else if (j->first < i->first) {
      ++j;
    } else {
      ++n, ++i, ++j;
    }
  }
  return n;
}

std::string target_text(const Target& t) {
  std::string out = t.path;
  for (size_t i = 0; i < t.params.size(); ++i)
    out.append(i == 0 ? "?" : "&").append(t.params[i].first).append("=").append(t.params[i].second);
  return out;
}

}  // namespace tracemod::web
