// tm-top --web's server (Boost.Beast, src/top/web.cc): the input as the bytes a browser sends on one connection,
// answered by serve_connection as run_web's thread answers one, with figures of one shell as /shells.json. Every
// request the input completes, up to the first it asks to close after, gets one response, in order and no more
// (a HEAD's without a body); each parses, and its header holds no CR or LF but the CRLF that ends a line, no
// folded field, no name that is not a token and no control byte in a value.
#include "http1.hh"
#include "top/web.hh"

using namespace tracemod;

namespace {

using boost::asio::ip::tcp;

constexpr uint64_t kRequestBodyLimit = 1 << 20;  // Beast's default for a request, which http::read keeps

const std::string kJson = "{\"shells\": [{\"pid\": 4211, \"tool\": \"tm-link\"}]}\n";

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input(fuzz::text(data, size));
  const std::array<int, 2> fds = fuzz::socket_pair();
  fuzz::Peer browser(fds[1], input);
  {
    boost::asio::io_context io{1};
    tcp::socket socket(io);
    socket.assign(tcp::v4(), fds[0]);
    top::serve_connection(std::move(socket), [] { return kJson; });
  }  // the socket closed: the browser reads to its end
  fuzz::check_responses(browser.received(), fuzz::complete_requests(input, kRequestBodyLimit));
  return 0;
}
