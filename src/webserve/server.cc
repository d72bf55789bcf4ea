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
#include <optional>

#include "util/error.hh"
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

using detail::is_hop_by_hop;
using detail::lower;
using detail::start_http2;

// The slot of an SSL that holds its listener's address (asio keeps its own data in the app-data slot).
int local_address_slot() {
  static const int slot = SSL_get_ex_new_index(0, nullptr, nullptr, nullptr, nullptr);
  return slot;
}

// SNI: the leaf for the name the client asked for, or for the address it connected to.
int on_servername(SSL* ssl, int* alert, void* arg) {
  auto* ca = static_cast<CertificateAuthority*>(arg);
  const char* sni = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name);
  const auto* local = static_cast<const std::string*>(SSL_get_ex_data(ssl, local_address_slot()));
  const std::string name = sni ? lower(sni) : *local;
  try {
    if (SSL_use_certificate(ssl, ca->leaf(name)) == 1 && SSL_use_PrivateKey(ssl, ca->leaf_key()) == 1)
      return SSL_TLSEXT_ERR_OK;
  } catch (const Error&) {
  }
  *alert = SSL_AD_INTERNAL_ERROR;
  return SSL_TLSEXT_ERR_ALERT_FATAL;
}

// ALPN: h2 if the client offers it, else http/1.1; a client offering neither gets HTTP/1.1 without ALPN.
int on_alpn(SSL*, const unsigned char** out, unsigned char* outlen, const unsigned char* in, unsigned int inlen,
            void*) {
  static const unsigned char kOurs[] = "\x02h2\x08http/1.1";
  unsigned char* chosen = nullptr;
  if (SSL_select_next_proto(&chosen, outlen, kOurs, sizeof kOurs - 1, in, inlen) != OPENSSL_NPN_NEGOTIATED)
    return SSL_TLSEXT_ERR_NOACK;
  *out = chosen;
  return SSL_TLSEXT_ERR_OK;
}

using Response = http::response<http::span_body<const char>>;

// The recorded response as HTTP/1.1: its headers but a Content-Length of the stored body (stored without its
// chunking) in place of theirs; the body by reference, not copied.
void fill(Response& res, const ReplayServer::Served& s, bool head) {
  res = {};
  res.version(11);
  res.result(s.status);
  if (s.headers) {
    for (const web::Header& h : *s.headers)
      if (!h.name.empty() && h.name[0] != ':' && !is_hop_by_hop(lower(h.name))) res.insert(h.name, h.value);
  } else {
    res.set(http::field::content_type, "text/plain");
  }
  const bool bodiless = s.status / 100 == 1 || s.status == 204 || s.status == 304;
  if (!bodiless) res.set(http::field::content_length, std::to_string(s.body->size()));
  if (!head && !bodiless) res.body() = {s.body->data(), s.body->size()};
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
    const ReplayServer::Served s =
        server_.answer(scheme_, local_, host, std::string(req.method_string()), std::string(req.target()));
    fill(res_, s, req.method() == http::verb::head);
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

struct TlsContext {
  ssl::context ctx{ssl::context::tls_server};
};

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

ReplayServer::ReplayServer(asio::io_context& io, const web::Recording& recording, const web::Matcher& matcher,
                           CertificateAuthority& ca, std::ostream& log)
    : io_(io), recording_(recording), matcher_(matcher), ca_(ca), log_(log), tls_(std::make_unique<TlsContext>()) {
  SSL_CTX* ctx = tls_->ctx.native_handle();
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  SSL_CTX_set_tlsext_servername_callback(ctx, on_servername);
  SSL_CTX_set_tlsext_servername_arg(ctx, &ca_);
  SSL_CTX_set_alpn_select_cb(ctx, on_alpn, nullptr);
}

ReplayServer::~ReplayServer() = default;

void ReplayServer::listen() {
  for (const web::Origin& o : web::origins(recording_)) {
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
        std::make_shared<Http1Session<tcp::socket>>(std::make_unique<tcp::socket>(std::move(socket)), *this,
                                                    web::Scheme::kHttp, l.local)
            ->read();
    }
    accept(l);
  });
}

ReplayServer::Served ReplayServer::answer(web::Scheme scheme, const tcp::endpoint& local, const std::string& host,
                                          const std::string& method, const std::string& target) {
  const std::string address = local.address().to_string();
  const web::Exchange* e = matcher_.match(scheme, address, local.port(), host, method, target);
  // HEAD is answered with what GET would get (its headers only) when it was not recorded itself.
  if (!e && method == "HEAD") e = matcher_.match(scheme, address, local.port(), host, "GET", target);
  // A HAR file records an aborted request with status 0: no client could read it, so it becomes a 502.
  if (e && (e->response.status < 100 || e->response.status > 999)) {
    log_ << "unservable: status " << e->response.status << " recorded for " << method << ' ' << host << target
         << std::endl;
    return {502, nullptr, &kUnservable};
  }
  if (e) return {e->response.status, &e->response.headers, &e->response.body};
  const bool https = scheme == web::Scheme::kHttps;
  const bool default_port = local.port() == (https ? 443 : 80);
  const std::string shown_host = host.empty() ? address : host;
  log_ << "unmatched: " << method << ' ' << (https ? "https://" : "http://")
       << (shown_host.find(':') != std::string::npos ? "[" + shown_host + "]" : shown_host)
       << (default_port ? "" : ":" + std::to_string(local.port())) << target << std::endl;
  return {404, nullptr, &kNotFound};
}

}  // namespace tracemod::webserve
