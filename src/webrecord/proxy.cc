#include "webrecord/proxy.hh"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/asio/buffer.hpp>
#include <boost/beast/http.hpp>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "util/error.hh"
#include "util/file_descriptor.hh"
#include "util/signals.hh"
#include "web/writer.hh"
#include "webrecord/http2_relay.hh"
#include "webrecord/opaque.hh"
#include "webrecord/opening.hh"
#include "webrecord/tally.hh"
#include "webserve/certs.hh"

#ifndef SO_ORIGINAL_DST
#define SO_ORIGINAL_DST 80
#endif
#ifndef IP6T_SO_ORIGINAL_DST
#define IP6T_SO_ORIGINAL_DST 80
#endif

namespace tracemod::webrecord {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;

constexpr size_t kReadSize = 64 * 1024;
// The protocols relayed: an origin is offered no other, so no client is given another.
constexpr std::string_view kRelayed[] = {"h2", "http/1.1"};

std::mutex log_mutex;
void say(const std::string& line) {
  const std::lock_guard<std::mutex> lock(log_mutex);
  std::cerr << "tm-webrecord: " << line << std::endl;
}

std::string ssl_error_text() {
  const unsigned long e = ERR_get_error();
  ERR_clear_error();
  if (!e) return "connection closed";
  char buf[256];
  ERR_error_string_n(e, buf, sizeof buf);
  return buf;
}

struct SslFree {
  void operator()(SSL* s) const { SSL_free(s); }
};
struct SslCtxFree {
  void operator()(SSL_CTX* c) const { SSL_CTX_free(c); }
};

// One side of a relay: a socket, with TLS on it or not. Blocking.
class Conn {
 public:
  explicit Conn(FileDescriptor fd) : fd_(std::move(fd)) {}
  int fd() const { return fd_.get(); }
  void set_ssl(SSL* ssl) { ssl_.reset(ssl); }
  SSL* ssl() const { return ssl_.get(); }

  // Bytes read into OUT (appended); 0 at the end of the stream (or an error).
  size_t read(std::string& out) {
    char buf[kReadSize];
    ssize_t n;
    if (ssl_) {
      n = SSL_read(ssl_.get(), buf, sizeof buf);
      if (n <= 0) return 0;
    } else {
      while ((n = ::read(fd_.get(), buf, sizeof buf)) < 0 && errno == EINTR) {
      }
      if (n <= 0) return 0;
    }
    out.append(buf, static_cast<size_t>(n));
    return static_cast<size_t>(n);
  }

  bool write(std::string_view data) {
    while (!data.empty()) {
      ssize_t n;
      if (ssl_) {
        n = SSL_write(ssl_.get(), data.data(), static_cast<int>(std::min<size_t>(data.size(), 1 << 30)));
        if (n <= 0) return false;
      } else {
        n = ::send(fd_.get(), data.data(), data.size(), MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
      }
      data.remove_prefix(static_cast<size_t>(n));
    }
    return true;
  }

  void shutdown() {
    if (ssl_) SSL_shutdown(ssl_.get());
    if (fd_.valid()) ::shutdown(fd_.get(), SHUT_RDWR);
  }

  // Closed with a reset, as a refused connection would be answered.
  void reset() {
    const linger abort{1, 0};
    setsockopt(fd_.get(), SOL_SOCKET, SO_LINGER, &abort, sizeof abort);
    fd_.reset();
  }

 private:
  FileDescriptor fd_;
  std::unique_ptr<SSL, SslFree> ssl_;
};

std::string address_text(const sockaddr_storage& sa, uint16_t& port) {
  char text[INET6_ADDRSTRLEN] = "";
  if (sa.ss_family == AF_INET) {
    const auto& a = reinterpret_cast<const sockaddr_in&>(sa);
    inet_ntop(AF_INET, &a.sin_addr, text, sizeof text);
    port = ntohs(a.sin_port);
  } else {
    const auto& a = reinterpret_cast<const sockaddr_in6&>(sa);
    inet_ntop(AF_INET6, &a.sin6_addr, text, sizeof text);
    port = ntohs(a.sin6_port);
  }
  return text;
}

// Where the client's connection was going before the shell's DNAT. False for one that came straight here: its
// original destination is the recorder itself, and relaying it would connect to ourselves, again and again.
bool original_destination(int fd, int family, sockaddr_storage& dst) {
  socklen_t len = sizeof dst;
  std::memset(&dst, 0, sizeof dst);
  const bool found = family == AF_INET ? getsockopt(fd, SOL_IP, SO_ORIGINAL_DST, &dst, &len) == 0
                                       : getsockopt(fd, SOL_IPV6, IP6T_SO_ORIGINAL_DST, &dst, &len) == 0;
  sockaddr_storage local{};
  socklen_t local_len = sizeof local;
  if (!found || getsockname(fd, reinterpret_cast<sockaddr*>(&local), &local_len) < 0) return false;
  uint16_t port = 0, local_port = 0;
  return address_text(dst, port) != address_text(local, local_port) || port != local_port;
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// "a.com:443" -> "a.com", "[::1]:8443" -> "::1".
std::string host_of(const std::string& authority) {
  if (!authority.empty() && authority[0] == '[') return lower(authority.substr(1, authority.find(']') - 1));
  const size_t colon = authority.find(':');
  return lower(colon != std::string::npos && authority.find(':', colon + 1) == std::string::npos
                   ? authority.substr(0, colon)
                   : authority);
}

class Recorder;

// How a message's relaying ended.
enum class Message { kWhole, kNone, kCut, kMalformed };  // kNone: the side ended before its first byte

// One client connection and its origin, on a thread of its own.
class Relay {
 public:
  Relay(Recorder& recorder, FileDescriptor client, sockaddr_storage dst)
      : recorder_(recorder), client_(std::move(client)), dst_(dst) {
    address_ = address_text(dst_, port_);
  }
  void run();

  // The TLS handshake's two callbacks (the client's ClientHello, its ALPN), with the relay as the SSL's data.
  static int on_client_hello(SSL* ssl, int* alert, void* arg);
  static int on_alpn(SSL* ssl, const unsigned char** out, unsigned char* outlen, const unsigned char* in,
                     unsigned int inlen, void* arg);

 private:
  std::optional<Unrecorded> relay();
  std::optional<Unrecorded> relay_tls();
  std::optional<Unrecorded> relay_http1();
  std::optional<Unrecorded> relay_http2();
  std::optional<Unrecorded> relay_opaque(Unrecorded why);
  bool connect_upstream();
  bool upstream_tls(const std::string& sni, const std::string& alpn_wire);
  bool relay_exchange(std::optional<Unrecorded>& why);
  template <bool isRequest>
  Message relay_message(Conn& from, std::string& buffer, Conn& to, http::parser<isRequest, http::string_body>& parser,
                        web::RawMessage& raw, std::string* held);
  web::RawExchange exchange_base() const;
  std::string where() const { return (sni_.empty() ? address_ : sni_) + ":" + std::to_string(port_); }

  Recorder& recorder_;
  Conn client_;
  std::optional<Conn> origin_;
  sockaddr_storage dst_;
  std::string address_;
  uint16_t port_ = 0;
  bool https_ = false;
  std::string sni_, protocol_ = "http/1.1";
  std::optional<Unrecorded> tls_failure_;  // why the ClientHello callback failed the client's handshake
  std::string from_client_, from_origin_;  // read, not yet parsed
};

class Recorder {
 public:
  explicit Recorder(const ProxyConfig& config)
      : config_(config), ca_(webserve::CertificateAuthority::load_or_create(config.dir)), writer_(config.dir) {
    server_.reset(SSL_CTX_new(TLS_server_method()));
    client_.reset(SSL_CTX_new(TLS_client_method()));
    if (!server_ || !client_) throw Error("TLS: " + ssl_error_text());
    SSL_CTX_set_client_hello_cb(server_.get(), Relay::on_client_hello, nullptr);
    SSL_CTX_set_alpn_select_cb(server_.get(), Relay::on_alpn, nullptr);
    SSL_CTX_set_mode(server_.get(), SSL_MODE_AUTO_RETRY);
    SSL_CTX_set_mode(client_.get(), SSL_MODE_AUTO_RETRY);
    if (config.insecure_upstream) {
      SSL_CTX_set_verify(client_.get(), SSL_VERIFY_NONE, nullptr);
    } else {
      SSL_CTX_set_verify(client_.get(), SSL_VERIFY_PEER, nullptr);
      const bool loaded = config.upstream_ca.empty()
                              ? SSL_CTX_set_default_verify_paths(client_.get()) == 1
                              : SSL_CTX_load_verify_locations(client_.get(), config.upstream_ca.c_str(), nullptr) == 1;
      if (!loaded) throw Error("upstream CA " + config.upstream_ca + ": " + ssl_error_text());
    }
  }

  SSL_CTX* server_ctx() { return server_.get(); }
  SSL_CTX* client_ctx() { return client_.get(); }
  webserve::CertificateAuthority& ca() { return ca_; }
  bool verbose() const { return config_.verbose; }
  void unrecorded(Unrecorded why) { tally_.unrecorded(why); }

  void record(const web::RawExchange& e) {
    const std::lock_guard<std::mutex> lock(write_mutex_);
    try {
      const std::string path = writer_.write(e);
      tally_.recorded();
      if (config_.verbose)
        say(path + ": " + e.request.first_line.substr(0, e.request.first_line.rfind(' ')) + " " + e.host + " -> " +
            e.response.first_line);
    } catch (const Error& err) {
      if (tally_.unwritten(err.what()))
        say(std::string("cannot record an exchange: ") + err.what() +
            "; the command goes on, but the recording is short and the run will fail");
    }
  }

  // At SIGTERM (the command has ended): a record being written is finished first and none begins after; then
  // the one line, and the exit: 1 if a record could not be written. The relays' threads end with the process.
  [[noreturn]] void finish() {
    write_mutex_.lock();
    say(tally_.summary(config_.dir));
    std::_Exit(tally_.failed() ? 1 : 0);
  }

 private:
  const ProxyConfig& config_;
  webserve::CertificateAuthority ca_;
  web::RecordWriter writer_;
  std::unique_ptr<SSL_CTX, SslCtxFree> server_, client_;
  std::mutex write_mutex_;
  Tally tally_;
};

// The wire form of an ALPN list, or of one extension's: each name with its length byte.
std::string alpn_wire_of(const unsigned char* p, size_t n, bool only_relayed) {
  std::string out;
  for (size_t i = 0; i < n;) {
    const size_t len = p[i];
    if (i + 1 + len > n) break;
    const std::string_view name(reinterpret_cast<const char*>(p + i + 1), len);
    bool relayed = !only_relayed;
    for (std::string_view r : kRelayed) relayed = relayed || name == r;
    if (relayed) out.append(reinterpret_cast<const char*>(p + i), 1 + len);
    i += 1 + len;
  }
  return out;
}

int Relay::on_client_hello(SSL* ssl, int* alert, void*) {
  auto* relay = static_cast<Relay*>(SSL_get_app_data(ssl));
  *alert = SSL_AD_INTERNAL_ERROR;
  const unsigned char* p = nullptr;
  size_t n = 0;
  // server_name: list length (2), type (1, 0 = host_name), name length (2), name.
  if (SSL_client_hello_get0_ext(ssl, TLSEXT_TYPE_server_name, &p, &n) == 1 && n > 5 && p[2] == 0) {
    const size_t len = (size_t{p[3]} << 8) | p[4];
    if (5 + len <= n) relay->sni_ = lower(std::string(reinterpret_cast<const char*>(p + 5), len));
  }
  std::string alpn;
  if (SSL_client_hello_get0_ext(ssl, TLSEXT_TYPE_application_layer_protocol_negotiation, &p, &n) == 1 && n > 2)
    alpn = alpn_wire_of(p + 2, n - 2, true);
  // Called again after a HelloRetryRequest: the origin's handshake is made once.
  if (!relay->origin_->ssl() && !relay->upstream_tls(relay->sni_, alpn)) {
    relay->tls_failure_ = Unrecorded::kOriginTls;
    return SSL_CLIENT_HELLO_ERROR;
  }
  const std::string name = relay->sni_.empty() ? relay->address_ : relay->sni_;
  try {
    if (SSL_use_certificate(ssl, relay->recorder_.ca().leaf(name)) != 1 ||
        SSL_use_PrivateKey(ssl, relay->recorder_.ca().leaf_key()) != 1)
      return SSL_CLIENT_HELLO_ERROR;
  } catch (const Error& e) {
    say(relay->where() + ": no certificate: " + e.what());
    return SSL_CLIENT_HELLO_ERROR;
  }
  return SSL_CLIENT_HELLO_SUCCESS;
}

// The origin's choice, if the client offered it; no ALPN if the origin chose none.
int Relay::on_alpn(SSL* ssl, const unsigned char** out, unsigned char* outlen, const unsigned char* in,
                   unsigned int inlen, void*) {
  auto* relay = static_cast<Relay*>(SSL_get_app_data(ssl));
  if (!relay->origin_->ssl()) return SSL_TLSEXT_ERR_NOACK;
  const unsigned char* chosen = nullptr;
  unsigned int chosen_len = 0;
  SSL_get0_alpn_selected(relay->origin_->ssl(), &chosen, &chosen_len);
  if (!chosen_len) return SSL_TLSEXT_ERR_NOACK;
  for (unsigned int i = 0; i < inlen;) {
    const unsigned int len = in[i];
    if (i + 1 + len > inlen) break;
    if (len == chosen_len && std::memcmp(in + i + 1, chosen, len) == 0) {
      *out = in + i + 1;
      *outlen = static_cast<unsigned char>(len);
      return SSL_TLSEXT_ERR_OK;
    }
    i += 1 + len;
  }
  return SSL_TLSEXT_ERR_ALERT_FATAL;
}

bool Relay::connect_upstream() {
  const int fd = ::socket(dst_.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  origin_.emplace(FileDescriptor(fd));
  const socklen_t len = dst_.ss_family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
  int rc;
  while ((rc = ::connect(fd, reinterpret_cast<const sockaddr*>(&dst_), len)) < 0 && errno == EINTR) {
  }
  if (rc < 0) {
    say(where() + ": cannot connect to the origin: " + std::strerror(errno));
    return false;
  }
  return true;
}

bool Relay::upstream_tls(const std::string& sni, const std::string& alpn_wire) {
  SSL* ssl = SSL_new(recorder_.client_ctx());
  if (!ssl) return false;
  origin_->set_ssl(ssl);
  SSL_set_fd(ssl, origin_->fd());
  if (!sni.empty()) {
    SSL_set_tlsext_host_name(ssl, sni.c_str());
    SSL_set1_host(ssl, sni.c_str());
  } else {
    X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), address_.c_str());
  }
  if (!alpn_wire.empty())
    SSL_set_alpn_protos(ssl, reinterpret_cast<const unsigned char*>(alpn_wire.data()),
                        static_cast<unsigned int>(alpn_wire.size()));
  if (SSL_connect(ssl) != 1) {
    const long verify = SSL_get_verify_result(ssl);
    say(where() + ": TLS with the origin failed: " +
        (verify != X509_V_OK ? std::string("certificate: ") + X509_verify_cert_error_string(verify)
                             : ssl_error_text()));
    return false;
  }
  const unsigned char* chosen = nullptr;
  unsigned int chosen_len = 0;
  SSL_get0_alpn_selected(ssl, &chosen, &chosen_len);
  if (chosen_len) protocol_.assign(reinterpret_cast<const char*>(chosen), chosen_len);
  return true;
}

// Reads one message from FROM through PARSER (Beast: the start line, the headers, the body's framing), and
// passes its bytes on to TO as they are parsed, unchanged. RAW gets the start line, the headers and the body's
// bytes as they came (chunk framing included). HELD, if given, gets the piece that completes the message
// instead of TO, so that the caller can record the exchange before the client has all of it.
template <bool isRequest>
Message Relay::relay_message(Conn& from, std::string& buffer, Conn& to,
                             http::parser<isRequest, http::string_body>& parser, web::RawMessage& raw,
                             std::string* held) {
  parser.body_limit(std::numeric_limits<std::uint64_t>::max());
  parser.header_limit(1 << 20);
  bool header_taken = false;
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
        if (header_taken)
          raw.body.append(taken);
        else
          raw.first_line = std::string(taken.substr(0, taken.find_first_of("\r\n")));
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

web::RawExchange Relay::exchange_base() const {
  web::RawExchange e;
  e.address = address_;
  e.port = port_;
  e.scheme = https_ ? web::Scheme::kHttps : web::Scheme::kHttp;
  e.host = sni_.empty() ? address_ : sni_;
  e.protocol = protocol_;
  return e;
}

// One exchange relayed and recorded (the response's last piece reaches the client after the record is
// written: a response the command has whole is in the recording). True to go on with the next; false once the
// connection is over, WHY set if something went unrecorded.
bool Relay::relay_exchange(std::optional<Unrecorded>& why) {
  web::RawExchange e = exchange_base();
  http::request_parser<http::string_body> request;
  if (const Message m = relay_message(client_, from_client_, *origin_, request, e.request, nullptr);
      m != Message::kWhole) {
    if (m != Message::kNone) why = m == Message::kMalformed ? Unrecorded::kMalformed : Unrecorded::kCutShort;
    return false;
  }
  const bool head = request.get().method() == http::verb::head;
  std::optional<http::response_parser<http::string_body>> response;
  std::string held;
  for (;;) {  // 1xx responses (100 Continue) are passed on, not recorded
    response.emplace();
    response->skip(head);
    e.response = {};
    const Message m = relay_message(*origin_, from_origin_, client_, *response, e.response, &held);
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
  recorder_.record(e);
  return client_.write(held) && request.get().keep_alive() && response->get().keep_alive();
}

std::optional<Unrecorded> Relay::relay_http1() {
  std::optional<Unrecorded> why;
  while (relay_exchange(why)) {
  }
  return why;
}

std::optional<Unrecorded> Relay::relay_http2() {
  return webrecord::relay_http2(client_.ssl(), origin_->ssl(), exchange_base(),
                                [this](const web::RawExchange& e) { recorder_.record(e); });
}

// The client's handshake held inside the ClientHello callback while the origin's is made (on_client_hello);
// then HTTP/2 or HTTP/1.1, as the origin chose.
std::optional<Unrecorded> Relay::relay_tls() {
  https_ = true;
  SSL* ssl = SSL_new(recorder_.server_ctx());
  if (!ssl) return Unrecorded::kClientTls;
  client_.set_ssl(ssl);
  SSL_set_app_data(ssl, this);
  SSL_set_fd(ssl, client_.fd());
  if (SSL_accept(ssl) != 1) {
    if (recorder_.verbose() && !tls_failure_) say(where() + ": TLS with the client failed: " + ssl_error_text());
    ERR_clear_error();
    return tls_failure_.value_or(Unrecorded::kClientTls);
  }
  return protocol_ == "h2" ? relay_http2() : relay_http1();
}

std::optional<Unrecorded> Relay::relay_opaque(Unrecorded why) {
  if (recorder_.verbose())
    say(where() + ": " + (why == Unrecorded::kH2c ? "HTTP/2 without TLS" : "not HTTP") +
        ": relayed as it was, not recorded");
  relay_bytes(client_.fd(), origin_->fd());
  return why;
}

// The origin is connected to at once, as the client asked (an unreachable one answers the client with a
// reset); then the opening says how the connection is relayed.
std::optional<Unrecorded> Relay::relay() {
  if (!connect_upstream()) {
    client_.reset();
    return Unrecorded::kUnreachable;
  }
  switch (wait_for_opening(client_.fd(), origin_->fd())) {
    case Opening::kClosed:
      return std::nullopt;
    case Opening::kTls:
      return relay_tls();
    case Opening::kHttp:
      return relay_http1();
    case Opening::kH2c:
      return relay_opaque(Unrecorded::kH2c);
    default:  // kOther, kOriginFirst
      return relay_opaque(Unrecorded::kNotHttp);
  }
}

void Relay::run() {
  if (const std::optional<Unrecorded> why = relay()) recorder_.unrecorded(*why);
  client_.shutdown();
  if (origin_) origin_->shutdown();
}

FileDescriptor listen_on(const std::string& address) {
  sockaddr_storage sa{};
  socklen_t len;
  if (address.find(':') == std::string::npos) {
    auto& a = reinterpret_cast<sockaddr_in&>(sa);
    a.sin_family = AF_INET;
    a.sin_port = htons(kProxyPort);
    if (inet_pton(AF_INET, address.c_str(), &a.sin_addr) != 1) throw Error("bad address " + address);
    len = sizeof a;
  } else {
    auto& a = reinterpret_cast<sockaddr_in6&>(sa);
    a.sin6_family = AF_INET6;
    a.sin6_port = htons(kProxyPort);
    if (inet_pton(AF_INET6, address.c_str(), &a.sin6_addr) != 1) throw Error("bad address " + address);
    len = sizeof a;
  }
  const int fd = ::socket(sa.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw_errno("socket", errno);
  FileDescriptor s(fd);
  const int on = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
  if (sa.ss_family == AF_INET6) {
    setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &on, sizeof on);
    setsockopt(fd, SOL_IP, IP_FREEBIND, &on, sizeof on);  // the address may still be tentative
  }
  const std::string where = address + " port " + std::to_string(kProxyPort);
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&sa), len) < 0) throw_errno("listen on " + where, errno);
  if (::listen(fd, 512) < 0) throw_errno("listen on " + where, errno);
  return s;
}

}  // namespace

void check_upstream_ca(const std::string& file) {
  std::unique_ptr<SSL_CTX, SslCtxFree> ctx(SSL_CTX_new(TLS_client_method()));
  if (!ctx || SSL_CTX_load_verify_locations(ctx.get(), file.c_str(), nullptr) != 1)
    throw Error(file + ": no CA certificate (PEM) in it: " + ssl_error_text());
}

void run_proxy(const ProxyConfig& config) {
  // Blocked before any relay's thread starts, so that they inherit the mask and only this one reads them.
  // SIGPIPE ignored: a write to a socket its peer closed is an error for that relay alone.
  const SignalFd stop = block_stop_signals();
  std::signal(SIGXFSZ, SIG_IGN);  // a file size limit fails the record's write (EFBIG), said, not a silent death
  Recorder recorder(config);
  std::vector<FileDescriptor> listeners;
  std::vector<pollfd> fds;
  std::vector<int> families;
  for (const std::string& a : config.addresses) {
    listeners.push_back(listen_on(a));
    fds.push_back({listeners.back().get(), POLLIN, 0});
    families.push_back(a.find(':') == std::string::npos ? AF_INET : AF_INET6);
  }
  if (fds.empty()) throw Error("no address to listen on");
  fds.push_back({stop.get(), POLLIN, 0});
  for (;;) {
    if (poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR) continue;
      throw_errno("poll", errno);
    }
    if (fds.back().revents & POLLIN) recorder.finish();
    for (size_t i = 0; i + 1 < fds.size(); ++i) {
      if (!(fds[i].revents & POLLIN)) continue;
      const int fd = ::accept4(fds[i].fd, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) continue;
      FileDescriptor client(fd);
      sockaddr_storage dst;
      if (!original_destination(fd, families[i], dst)) continue;  // not redirected: someone came here directly
      std::thread([&recorder, client = std::move(client), dst]() mutable {
        Relay(recorder, std::move(client), dst).run();
      }).detach();
    }
  }
}

}  // namespace tracemod::webrecord
