// The replay server: every origin of a recording listens at its recorded address and port and answers each
// request with the exchange the matcher picks. HTTPS origins speak TLS (a certificate per SNI name from the
// recording's CA) with HTTP/2 or HTTP/1.1 by ALPN, as each name was recorded; HTTP origins speak HTTP/1.1. An
// address recorded only over http also listens for https on 443, and the reverse (an upgraded request is
// answered from the other scheme's recording: web/matcher.hh).
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <cstdint>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "certs/certs.hh"
#include "web/matcher.hh"
#include "web/recording.hh"
#include "webserve/bodies.hh"

namespace tracemod::webserve {

struct TlsContext;

struct ServerOptions {
  bool keep_dates = false;  // serve Date, Expires, Last-Modified and cookie expiry as recorded
  bool strict = false;      // no listener for the other scheme (the matcher is strict too)
};

// What a replay answers a request with: the response header as it goes on the wire (the session adds the
// framing: Content-Length), and the body to send.
struct Served {
  int status = 0;
  std::vector<web::Header> headers;
  const std::string* body = nullptr;  // never null; empty where the status or HEAD has none
  bool bodiless = false;              // no body and no Content-Length (1xx, 204, 304)
};

class ReplayServer {
 public:
  // Keeps references to all of them: they must outlive the server. LOG gets one line per request not answered
  // from the recording.
  ReplayServer(boost::asio::io_context& io, const web::Matcher& matcher, Bodies& bodies, certs::CertificateAuthority& ca,
               std::ostream& log, ServerOptions options = {});
  ~ReplayServer();

  // Binds and listens on every origin's address and port; throws Error naming the one that fails.
  void listen();
  size_t origin_count() const { return acceptors_.size(); }

  // With it on, the server keeps each request's service time (from the request's last byte read to the
  // response's last byte written to the socket), for benchmarks.
  void keep_service_times(bool on) { keep_times_ = on; }
  const std::vector<int64_t>& service_times_ns() const { return times_; }
  void clear_service_times() { times_.clear(); }
  // Requests the recording could not answer so far.
  size_t misses() const { return misses_; }

  // Serves one connection without TLS that arrived at LOCAL, as SCHEME: HTTP/1.1, or HTTP/2 from its first byte
  // if HTTP2 (the listeners speak h2 only over TLS). accept() hands it every plain http connection; the fuzz
  // targets hand it one end of a socketpair, to feed both sessions bytes with no listener and no TLS.
  void serve_connection(boost::asio::ip::tcp::socket socket, web::Scheme scheme, bool http2,
                        const boost::asio::ip::tcp::endpoint& local);

  // Used by the connections: the response to ASKED (its headers included), which arrived at LOCAL.
  Served answer(const web::Asked& asked, const boost::asio::ip::tcp::endpoint& local);
  void record_time(int64_t ns) {
    if (keep_times_) times_.push_back(ns);
  }

 private:
  struct Listener;
  void accept(Listener& l);
  Served miss(const web::Asked& asked, const boost::asio::ip::tcp::endpoint& local);

  boost::asio::io_context& io_;
  const web::Matcher& matcher_;
  Bodies& bodies_;
  certs::CertificateAuthority& ca_;
  std::ostream& log_;
  ServerOptions options_;
  web::Sequence sequence_;
  std::unique_ptr<TlsContext> tls_;
  std::vector<std::unique_ptr<Listener>> acceptors_;
  bool keep_times_ = false;
  std::vector<int64_t> times_;
  size_t misses_ = 0;
};

// Every address and port a replay of RECORDING listens on: its origins, and unless STRICT, for an address with
// http on 80 and no https on 443 (or the reverse) the other one too.
std::vector<web::Origin> listeners(const web::Recording& recording, bool strict);

// Strips the port from a Host or :authority value ("a.com:443" -> "a.com", "[::1]:8443" -> "::1").
std::string host_without_port(const std::string& authority);

}  // namespace tracemod::webserve
