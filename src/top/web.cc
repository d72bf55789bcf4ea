#include "top/web.hh"

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <iostream>
#include <mutex>
#include <thread>

#include "top/render.hh"
#include "top/web_page.hh"
#include "util/error.hh"
#include "util/parse.hh"

namespace tracemod::top {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;
namespace asio = boost::asio;
using tcp = asio::ip::tcp;

constexpr int kHistorySeconds = 60;

// The figures, refreshed by one thread and read by the connections' threads.
class Figures {
 public:
  void update(live::Monitor& m) {
    m.refresh();
    std::string j = json_view(m.shells(), kHistorySeconds);
    std::lock_guard<std::mutex> lock(mutex_);
    json_ = std::move(j);
  }
  std::string json() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return json_;
  }

 private:
  mutable std::mutex mutex_;
  std::string json_ = "{\"shells\": []}\n";
};

http::response<http::string_body> respond(const http::request<http::string_body>& req,
                                          const std::function<std::string()>& json) {
  const std::string target(req.target());
  const std::string path = target.substr(0, target.find('?'));
  http::response<http::string_body> res{http::status::ok, req.version()};
  res.set(http::field::server, "tm-top");
  res.set(http::field::cache_control, "no-store");
  // The page may load nothing from anywhere: its script and style are inline, its data from this server.
  res.set("Content-Security-Policy",
          "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
          "connect-src 'self'");
  if (req.method() != http::verb::get && req.method() != http::verb::head) {
    res.result(http::status::method_not_allowed);
    res.body() = "GET only\n";
  } else if (path == "/") {
    res.set(http::field::content_type, "text/html; charset=utf-8");
    res.body() = kWebPage;
  } else if (path == "/shells.json") {
    res.set(http::field::content_type, "application/json");
    res.body() = json();
  } else {
    res.result(http::status::not_found);
    res.body() = "not found\n";
  }
  res.prepare_payload();
  // A HEAD's answer is a GET's without the body: its Content-Length kept, no bytes after the header (sent, they
  // would be read as the next response).
  if (req.method() == http::verb::head) res.body().clear();
  return res;
}

}  // namespace

void serve_connection(tcp::socket socket, const std::function<std::string()>& json) {
  beast::error_code ec;
  beast::flat_buffer buffer;
  for (;;) {
    http::request<http::string_body> req;
    http::read(socket, buffer, req, ec);
    if (ec) break;
    http::response<http::string_body> res = respond(req, json);
    res.keep_alive(req.keep_alive());
    http::write(socket, res, ec);
    if (ec || !res.keep_alive()) break;
  }
  socket.shutdown(tcp::socket::shutdown_send, ec);
}

void parse_web_address(const std::string& text, WebOptions& o) {
  std::string port = text;
  if (!text.empty() && text[0] == '[') {
    const size_t close = text.find("]:");
    if (close == std::string::npos) throw UsageError("--web: expected [ADDRESS]:PORT, got '" + text + "'");
    o.address = text.substr(1, close - 1);
    port = text.substr(close + 2);
  } else if (const size_t colon = text.rfind(':'); colon != std::string::npos) {
    o.address = text.substr(0, colon);
    port = text.substr(colon + 1);
  }
  o.port = port == "0" ? 0 : parse_port("--web", port);
  beast::error_code ec;
  const asio::ip::address address = asio::ip::make_address(o.address, ec);
  if (ec) throw UsageError("--web: '" + o.address + "' is not an IP address");
  if (!address.is_loopback() && !o.expose)
    throw UsageError("--web: " + o.address +
                     " is not a loopback address: anyone who reaches it would see every "
                     "shell's commands and counters; add --expose-to-network to serve them there");
}

int run_web(live::Monitor& monitor, const WebOptions& o, Nanos interval) {
  const asio::ip::address address = asio::ip::make_address(o.address);
  asio::io_context io{1};
  tcp::acceptor acceptor{io};
  beast::error_code ec;
  const tcp::endpoint at{address, o.port};
  acceptor.open(at.protocol(), ec);
  if (!ec) acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor.bind(at, ec);
  if (!ec) acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) throw Error("--web: listen on " + o.address + " port " + std::to_string(o.port) + ": " + ec.message());
  Figures figures;
  figures.update(monitor);
  std::thread([&figures, &monitor, interval] {
    for (;;) {
      std::this_thread::sleep_for(std::chrono::nanoseconds(interval));
      figures.update(monitor);
    }
  }).detach();
  const tcp::endpoint bound = acceptor.local_endpoint();
  const std::string host =
      bound.address().is_v6() ? "[" + bound.address().to_string() + "]" : bound.address().to_string();
  std::cerr << "tm-top: serving http://" << host << ":" << bound.port() << "/" << std::endl;
  for (;;) {
    tcp::socket socket{io};
    acceptor.accept(socket, ec);
    if (ec) continue;
    std::thread(serve_connection, std::move(socket),
                std::function<std::string()>([&figures] { return figures.json(); }))
        .detach();
  }
}

}  // namespace tracemod::top
