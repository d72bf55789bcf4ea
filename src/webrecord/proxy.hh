// tm-webrecord's recorder: the shell's outside program in P. TCP the shell redirected from the link, to any
// port but DNS's, arrives here; the recorder reads where it was going (SO_ORIGINAL_DST), connects there itself,
// and relays as the connection's first bytes say (webrecord/opening.hh): HTTP/1.1 message by message, plain
// or over TLS (terminated with a leaf from the recording's CA for the name the client asked for, after the
// origin's own handshake chose the protocol), HTTP/2 stream by stream where the origin chose h2
// (webrecord/http2_relay.hh), writing every completed exchange to the recording (web/writer.hh); anything
// else byte for byte, unrecorded (webrecord/opaque.hh).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tracemod::webrecord {

// Where the shell redirects to, on its link's outer addresses.
constexpr uint16_t kProxyPort = 8479;

// --max-body's default: a body larger (a video, a disk image) is relayed whole but not recorded, and said; the
// recorder holds a body whole in memory until its record is written.
constexpr uint64_t kDefaultMaxBody = uint64_t{256} << 20;

struct ProxyConfig {
  std::string dir;                      // the recording: its CA (ca.pem, ca.key) and the records
  std::vector<std::string> addresses;   // to listen on, at kProxyPort
  std::string upstream_ca;              // a CA file the origins' certificates are checked against ("": the system's)
  bool insecure_upstream = false;       // origins' certificates not checked at all
  bool verbose = false;                 // one line per exchange recorded
  uint64_t max_body = kDefaultMaxBody;  // a request's or response's body as sent, bytes: over it, not recorded
};

// Throws Error unless FILE holds at least one CA certificate OpenSSL can read.
void check_upstream_ca(const std::string& file);

// Listens, then relays and records until SIGTERM (or SIGINT, SIGHUP), when it says in one line what it
// recorded and what it could not (tally.hh) and exits: 1 if a record could not be written, else 0. Throws Error
// if the CA or a socket cannot be had.
[[noreturn]] void run_proxy(const ProxyConfig& config);

}  // namespace tracemod::webrecord
