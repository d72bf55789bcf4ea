// HTTP/2 relayed stream by stream between two TLS connections that both chose h2: an nghttp2 server session
// facing the client, a client session facing the origin, each request submitted to the origin as the client sent
// it and each response to the client as the origin sent it (DATA as it arrives, flow control by nghttp2).
#pragma once

#include <openssl/ssl.h>

#include <functional>
#include <optional>

#include "web/writer.hh"
#include "webrecord/http1_relay.hh"  // Exchanges
#include "webrecord/tally.hh"

namespace tracemod::webrecord {

// Relays until either side ends (blocking: it runs on the connection's own thread). BASE holds what every
// exchange of the connection shares (address, port, scheme, protocol, the SNI name as host); OUT.record gets each
// exchange once its response has ended, in HTTP/1.1's syntax (docs/web-recording.md), OUT.too_large each one
// relayed whole whose request or response body went over OUT.max_body (http1_relay.hh). Returns what kept the
// connection from being recorded whole: bytes nghttp2 refused (kMalformed), a stream left without its whole
// response (kCutShort), a body over the limit (kTooLarge); nothing if every stream was recorded.
std::optional<Unrecorded> relay_http2(SSL* client, SSL* origin, const web::RawExchange& base, const Exchanges& out);

}  // namespace tracemod::webrecord
