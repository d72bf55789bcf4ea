// Dates in HTTP fields (Date, Expires, Last-Modified, a cookie's Expires) and in HAR files, to the second or the
// millisecond since the epoch, UTC.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace tracemod::web {

// TEXT read by RFC 6265's date algorithm (§5.1.1), which reads every form servers send: IMF-fixdate ("Sun, 06
// Nov 1994 08:49:37 GMT"), RFC 850 ("Sunday, 06-Nov-94 08:49:37 GMT"), asctime ("Sun Nov  6 08:49:37 1994") and
// cookie dates with dashes. Seconds since the epoch; nothing for what is no date ("0", "-1").
std::optional<int64_t> parse_http_date(std::string_view text);

// SECONDS as IMF-fixdate: "Sun, 06 Nov 1994 08:49:37 GMT".
std::string format_http_date(int64_t seconds);

// A HAR startedDateTime (ISO 8601: "2023-03-15T10:20:30.123Z", "2023-03-15T11:20:30.123+01:00") in ms since
// the epoch; nothing if it is not one.
std::optional<int64_t> parse_iso8601_ms(std::string_view text);

}  // namespace tracemod::web
