// HTTP/2 over a TLS stream, with nghttp2's server session: the replay server hands it a connection that chose
// h2 by ALPN. Internal to webserve.
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <memory>
#include <string>

#include "webserve/server.hh"

namespace tracemod::webserve::detail {

using TlsStream = boost::asio::ssl::stream<boost::asio::ip::tcp::socket>;

void start_http2(std::unique_ptr<TlsStream> stream, ReplayServer& server, boost::asio::ip::tcp::endpoint local);

std::string lower(std::string s);
// Headers the server sets itself (Content-Length) or that only HTTP/1.1 may carry.
bool is_hop_by_hop(const std::string& lower_name);

}  // namespace tracemod::webserve::detail
