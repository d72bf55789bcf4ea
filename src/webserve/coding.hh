// Content codings (RFC 9110 §8.4): a recorded body is served in the coding the origin sent it in when the client
// accepts that coding, else without one. HAR files hold bodies decoded, so they are encoded again to the
// recorded coding (truer to the wire: the bytes a browser fetches are then about the origin's, not 2-3 times
// more); Mahimahi's and tracemod's recordings hold them as sent, so they are decoded for a client that does not
// accept the coding. gzip and deflate with zlib, br with Brotli; zstd and others are served only as recorded.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace tracemod::webserve {

// Whether CODING ("gzip", "br", ...) can be made and undone here.
bool codable(std::string_view coding);

// BODY in CODING; nothing if CODING is not codable. Levels as common servers use them: gzip and deflate 6,
// br 5.
std::optional<std::string> encode(std::string_view coding, std::string_view body);

// BODY without CODING, at most LIMIT bytes of it; nothing if CODING is not codable or BODY is not in it.
std::optional<std::string> decode(std::string_view coding, std::string_view body, size_t limit = size_t{1} << 31);

// Whether a request's Accept-Encoding VALUE accepts CODING: named (or "*") with a q-value above 0. A request
// without the field (VALUE null: curl without --compressed) is answered without a coding, as servers do,
// though RFC 9110 would allow any; identity ("") is always accepted.
bool accepts(const std::string* value, std::string_view coding);

}  // namespace tracemod::webserve
