// The replay server's HTTP/1.1 (Boost.Beast's parser in webserve's Http1Session): the input as the bytes a client
// sends on one connection, served once as plain http (b.test's port 80) and once as https as if past the handshake
// (a.test's 443), from a small recording (fuzz/replay.hh). Every request the input completes, up to the first
// it asks to close after (as Beast reads them, the server's own parser and limits), gets one response, in order
// and no more; each response parses, and its header holds no CR or LF but the CRLF that ends a line, no field
// folded onto the next line, no name that is not a token and no control byte in a value.
#include "http1.hh"
#include "replay.hh"

using namespace tracemod;

namespace {

using boost::asio::ip::make_address;
using boost::asio::ip::tcp;
namespace http = boost::beast::http;

constexpr uint64_t kRequestBodyLimit = 64 << 20;  // the server's (webserve/server.cc)

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input(fuzz::text(data, size));
  const std::vector<http::verb> methods = fuzz::complete_requests(input, kRequestBodyLimit);
  const tcp::endpoint http_origin{make_address("192.0.2.2"), 80}, https_origin{make_address("192.0.2.1"), 443};
  fuzz::check_responses(fuzz::converse(input, web::Scheme::kHttp, false, http_origin), methods);
  fuzz::check_responses(fuzz::converse(input, web::Scheme::kHttps, false, https_origin), methods);
  return 0;
}
