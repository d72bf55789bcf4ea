// A recording's dates moved to the replay's time, as Web Page Replay and mitmproxy do: Date is now, and Expires,
// Last-Modified and a cookie's Expires keep their distance from the recorded Date (so what was fresh for an hour
// when recorded is fresh for an hour now, and a revisit finds its cache warm, not expired years ago).
#pragma once

#include <cstdint>
#include <vector>

#include "web/recording.hh"

namespace tracemod::webserve {

// HEADERS' Date set to NOW_S (seconds since the epoch; added if missing); if RECORDED_MS (when the exchange was
// recorded, -1: unknown) is known, every Expires, Last-Modified and Set-Cookie Expires attribute that is a date
// moved by NOW_S - RECORDED_MS. What is no date ("Expires: 0") is left as it is.
void refresh_dates(std::vector<web::Header>& headers, int64_t recorded_ms, int64_t now_s);

}  // namespace tracemod::webserve
