#include "web/http_date.hh"

#include <cctype>
#include <ctime>

namespace tracemod::web {
namespace {

// Days from 1970-01-01 to Y-M-D in the proleptic Gregorian calendar (Howard Hinnant's days_from_civil).
int64_t days_from_civil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const auto yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<int64_t>(doe) - 719468;
}

bool delimiter(unsigned char c) {
  return c == 0x09 || (c >= 0x20 && c <= 0x2f) || (c >= 0x3b && c <= 0x40) || (c >= 0x5b && c <= 0x60) ||
         (c >= 0x7b && c <= 0x7e);
}

// Leading digits of TOKEN, MIN to MAX of them; -1 if there are fewer or more.
int leading_number(std::string_view token, size_t min, size_t max, size_t* used = nullptr) {
  size_t n = 0;
  int value = 0;
  while (n < token.size() && std::isdigit(static_cast<unsigned char>(token[n])) && n < max + 1)
    value = value * 10 + (token[n++] - '0');
  if (n < min || n > max) return -1;
  if (used) *used = n;
  return value;
}

bool parse_time(std::string_view token, int& h, int& m, int& s) {
  size_t used = 0;
  if ((h = leading_number(token, 1, 2, &used)) < 0 || used >= token.size() || token[used] != ':') return false;
  token.remove_prefix(used + 1);
  if ((m = leading_number(token, 1, 2, &used)) < 0 || used >= token.size() || token[used] != ':') return false;
  token.remove_prefix(used + 1);
  return (s = leading_number(token, 1, 2)) >= 0;
}

int month_of(std::string_view token) {
  static const char* kMonths[] = {"jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"};
  if (token.size() < 3) return 0;
  for (int i = 0; i < 12; ++i) {
    bool same = true;
    for (int j = 0; j < 3; ++j)
      same = same && std::tolower(static_cast<unsigned char>(token[static_cast<size_t>(j)])) == kMonths[i][j];
    if (same) return i + 1;
  }
  return 0;
}

}  // namespace

std::optional<int64_t> parse_http_date(std::string_view text) {
  bool have_time = false, have_day = false, have_month = false, have_year = false;
  int h = 0, mi = 0, s = 0, day = 0, month = 0, year = 0;
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && delimiter(static_cast<unsigned char>(text[i]))) ++i;
    size_t j = i;
    while (j < text.size() && !delimiter(static_cast<unsigned char>(text[j]))) ++j;
    const std::string_view token = text.substr(i, j - i);
    i = j;
    if (token.empty()) continue;
    int value;
    if (!have_time && parse_time(token, h, mi, s)) {
      have_time = true;
    } else if (!have_day && (value = leading_number(token, 1, 2)) >= 0) {
      have_day = true, day = value;
    } else if (!have_month && (value = month_of(token)) > 0) {
      have_month = true, month = value;
    } else if (!have_year && (value = leading_number(token, 2, 4)) >= 0) {
      have_year = true, year = value;
    }
  }
  if (year >= 70 && year <= 99) year += 1900;
  if (year >= 0 && year <= 69) year += 2000;
  if (!(have_time && have_day && have_month && have_year) || day < 1 || day > 31 || year < 1601 || h > 23 || mi > 59 ||
      s > 59)
    return std::nullopt;
  return days_from_civil(year, static_cast<unsigned>(month), static_cast<unsigned>(day)) * 86400 + h * 3600 + mi * 60 +
         s;
}

std::string format_http_date(int64_t seconds) {
  static const char* kDays[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
  static const char* kMonths[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  const auto t = static_cast<time_t>(seconds);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char out[40];
  std::snprintf(out, sizeof out, "%s, %02d %s %04d %02d:%02d:%02d GMT", kDays[tm.tm_wday], tm.tm_mday,
                kMonths[tm.tm_mon], tm.tm_year + 1900, tm.tm_hour, tm.tm_min, tm.tm_sec);
  return out;
}

std::optional<int64_t> parse_iso8601_ms(std::string_view text) {
  int y, mo, d, h, mi, s;
  const std::string t(text.substr(0, 63));
  int used = 0;
  if (std::sscanf(t.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%n", &y, &mo, &d, &h, &mi, &s, &used) != 6) return std::nullopt;
  if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || s > 60) return std::nullopt;
  int64_t ms =
      (days_from_civil(y, static_cast<unsigned>(mo), static_cast<unsigned>(d)) * 86400 + h * 3600 + mi * 60 + s) * 1000;
  std::string_view rest = std::string_view(t).substr(static_cast<size_t>(used));
  if (!rest.empty() && rest[0] == '.') {  // a fraction: its first three digits are milliseconds
    size_t n = 1;
    int64_t scale = 100;
    for (; n < rest.size() && std::isdigit(static_cast<unsigned char>(rest[n])); ++n, scale /= 10)
      ms += (rest[n] - '0') * scale;
    rest.remove_prefix(n);
  }
  if (rest == "Z" || rest.empty()) return ms;
  int oh = 0, om = 0;
  if ((rest[0] == '+' || rest[0] == '-') &&
      std::sscanf(std::string(rest.substr(1)).c_str(), "%2d:%2d", &oh, &om) == 2) {
    const int64_t offset = (oh * 60 + om) * 60000;
    return rest[0] == '+' ? ms - offset : ms + offset;
  }
  return std::nullopt;
}

}  // namespace tracemod::web
