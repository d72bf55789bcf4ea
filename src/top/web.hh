// tm-top --web: the live view as a page in a browser, served by tm-top itself (Boost.Beast), with every asset
// inline: the page needs no network beyond this server. GET / is the page, GET /shells.json the figures
// (json_view with each direction's last minute); the page asks for them twice a second and redraws.
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <cstdint>
#include <functional>
#include <string>

#include "live/reader.hh"
#include "util/clock.hh"

namespace tracemod::top {

struct WebOptions {
  std::string address = "127.0.0.1";
  uint16_t port = 0;    // 0: any free port (the one chosen is printed)
  bool expose = false;  // serve on an address that is not loopback
};

// Reads "[ADDR:]PORT" ("8080", "127.0.0.1:8080", "[::1]:8080") into O; throws UsageError naming --web, also
// for an address that is not loopback unless O.expose is already set.
void parse_web_address(const std::string& text, WebOptions& o);

// Answers the requests of one connection until it ends or asks to close, with JSON() as /shells.json. Blocking:
// run_web gives each connection a thread of its own (the fuzz target, one end of a socket pair).
void serve_connection(boost::asio::ip::tcp::socket socket, const std::function<std::string()>& json);

// Serves until killed; refreshes MONITOR every INTERVAL. Prints "tm-top: serving http://ADDR:PORT/" on stderr
// once listening (O as parse_web_address left it). Throws Error if it cannot listen.
int run_web(live::Monitor& monitor, const WebOptions& o, Nanos interval);

}  // namespace tracemod::top
