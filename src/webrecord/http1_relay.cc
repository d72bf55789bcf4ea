#include "webrecord/http1_relay.hh"

#include <boost/asio/buffer.hpp>
#include <boost/beast/http.hpp>
#include <cctype>
#include <limits>
#include <string>

namespace tracemod::webrecord {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;

// "a.com:443" -> "a.com", "[::1]:8443" -> "::1".
std::string host_of(const std::string& authority) {
  const auto lower = [](std::string s) {
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
  };
  if (!authority.empty() && authority[0] == '[') return lower(authority.substr(1, authority.find(']') - 1));
  const size_t colon = authority.find(':');
  return lower(colon != std::string::npos && authority.find(':', colon + 1) == std::string::npos
                   ? authority.substr(0, colon)
                   : authority);
}

// How a message's relaying ended.
enum class Message { kWhole, kNone, kCut, kMalformed };  // kNone: the side ended before its first byte

// A body the parser frames and drops: the relay keeps the bytes as they came (RawMessage::body), up to its
// limit, so a body's size costs no memory of the parser's.
struct DroppedBody {
  struct value_type {};
  class reader {
   public:
    template <bool isRequest, class Fields>
    reader(http::header<isRequest, Fields>&, value_type&) {}
    void init(const boost::optional<std::uint64_t>&, beast::error_code& ec) { ec = {}; }
    template <class ConstBufferSequence>
    std::size_t put(const ConstBufferSequence& buffers, beast::error_code& ec) {
      ec = {};
      return boost::asio::buffer_size(buffers);
    }
    void finish(beast::error_code& ec) { ec = {}; }
  };
};

class Http1Relay {
 public:
  Http1Relay(Conn& client, Conn& origin, const web::RawExchange& base, const Exchanges& out)
      : client_(client), origin_(origin), base_(base), out_(out) {}

  std::optional<Unrecorded> run() {
    std::optional<Unrecorded> why;
    while (relay_exchange(why)) {
    }
    if (!why && too_large_) why = Unrecorded::kTooLarge;
    return why;
  }

 private:
  bool relay_exchange(std::optional<Unrecorded>& why);
  template <bool isRequest>
  Message relay_message(Conn& from, std::string& buffer, Conn& to, http::parser<isRequest, DroppedBody>& parser,
                        web::RawMessage& raw, std::string* held, bool& over);

  Conn &client_, &origin_;
  const web::RawExchange& base_;
  const Exchanges& out_;
  std::string from_client_, from_origin_;  // read, not yet parsed
  bool too_large_ = false;                 // an exchange went unrecorded for a body over the limit
};

// Reads one message from FROM through PARSER (Beast: the start line, the headers, the body's framing), and
// passes its bytes on to TO as they are parsed, unchanged. RAW gets the start line, the headers and the body's
// bytes as they came (chunk framing included), up to the limit: OVER is set once the body goes over it. HELD,
// if given, gets the piece that completes the message instead of TO, so that the caller can record the exchange
// before the client has all of it.
template <bool isRequest>
Message Http1Relay::relay_message(Conn& from, std::string& buffer, Conn& to,
                                  http::parser<isRequest, DroppedBody>& parser, web::RawMessage& raw, std::string* held,
                                  bool& over) {
  parser.body_limit(std::numeric_limits<std::uint64_t>::max());
  parser.header_limit(1 << 20);
  bool header_taken = false;
  // A body ended by the connection completes with no piece left: HELD must not keep a 1xx's before it.
  if (held) held->clear();
  while (!parser.is_done()) {
    beast::error_code ec;
    size_t used = 0;
    if (!buffer.empty()) {
      // Not eager: the first bytes taken are the whole header, then the body's, a piece at a time.
      used = parser.put(boost::asio::buffer(buffer.data(), buffer.size()), ec);
      if (ec && ec != http::error::need_more) return Message::kMalformed;
      if (used) {
        const std::string_view taken(buffer.data(), used);
        if (held && parser.is_done())
          held->assign(taken);
        else if (!to.write(taken))
          return Message::kCut;
        if (header_taken) {
          if (!over && raw.body.size() + taken.size() > out_.max_body) over = true;
          if (!over) raw.body.append(taken);
        } else {
          raw.first_line = std::string(taken.substr(0, taken.find_first_of("\r\n")));
        }
        header_taken = true;
        buffer.erase(0, used);
      }
    }
    if (parser.is_done()) break;
    if (used && !buffer.empty()) continue;
    if (from.read(buffer) == 0) {
      if (!header_taken && buffer.empty()) return Message::kNone;
      if (isRequest || !parser.is_header_done() || !buffer.empty()) return Message::kCut;
      parser.put_eof(ec);  // a response whose body ends with the connection
      if (ec) return Message::kCut;
    }
  }
  for (const auto& f : parser.get()) raw.headers.push_back({std::string(f.name_string()), std::string(f.value())});
  return Message::kWhole;
}

// One exchange relayed and recorded (the response's last piece reaches the client after the record is
// written: a response the command has whole is in the recording). True to go on with the next; false once the
// connection is over, WHY set if something went unrecorded.
bool Http1Relay::relay_exchange(std::optional<Unrecorded>& why) {
  web::RawExchange e = base_;
  http::request_parser<DroppedBody> request;
  bool over = false;
  if (const Message m = relay_message(client_, from_client_, origin_, request, e.request, nullptr, over);
      m != Message::kWhole) {
    if (m != Message::kNone) why = m == Message::kMalformed ? Unrecorded::kMalformed : Unrecorded::kCutShort;
    return false;
  }
  const bool head = request.get().method() == http::verb::head;
  std::optional<http::response_parser<DroppedBody>> response;
  std::string held;
  for (;;) {  // 1xx responses (100 Continue) are passed on, not recorded
    response.emplace();
    response->skip(head);
    e.response = {};
    const Message m = relay_message(origin_, from_origin_, client_, *response, e.response, &held, over);
    if (m != Message::kWhole) {
      why = m == Message::kMalformed ? Unrecorded::kMalformed : Unrecorded::kCutShort;
      return false;
    }
    const unsigned status = response->get().result_int();
    if (status / 100 != 1) break;
    const bool passed = client_.write(held);
    if (status == 101 || !passed) {  // a protocol switch (WebSocket) is passed on, and the connection ended
      why = passed ? Unrecorded::kSwitched : Unrecorded::kCutShort;
      return false;
    }
  }
  if (const std::string host(request.get()[http::field::host]); !host.empty()) e.host = host_of(host);
  if (!over) {
    out_.record(e);
  } else {
    too_large_ = true;
    if (out_.too_large) out_.too_large(e);
  }
  return client_.write(held) && request.get().keep_alive() && response->get().keep_alive();
}

}  // namespace

std::optional<Unrecorded> relay_http1(Conn& client, Conn& origin, const web::RawExchange& base, const Exchanges& out) {
  return Http1Relay(client, origin, base, out).run();
}

}  // namespace tracemod::webrecord
