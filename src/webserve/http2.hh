// HTTP/2 with nghttp2's server session: the replay server hands it a TLS connection that chose h2 by ALPN (and
// ReplayServer::serve_connection a plain one, for the fuzz targets). Internal to webserve.
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <memory>
#include <string>

#include "webserve/server.hh"

namespace tracemod::webserve::detail {

using TlsStream = boost::asio::ssl::stream<boost::asio::ip::tcp::socket>;

// ASYNCSTREAM is a TlsStream or a plain tcp::socket (instantiated for both in http2.cc).
template <class AsyncStream>
void start_http2(std::unique_ptr<AsyncStream> stream, ReplayServer& server, boost::asio::ip::tcp::endpoint local);

std::string lower(std::string s);
// Headers the server sets itself (Content-Length) or that only HTTP/1.1 may carry.
bool is_hop_by_hop(const std::string& lower_name);

}  // namespace tracemod::webserve::detail
