// tm-webrecord's HTTP/1.1 relay (src/webrecord/http1_relay.cc): the input as what an origin sends on one
// connection (after its first byte, which says what the client asked: one to four requests, each a GET, a HEAD,
// a POST with a body or a GET that closes), relayed between two socket pairs as the recorder relays a plain
// http connection, every completed exchange written with the recorder's writer. The client gets a prefix of the
// origin's bytes and the origin a prefix of the client's, both unchanged; no more exchanges are recorded than were
// asked for, each with its own request, none with a body over the limit (4 KiB here: those are relayed, not
// recorded); and what was written reads back with tm-webreplay's reader, one exchange a record, each response's
// body the payload of the bytes recorded.
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <filesystem>
#include <vector>

#include "fuzz.hh"
#include "web/recording.hh"
#include "web/writer.hh"
#include "webrecord/http1_relay.hh"

using namespace tracemod;

namespace {

namespace http = boost::beast::http;

constexpr uint64_t kMaxBody = 4096;  // far below tm-webrecord's, so that small inputs reach it

const char* const kRequests[4] = {
    "GET /i HTTP/1.1\r\nHost: a.test\r\nAccept: */*\r\n\r\n",
    "HEAD /i HTTP/1.1\r\nHost: a.test\r\n\r\n",
    "POST /form HTTP/1.1\r\nHost: a.test\r\nContent-Type: application/x-www-form-urlencoded\r\n"
    "Content-Length: 7\r\n\r\na=1&b=2",
    "GET /last HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n",
};

// The requests FLAGS asks for: 1 + its two low bits of them, each kind two bits more (the fourth a GET).
std::vector<std::string> requests(uint8_t flags) {
  std::vector<std::string> out;
  for (int i = 0; i <= (flags & 3); ++i) out.push_back(kRequests[i < 3 ? (flags >> (2 + 2 * i)) & 3 : 0]);
  return out;
}

bool is_prefix(const std::string& part, std::string_view whole) {
  return part.size() <= whole.size() && whole.compare(0, part.size(), part) == 0;
}

// The payload of a recorded response, as Beast reads it from its start line, headers and bytes.
std::string payload(const web::RawMessage& m, bool head) {
  std::string text = m.first_line + "\r\n";
  for (const web::Header& h : m.headers) text += h.name + ": " + h.value + "\r\n";
  text += "\r\n" + m.body;
  http::response_parser<http::string_body> parser;
  parser.body_limit(std::numeric_limits<std::uint64_t>::max());
  parser.skip(head);
  parser.eager(true);  // the header and the body in one put
  boost::beast::error_code ec;
  parser.put(boost::asio::buffer(text), ec);
  if (ec == http::error::need_more || (!ec && !parser.is_done())) parser.put_eof(ec);
  FUZZ_CHECK(!ec && parser.is_done());
  return parser.get().body();
}

// Each record as tm-webreplay reads it: all of them, their order kept, each body its payload.
void check_read_back(const std::string& dir, const std::vector<web::RawExchange>& recorded) {
  if (recorded.empty()) return;
  const web::Recording r = web::load_recording(dir);
  FUZZ_CHECK(r.notes.malformed == 0 && r.exchanges.size() == recorded.size());
  for (size_t i = 0; i < recorded.size(); ++i) {
    const bool head = r.exchanges[i].request.method == "HEAD";
    FUZZ_CHECK(r.exchanges[i].response.body == payload(recorded[i].response, head));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::vector<std::string> asked = requests(data[0]);
  std::string sent;
  for (const std::string& r : asked) sent += r;
  const std::string origin_bytes(fuzz::text(data + 1, size - 1));
  const std::string dir = fuzz::scratch_dir() + "/recording";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directory(dir);
  web::RecordWriter writer(dir);
  std::vector<web::RawExchange> recorded;
  const auto record = [&](const web::RawExchange& e) {
    recorded.push_back(e);
    writer.write(e);
  };
  size_t over = 0;  // exchanges relayed but not recorded: a body over kMaxBody
  web::RawExchange base;
  base.address = "192.0.2.7";
  base.port = 80;
  base.host = base.address;
  base.protocol = "http/1.1";
  const std::array<int, 2> client = fuzz::socket_pair(), origin = fuzz::socket_pair();
  fuzz::Peer browser(client[1], sent), server(origin[1], origin_bytes);
  {
    webrecord::Conn to_client{FileDescriptor(client[0])}, to_origin{FileDescriptor(origin[0])};
    webrecord::relay_http1(to_client, to_origin, base, {kMaxBody, record, [&](const web::RawExchange&) { ++over; }});
  }  // both closed: the peers read to their ends
  FUZZ_CHECK(is_prefix(browser.received(), origin_bytes));
  FUZZ_CHECK(is_prefix(server.received(), sent));
  FUZZ_CHECK(recorded.size() + over <= asked.size());
  for (const web::RawExchange& e : recorded) FUZZ_CHECK(e.response.body.size() <= kMaxBody);
  if (over == 0)
    for (size_t i = 0; i < recorded.size(); ++i)
      FUZZ_CHECK(recorded[i].request.first_line == asked[i].substr(0, asked[i].find("\r\n")));
  check_read_back(dir, recorded);
  return 0;
}
