#include "webserve/dates.hh"

#include <algorithm>
#include <cctype>

#include "web/http_date.hh"
#include "web/recording.hh"

namespace tracemod::webserve {
namespace {

// VALUE's date moved by SHIFT seconds; VALUE as it is if it holds no date.
std::string shifted(const std::string& value, int64_t shift) {
  const auto t = web::parse_http_date(value);
  return t ? web::format_http_date(*t + shift) : value;
}

// The Expires attribute of a Set-Cookie VALUE moved by SHIFT seconds.
std::string shifted_cookie(const std::string& value, int64_t shift) {
  std::string lower(value);
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  for (size_t at = lower.find(';'); at != std::string::npos; at = lower.find(';', at + 1)) {
    size_t name = at + 1;
    while (name < lower.size() && (lower[name] == ' ' || lower[name] == '\t')) ++name;
    if (lower.compare(name, 8, "expires=") != 0) continue;
    const size_t start = name + 8, end = std::min(lower.find(';', start), value.size());
    const auto t = web::parse_http_date(std::string_view(value).substr(start, end - start));
    if (!t) return value;
    return value.substr(0, start) + web::format_http_date(*t + shift) + value.substr(end);
  }
  return value;
}

}  // namespace

void refresh_dates(std::vector<web::Header>& headers, int64_t recorded_ms, int64_t now_s) {
  const int64_t shift = recorded_ms < 0 ? 0 : now_s - recorded_ms / 1000;
  bool dated = false;
  for (web::Header& h : headers) {
    if (web::iequals(h.name, "Date")) {
      h.value = web::format_http_date(now_s);
      dated = true;
    } else if (recorded_ms >= 0 && (web::iequals(h.name, "Expires") || web::iequals(h.name, "Last-Modified"))) {
      h.value = shifted(h.value, shift);
    } else if (recorded_ms >= 0 && web::iequals(h.name, "Set-Cookie")) {
      h.value = shifted_cookie(h.value, shift);
    }
  }
  if (!dated) headers.push_back({"Date", web::format_http_date(now_s)});
}

}  // namespace tracemod::webserve
