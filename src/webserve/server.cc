#include "webserve/server.hh"

#include <openssl/ssl.h>

#include <algorithm>
#include <array>
#include <boost/asio/ip/v6_only.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <cstring>
#include <ctime>
#include <optional>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "util/error.hh"
#include "webserve/dates.hh"
#include "webserve/http2.hh"

namespace tracemod::webserve {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;

// A request body is read (and ignored: the matcher does not look at it), up to this much.
constexpr uint64_t kRequestBodyLimit = 64 << 20;

const std::string kNotFound = "not in the recording\n";
const std::string kUnservable = "the recording has no valid status for this request\n";
const std::string kEmpty;
const std::vector<web::Header> kNoHeaders;

using detail::lower;
using detail::start_http2;

// The slot of an SSL that holds its listener's address (asio keeps its own data in the app-data slot).
int local_address_slot() {
  static const int slot = SSL_get_ex_new_index(0, nullptr, nullptr, nullptr, nullptr);
  return slot;
}

// The name a TLS connection is for: its SNI, else the address it connected to.
std::string tls_name(SSL* ssl) {
  const char* sni = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name);
  const auto* local = static_cast<const std::string*>(SSL_get_ex_data(ssl, local_address_slot()));
  return sni ? lower(sni) : local ? *local : std::string();
}

}  // namespace

// The TLS side: the context, and what the callbacks need to choose a certificate and a protocol.
struct TlsContext {
  ssl::context ctx{ssl::context::tls_server};
  certs::CertificateAuthority* ca = nullptr;
  // Names (and addresses, for a client that sends no SNI) whose exchanges over TLS were all recorded over
  // HTTP/1.1, or that were recorded only over plain HTTP: offered HTTP/1.1 alone, as they were.
  std::unordered_set<std::string> http1_only;
};

namespace {

// SNI: the leaf for the name the client asked for, or for the address it connected to.
int on_servername(SSL* ssl, int* alert, void* arg) {
  auto* tls = static_cast<TlsContext*>(arg);
  try {
    if (SSL_use_certificate(ssl, tls->ca->leaf(tls_name(ssl))) == 1 &&
        SSL_use_PrivateKey(ssl, tls->ca->leaf_key()) == 1)
      return SSL_TLSEXT_ERR_OK;
  } catch (const Error&) {
  }
  *alert = SSL_AD_INTERNAL_ERROR;
  return SSL_TLSEXT_ERR_ALERT_FATAL;
}

// ALPN: h2 if the client offers it and the name was recorded with it, else http/1.1; a client offering neither
// gets HTTP/1.1 without ALPN.
int on_alpn(SSL* ssl, const unsigned char** out, unsigned char* outlen, const unsigned char* in, unsigned int inlen,
            void* arg) {
  static const unsigned char kBoth[] = "\x02h2\x08http/1.1";
  static const unsigned char kHttp1[] = "\x08http/1.1";
  const bool http1 = static_cast<TlsContext*>(arg)->http1_only.count(tls_name(ssl)) > 0;
  const unsigned char* ours = http1 ? kHttp1 : kBoth;
  const unsigned int ours_len = http1 ? sizeof kHttp1 - 1 : sizeof kBoth - 1;
  unsigned char* chosen = nullptr;
  if (SSL_select_next_proto(&chosen, outlen, ours, ours_len, in, inlen) != OPENSSL_NPN_NEGOTIATED)
    return SSL_TLSEXT_ERR_NOACK;
  *out = chosen;
  return SSL_TLSEXT_ERR_OK;
}

// The names and addresses to offer HTTP/1.1 alone (TlsContext::http1_only).
std::unordered_set<std::string> http1_only(const web::Recording& recording) {
  std::unordered_map<std::string, bool> h2;  // name or address: seen with h2 (or not said) over TLS
  for (const web::Exchange& e : recording.exchanges) {
    const bool may = e.scheme == web::Scheme::kHttps && e.protocol != "http/1.1";
    for (const std::string& key : {e.host, e.address}) h2[key] = h2[key] || may;
  }
  std::unordered_set<std::string> out;
  for (const auto& [key, may] : h2)
    if (!may) out.insert(key);
  return out;
}

bool has_field(const std::vector<web::Header>* headers, const char* name, const char* value) {
  if (!headers) return false;
  for (const web::Header& h : *headers)
    if (web::iequals(h.name, name) && web::iequals(h.value, value)) return true;
  return false;
}

// A browser's top-level navigation: a new page load, whose repeated requests start their recorded order over.
bool navigation(const std::vector<web::Header>* headers) {
  return has_field(headers, "Sec-Fetch-Mode", "navigate") && has_field(headers, "Sec-Fetch-Dest", "document");
}

// Whether an If-None-Match in ASKED names ETAG (weak comparison, RFC 9110 §13.1.2).
bool not_modified(const std::vector<web::Header>* asked, const std::string* etag) {
  if (!asked || !etag) return false;
  const auto opaque = [](std::string_view t) {
    while (!t.empty() && (t.front() == ' ' || t.front() == '\t')) t.remove_prefix(1);
    while (!t.empty() && (t.back() == ' ' || t.back() == '\t')) t.remove_suffix(1);
    return t.substr(0, 2) == "W/" ? t.substr(2) : t;
  };
  const std::string_view mine = opaque(*etag);
  const std::string* inm = web::find_header(*asked, "If-None-Match");
  if (!inm) return false;
  for (std::string_view rest = *inm; !rest.empty();) {
    const size_t comma = std::min(rest.find(','), rest.size());
    const std::string_view tag = opaque(rest.substr(0, comma));
    if (tag == "*" || tag == mine) return true;
    rest.remove_prefix(std::min(comma + 1, rest.size()));
  }
  return false;
}

using Response = http::response<http::span_body<const char>>;

// S as HTTP/1.1: its headers and a Content-Length of its body; the body by reference, not copied.
void fill(Response& res, const Served& s, bool head) {
  res = {};
  res.version(11);
  res.result(static_cast<unsigned>(s.status));
  for (const web::Header& h : s.headers) res.insert(h.name, h.value);
  if (!s.bodiless) res.set(http::field::content_length, std::to_string(s.body->size()));
  if (!head && !s.bodiless) res.body() = {s.body->data(), s.body->size()};
}

std::vector<web::Header> request_headers(const http::request<http::string_body>& req) {
  std::vector<web::Header> out;
  for (const auto& field : req) out.push_back({std::string(field.name_string()), std::string(field.value())});
  return out;
}

// HTTP/1.1 over a TCP socket or a TLS stream: Beast reads each request and writes the recorded response.
template <class Stream>
class Http1Session : public std::enable_shared_from_this<Http1Session<Stream>> {
 public:
  Http1Session(std::unique_ptr<Stream> stream, ReplayServer& server, web::Scheme scheme, tcp::endpoint local)
      : stream_(std::move(stream)), server_(server), scheme_(scheme), local_(std::move(local)) {}

  void read() {
    parser_.emplace();
    parser_->body_limit(kRequestBodyLimit);
    http::async_read(*stream_, buffer_, *parser_,
                     [self = this->shared_from_this()](beast::error_code ec, size_t) { self->on_read(ec); });
  }

 private:
  void on_read(beast::error_code ec) {
    if (ec) return close();
    start_ = Clock::now();
    const http::request<http::string_body>& req = parser_->get();
    const std::string host = host_without_port(std::string(req[http::field::host]));
    const std::string method(req.method_string()), target(req.target());
    const std::vector<web::Header> headers = request_headers(req);
    const web::Asked asked{scheme_, local_.port(), host, method, target, &headers};
    served_ = server_.answer(asked, local_);
    fill(res_, served_, req.method() == http::verb::head);
    res_.keep_alive(req.keep_alive());
    http::async_write(*stream_, res_,
                      [self = this->shared_from_this()](beast::error_code e, size_t) { self->on_write(e); });
  }

  void on_write(beast::error_code ec) {
    server_.record_time((Clock::now() - start_).count());
    if (ec || !res_.keep_alive()) return close();
    read();
  }

  void close() {
    beast::error_code ignored;
    beast::get_lowest_layer(*stream_).shutdown(tcp::socket::shutdown_both, ignored);
    beast::get_lowest_layer(*stream_).close(ignored);
  }

  std::unique_ptr<Stream> stream_;
  ReplayServer& server_;
  web::Scheme scheme_;
  tcp::endpoint local_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  Served served_;  // what res_ refers to
  Response res_;
  Clock::time_point start_;
};

using detail::TlsStream;

// LOCAL_TEXT (the listener's address as text, which outlives the connection) names the certificate for a
// client that sends no SNI: asio's TLS stream reads through a BIO pair, so the SSL has no socket to ask.
void start_tls(tcp::socket socket, ssl::context& ctx, ReplayServer& server, tcp::endpoint local,
               const std::string& local_text) {
  auto stream = std::make_unique<TlsStream>(std::move(socket), ctx);
  SSL_set_ex_data(stream->native_handle(), local_address_slot(), const_cast<std::string*>(&local_text));
  TlsStream& s = *stream;
  s.async_handshake(
      ssl::stream_base::server, [stream = std::move(stream), &server, local](beast::error_code ec) mutable {
        if (ec) return;  // a client that gives up, or distrusts the CA: nothing to serve
        const unsigned char* alpn = nullptr;
        unsigned int len = 0;
        SSL_get0_alpn_selected(stream->native_handle(), &alpn, &len);
        if (len == 2 && std::memcmp(alpn, "h2", 2) == 0)
          start_http2(std::move(stream), server, local);
        else
          std::make_shared<Http1Session<TlsStream>>(std::move(stream), server, web::Scheme::kHttps, local)->read();
      });
}

}  // namespace

std::string detail::lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

bool detail::is_hop_by_hop(const std::string& lower_name) {
  return lower_name == "connection" || lower_name == "keep-alive" || lower_name == "proxy-connection" ||
         lower_name == "transfer-encoding" || lower_name == "upgrade" || lower_name == "content-length";
}

struct ReplayServer::Listener {
  tcp::acceptor acceptor;
  web::Scheme scheme;
  tcp::endpoint local;
  std::string address;  // as text
};

std::string host_without_port(const std::string& authority) {
  if (!authority.empty() && authority[0] == '[') {
    const size_t close = authority.find(']');
    return lower(authority.substr(1, close == std::string::npos ? std::string::npos : close - 1));
  }
  const size_t colon = authority.find(':');
  // Two colons: an unbracketed IPv6 literal, no port.
  if (colon == std::string::npos || authority.find(':', colon + 1) != std::string::npos) return lower(authority);
  return lower(authority.substr(0, colon));
}

ReplayServer::ReplayServer(asio::io_context& io, const web::Matcher& matcher, Bodies& bodies, certs::CertificateAuthority& ca,
                           std::ostream& log, ServerOptions options)
    : io_(io),
      matcher_(matcher),
      bodies_(bodies),
      ca_(ca),
      log_(log),
      options_(options),
      sequence_(matcher.recording().exchanges.size()),
      tls_(std::make_unique<TlsContext>()) {
  tls_->ca = &ca_;
  tls_->http1_only = http1_only(matcher.recording());
  SSL_CTX* ctx = tls_->ctx.native_handle();
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  SSL_CTX_set_tlsext_servername_callback(ctx, on_servername);
  SSL_CTX_set_tlsext_servername_arg(ctx, tls_.get());
  SSL_CTX_set_alpn_select_cb(ctx, on_alpn, tls_.get());
}

ReplayServer::~ReplayServer() = default;

std::vector<web::Origin> listeners(const web::Recording& recording, bool strict) {
  std::vector<web::Origin> out = web::origins(recording);
  if (strict) return out;
  std::set<std::pair<std::string, uint16_t>> taken;
  for (const web::Origin& o : out) taken.insert({o.address, o.port});
  const size_t recorded = out.size();
  for (size_t i = 0; i < recorded; ++i) {
    const web::Origin o = out[i];
    const bool http80 = o.scheme == web::Scheme::kHttp && o.port == 80;
    const bool https443 = o.scheme == web::Scheme::kHttps && o.port == 443;
    if (!http80 && !https443) continue;
    const uint16_t port = http80 ? 443 : 80;
    if (taken.insert({o.address, port}).second)
      out.push_back({o.address, port, http80 ? web::Scheme::kHttps : web::Scheme::kHttp, o.names});
  }
  return out;
}

void ReplayServer::listen() {
  for (const web::Origin& o : listeners(matcher_.recording(), options_.strict)) {
    beast::error_code ec;
    const asio::ip::address address = asio::ip::make_address(o.address, ec);
    if (ec) throw Error("origin " + o.address + ": not an IP address");
    const tcp::endpoint at{address, o.port};
    auto l = std::make_unique<Listener>(Listener{tcp::acceptor{io_}, o.scheme, at, address.to_string()});
    l->acceptor.open(at.protocol(), ec);
    if (!ec) l->acceptor.set_option(asio::socket_base::reuse_address(true), ec);
    if (!ec && address.is_v6()) l->acceptor.set_option(asio::ip::v6_only(true), ec);
    if (!ec) l->acceptor.bind(at, ec);
    if (!ec) l->acceptor.listen(asio::socket_base::max_listen_connections, ec);
    if (ec) throw Error("listen on " + o.address + " port " + std::to_string(o.port) + ": " + ec.message());
    accept(*l);
    acceptors_.push_back(std::move(l));
  }
}

void ReplayServer::accept(Listener& l) {
  l.acceptor.async_accept([this, &l](beast::error_code ec, tcp::socket socket) {
    if (ec == asio::error::operation_aborted) return;
    if (!ec) {
      socket.set_option(tcp::no_delay(true), ec);
      if (l.scheme == web::Scheme::kHttps)
        start_tls(std::move(socket), tls_->ctx, *this, l.local, l.address);
      else
        serve_connection(std::move(socket), web::Scheme::kHttp, false, l.local);
    }
    accept(l);
  });
}

void ReplayServer::serve_connection(tcp::socket socket, web::Scheme scheme, bool http2, const tcp::endpoint& local) {
  auto stream = std::make_unique<tcp::socket>(std::move(socket));
  if (http2)
    start_http2(std::move(stream), *this, local);
  else
    std::make_shared<Http1Session<tcp::socket>>(std::move(stream), *this, scheme, local)->read();
}

Served ReplayServer::answer(const web::Asked& asked, const tcp::endpoint& local) {
  if (navigation(asked.headers)) sequence_.new_session();
  const web::Exchange* e = matcher_.match(asked, &sequence_);
  // HEAD is answered with what GET would get (its headers only) when it was not recorded itself.
  if (!e && asked.method == "HEAD") {
    web::Asked get = asked;
    get.method = "GET";
    e = matcher_.match(get, &sequence_);
  }
  if (!e) return miss(asked, local);
  Served s;
  // A HAR file records an aborted request with status 0: no client could read it, so it becomes a 502.
  if (e->response.status < 100 || e->response.status > 999) {
    log_ << "unservable: status " << e->response.status << " recorded for " << asked.method << ' '
         << web::url_of(asked.scheme, asked.host, local.port(), asked.target) << std::endl;
    s.status = 502;
    s.headers = {{"Content-Type", "text/plain"}};
    s.body = &kUnservable;
    return s;
  }
  const size_t i = static_cast<size_t>(e - matcher_.recording().exchanges.data());
  const std::vector<web::Header>* headers = bodies_.headers(i);
  s.headers = headers ? *headers : e->response.headers;
  s.status = e->response.status;
  // A 304 saved with its body stands for the 200 it revalidated: a browser with an empty cache gets that.
  if (s.status == 304 && !e->response.body.empty() && !web::is_conditional(asked.headers)) s.status = 200;
  // A revalidation of what the client holds is answered as the origin would have: not modified.
  if (s.status == 200 && not_modified(asked.headers, web::find_header(s.headers, "ETag"))) s.status = 304;
  s.bodiless = s.status / 100 == 1 || s.status == 204 || s.status == 304;
  if (!options_.keep_dates) refresh_dates(s.headers, e->recorded_ms, static_cast<int64_t>(std::time(nullptr)));
  if (s.bodiless) {
    s.body = &kEmpty;
    return s;
  }
  const Bodies::Body body =
      bodies_.body(i, web::find_header(asked.headers ? *asked.headers : kNoHeaders, "Accept-Encoding"));
  if (!body.coding.empty()) s.headers.push_back({"Content-Encoding", body.coding});
  s.body = body.bytes;
  return s;
}

Served ReplayServer::miss(const web::Asked& asked, const tcp::endpoint& local) {
  ++misses_;
  const std::string host = asked.host.empty() ? local.address().to_string() : std::string(asked.host);
  log_ << "unmatched: " << asked.method << ' ' << web::url_of(asked.scheme, host, local.port(), asked.target) << " ("
       << matcher_.closest(asked) << ")" << std::endl;
  Served s;
  s.status = 404;
  // Marked, so that a client can tell the replay's own miss from a 404 the origin sent (tm-run counts them).
  s.headers = {{"Content-Type", "text/plain"}, {"Cache-Control", "no-store"}, {"X-Tm-Replay", "miss"}};
  s.body = &kNotFound;
  return s;
}

}  // namespace tracemod::webserve
