// What the replay server's fuzz targets (replay-http1, replay-http2) share: a small recording of two origins
// served as tm-webreplay serves one (the matcher, the bodies with the deterministic script, a CA), and one
// connection of a fresh ReplayServer fed the input over a socket pair until nothing more happens.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <sstream>
#include <string>

#include "certs/certs.hh"
#include "fuzz.hh"
#include "web/matcher.hh"
#include "web/recording.hh"
#include "webserve/bodies.hh"
#include "webserve/coding.hh"
#include "webserve/inject.hh"
#include "webserve/server.hh"

namespace tracemod::fuzz {

namespace replay {

using boost::asio::ip::tcp;

inline web::Exchange exchange(web::Scheme scheme, const std::string& method, const std::string& target, int status,
                              std::vector<web::Header> headers, std::string body) {
  web::Exchange e;
  e.scheme = scheme;
  const bool https = scheme == web::Scheme::kHttps;
  e.host = https ? "a.test" : "b.test";
  e.address = https ? "192.0.2.1" : "192.0.2.2";
  e.port = https ? 443 : 80;
  e.protocol = https ? "h2" : "http/1.1";
  e.recorded_ms = 1500000000000;
  e.request.method = method;
  e.request.target = target;
  e.request.version = https ? "HTTP/2" : "HTTP/1.1";
  e.response.status = status;
  e.response.headers = std::move(headers);
  e.response.body = std::move(body);
  return e;
}

// A page and what it loads, over https (h2) from a.test and plain http from b.test: dated and cookied headers,
// bodies in a coding (a HAR's decoded, a Mahimahi one as sent), a 304 saved with its body, a status no client
// can read, a redirect, a repeated request answered in recorded order, a POST, a 204.
inline web::Recording recording() {
  using web::Scheme;
  const std::string page = "<!doctype html><html><head><title>a</title></head><body><p>a</p></body></html>";
  const std::string css = "body{color:red}\n" + std::string(3000, ' ') + "/* end */\n";
  web::Recording r;
  r.exchanges = {
      exchange(Scheme::kHttps, "GET", "/", 200,
               {{"Content-Type", "text/html; charset=utf-8"},
                {"Date", "Fri, 14 Jul 2017 02:40:00 GMT"},
                {"Set-Cookie", "id=1; Path=/; expires=Sat, 14-Jul-2018 02:40:00 GMT; Secure"},
                {"Content-Security-Policy", "script-src 'self' 'nonce-r4nd0m'"}},
               page),
      exchange(Scheme::kHttps, "GET", "/style.css", 200, {{"Content-Type", "text/css"}, {"ETag", "\"v1\""}}, css),
      exchange(Scheme::kHttps, "GET", "/app.js?v=2&x=1", 200, {{"Content-Type", "text/javascript"}},
               *webserve::encode("gzip", "console.log(1);")),
      exchange(Scheme::kHttps, "GET", "/cached.css", 304, {{"Content-Type", "text/css"}}, css),
      exchange(Scheme::kHttps, "POST", "/api", 201, {{"Content-Type", "application/json"}}, "{\"ok\":true}"),
      exchange(Scheme::kHttps, "GET", "/aborted", 0, {}, ""),
      exchange(Scheme::kHttps, "GET", "/old", 301, {{"Location", "https://a.test/"}}, ""),
      exchange(Scheme::kHttps, "GET", "/again", 200, {{"Cache-Control", "no-store"}}, "first"),
      exchange(Scheme::kHttps, "GET", "/again", 200, {{"Cache-Control", "no-store"}}, "second"),
      exchange(Scheme::kHttp, "GET", "/", 200,
               {{"Content-Type", "text/html"},
                {"Expires", "Fri, 14 Jul 2017 03:40:00 GMT"},
                {"Last-Modified", "Thu, 13 Jul 2017 02:40:00 GMT"}},
               page),
      exchange(Scheme::kHttp, "GET", "/ping", 204, {}, ""),
  };
  r.exchanges[1].response.coding = "br";  // as a HAR holds it: decoded, encoded again by Bodies
  r.exchanges[1].response.decoded = true;
  r.exchanges[2].response.coding = "gzip";  // as Mahimahi holds it: as sent
  return r;
}

// What every input's server shares, made once: the bodies are encoded and given their script at the start.
struct Site {
  web::Recording recording = replay::recording();
  web::Matcher matcher{recording};
  webserve::Injection script = webserve::deterministic_script(1500000000000, 1);
  webserve::Bodies bodies{recording, &script, 1};
  certs::CertificateAuthority ca = certs::CertificateAuthority::load_or_create(scratch_dir() + "/ca");
};

inline Site& site() {
  static Site s;
  return s;
}

// Reads what the server writes into OUT until the connection ends.
inline void read_all(tcp::socket& client, std::array<char, 65536>& buf, std::string& out) {
  client.async_read_some(boost::asio::buffer(buf), [&](boost::system::error_code ec, size_t n) {
    out.append(buf.data(), n);
    if (!ec) read_all(client, buf, out);
  });
}

}  // namespace replay

// The bytes a fresh replay server writes on one connection given INPUT, as SCHEME at LOCAL (HTTP/2 from the
// first byte if HTTP2). One thread: the server and the client's end run on one io_context until no handler is
// ready (every request the input completed has been answered), then the client shuts its sending side and
// both run to the end.
inline std::string converse(const std::string& input, web::Scheme scheme, bool http2,
                            const replay::tcp::endpoint& local) {
  using replay::tcp;
  boost::asio::io_context io{1};
  std::ostringstream log;
  replay::Site& site = replay::site();
  webserve::ReplayServer server(io, site.matcher, site.bodies, site.ca, log);
  const std::array<int, 2> fds = socket_pair();
  tcp::socket served(io), client(io);
  served.assign(tcp::v4(), fds[0]);
  client.assign(tcp::v4(), fds[1]);
  server.serve_connection(std::move(served), scheme, http2, local);
  std::string out;
  std::array<char, 65536> buf;
  replay::read_all(client, buf, out);
  boost::asio::async_write(client, boost::asio::buffer(input), [](boost::system::error_code, size_t) {});
  while (io.poll() > 0) {
  }
  boost::system::error_code ignored;
  client.shutdown(tcp::socket::shutdown_send, ignored);
  io.run();
  return out;
}

}  // namespace tracemod::fuzz
