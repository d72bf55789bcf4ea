// HTTP/1.1 relayed message by message between two connections (TLS or not): each message parsed with Boost.Beast
// only for its start line, headers and framing, its bytes passed on exactly as received, in pieces as they are
// parsed; keep-alive, pipelining, chunked bodies, HEAD and 1xx responses included.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>

#include "web/writer.hh"
#include "webrecord/conn.hh"
#include "webrecord/tally.hh"

namespace tracemod::webrecord {

// What an exchange of a relayed connection becomes: RECORD gets each one whose messages are whole, TOO_LARGE
// (if set) each one passed on whole but not recorded, as a body of it (its bytes as sent, chunk framing included)
// went over MAX_BODY bytes: that exchange has its start lines and headers, and the bodies kept up to the limit.
struct Exchanges {
  uint64_t max_body;
  std::function<void(const web::RawExchange&)> record, too_large;
};

// Relays until either side ends or an exchange ends the connection. BASE holds what every exchange of the
// connection shares (address, port, scheme, protocol, the SNI name or the address as host; each request's Host
// names it if it has one); OUT.record gets each exchange once its response is complete, before the response's
// last piece goes to CLIENT. A body over the limit is relayed on to its end, unrecorded (Unrecorded::kTooLarge
// if nothing else kept the connection from being recorded whole), and the connection goes on. Returns what kept
// the connection from being recorded whole, if anything. Memory: the bodies up to OUT.max_body, and a read.
std::optional<Unrecorded> relay_http1(Conn& client, Conn& origin, const web::RawExchange& base, const Exchanges& out);

}  // namespace tracemod::webrecord
