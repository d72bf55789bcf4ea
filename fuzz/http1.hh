// What the fuzz targets of HTTP/1.1 servers share (the replay's, tm-top --web's): which requests of an input a
// server must answer, and the check of what it answered.
#pragma once

#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <string_view>
#include <vector>

#include "fuzz.hh"
#include "web/wire.hh"

namespace tracemod::fuzz {

namespace http = boost::beast::http;

// The methods of the requests the server must answer: each complete request in INPUT as its parser reads them,
// until one that is not kept alive (the server closes after answering it) or the first that is not complete.
inline std::vector<http::verb> complete_requests(std::string_view input, uint64_t body_limit) {
  std::vector<http::verb> out;
  for (;;) {
    http::request_parser<http::string_body> parser;
    parser.body_limit(body_limit);
    parser.eager(true);
    boost::beast::error_code ec;
    while (!parser.is_done() && !input.empty()) {
      const size_t used = parser.put(boost::asio::buffer(input.data(), input.size()), ec);
      input.remove_prefix(used);
      if (ec || used == 0) break;
    }
    if (!parser.is_done()) return out;
    out.push_back(parser.get().method());
    if (!parser.get().keep_alive()) return out;
  }
}

// A response's header block as sent: lines each ended by CRLF, no other CR or LF, none folded.
inline void check_header_block(std::string_view block) {
  FUZZ_CHECK(block.size() >= 4 && block.substr(block.size() - 4) == "\r\n\r\n");
  block.remove_suffix(2);  // every line now ends with its own CRLF
  bool status_line = true;
  while (!block.empty()) {
    const size_t end = block.find("\r\n");
    const std::string_view line = block.substr(0, end);
    block.remove_prefix(end + 2);
    for (char c : line) FUZZ_CHECK(c != '\r' && c != '\n');
    if (status_line) {
      FUZZ_CHECK(line.substr(0, 5) == "HTTP/");
      status_line = false;
      continue;
    }
    const size_t colon = line.find(':');
    FUZZ_CHECK(colon != std::string_view::npos && web::is_token(std::string(line.substr(0, colon))));
    for (char c : line.substr(colon + 1)) FUZZ_CHECK(c == '\t' || (static_cast<unsigned char>(c) >= 0x20 && c != 0x7f));
  }
}

// The responses in OUT, each to the request of METHODS in turn (a HEAD's has no body): as many as there are
// methods, every one whole and well formed, and nothing after them.
inline void check_responses(std::string_view out, const std::vector<http::verb>& methods) {
  for (http::verb method : methods) {
    http::response_parser<http::string_body> parser;
    parser.skip(method == http::verb::head);
    boost::beast::error_code ec;
    const size_t header = parser.put(boost::asio::buffer(out.data(), out.size()), ec);
    FUZZ_CHECK(!ec && parser.is_header_done());
    check_header_block(out.substr(0, header));
    out.remove_prefix(header);
    while (!parser.is_done()) {
      const size_t used = parser.put(boost::asio::buffer(out.data(), out.size()), ec);
      FUZZ_CHECK(!ec || ec == http::error::need_more);
      FUZZ_CHECK(used > 0);
      out.remove_prefix(used);
    }
  }
  FUZZ_CHECK(out.empty());
}

}  // namespace tracemod::fuzz
