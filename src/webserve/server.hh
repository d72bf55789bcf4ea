// The replay server: every origin of a recording listens at its recorded address and port and answers each
// request with the exchange the matcher picks. HTTPS origins speak TLS (a certificate per SNI name from the
// recording's CA) with HTTP/2 or HTTP/1.1 by ALPN; HTTP origins speak HTTP/1.1.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <cstdint>
#include <memory>
#include <ostream>
#include <vector>

#include "web/matcher.hh"
#include "web/recording.hh"
#include "webserve/certs.hh"

namespace tracemod::webserve {

struct TlsContext;

class ReplayServer {
 public:
  // Keeps references to all of them: they must outlive the server. LOG gets one line per unmatched request.
  ReplayServer(boost::asio::io_context& io, const web::Recording& recording, const web::Matcher& matcher,
               CertificateAuthority& ca, std::ostream& log);
  ~ReplayServer();

  // Binds and listens on every origin's address and port; throws Error naming the one that fails.
  void listen();
  size_t origin_count() const { return acceptors_.size(); }

  // With it on, the server keeps each request's service time (from the request's last byte read to the
  // response's last byte written to the socket), for benchmarks.
  void keep_service_times(bool on) { keep_times_ = on; }
  const std::vector<int64_t>& service_times_ns() const { return times_; }
  void clear_service_times() { times_.clear(); }

  // Used by the connections.
  struct Served {
    int status;
    const std::vector<web::Header>* headers;  // null for the server's own 404
    const std::string* body;
  };
  Served answer(web::Scheme scheme, const boost::asio::ip::tcp::endpoint& local, const std::string& host,
                const std::string& method, const std::string& target);
  void record_time(int64_t ns) {
    if (keep_times_) times_.push_back(ns);
  }

 private:
  struct Listener;
  void accept(Listener& l);

  boost::asio::io_context& io_;
  const web::Recording& recording_;
  const web::Matcher& matcher_;
  CertificateAuthority& ca_;
  std::ostream& log_;
  std::unique_ptr<TlsContext> tls_;
  std::vector<std::unique_ptr<Listener>> acceptors_;
  bool keep_times_ = false;
  std::vector<int64_t> times_;
};

// Strips the port from a Host or :authority value ("a.com:443" -> "a.com", "[::1]:8443" -> "::1").
std::string host_without_port(const std::string& authority);

}  // namespace tracemod::webserve
