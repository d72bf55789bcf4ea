// What every reader does to a recorded response before anything serves it, so that no recording, whoever wrote
// it, can put on the wire what HTTP forbids there. HAR writers join repeated fields with "\n" (chrome-har,
// chrome-har-capturer), WebPageTest takes the second line of a multi-line Set-Cookie for a field of its own, cut at
// the colon in its Expires ("WMF-Last-Access=...; Expires=Wed, 30 Sep 2015 12" and "00:00 GMT"), and a recorded
// value may hold "\r\n" (written raw into an HTTP/1.1 response, that is response splitting; over HTTP/2, nghttp2
// sends it and the browser resets the stream).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "web/recording.hh"

namespace tracemod::web {

// RESPONSE's headers made fit for the wire, counted in NOTES: values split at line breaks into one field each
// (split), a field cut at the wrong colon mended (repaired), fields whose name is no token or whose value holds a
// control byte other than a tab dropped (dropped); the value's surrounding whitespace trimmed. Then the fields a
// server frames itself (Content-Length, Transfer-Encoding, Connection, Keep-Alive, Proxy-Connection, Upgrade, TE,
// and pseudo-headers) go, uncounted, and Content-Encoding moves to RESPONSE.coding (lower case).
void fit_for_wire(Response& response, ReadNotes& notes);

// A field name as HTTP allows it: one or more token characters (RFC 9110 §5.6.2).
bool is_token(std::string_view name);

// TEXT as an address a replay can serve at (in canonical text form, IPv6 without brackets), or "" if it is none:
// not an IP address, or loopback, unspecified, multicast, broadcast or link-local.
std::string servable_address(std::string_view text);

// Whether TEXT is an IPv4 or IPv6 address (without brackets).
bool is_ip_address(std::string_view text);

// Whether NAME is a host name a client can ask for: 1 to 253 characters, labels of 1 to 63, no space or
// control byte, or an IP literal.
bool requestable_host(std::string_view name);

}  // namespace tracemod::web
