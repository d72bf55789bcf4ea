#include "webrecord/proxy.hh"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "certs/certs.hh"
#include "util/error.hh"
#include "util/file_descriptor.hh"
#include "util/signals.hh"
#include "web/writer.hh"
#include "webrecord/conn.hh"
#include "webrecord/http1_relay.hh"
#include "webrecord/http2_relay.hh"
#include "webrecord/opaque.hh"
#include "webrecord/opening.hh"
#include "webrecord/tally.hh"

#ifndef SO_ORIGINAL_DST
#define SO_ORIGINAL_DST 80
#endif
#ifndef IP6T_SO_ORIGINAL_DST
#define IP6T_SO_ORIGINAL_DST 80
#endif

namespace tracemod::webrecord {
namespace {

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

struct SslCtxFree {
  void operator()(SSL_CTX* c) const { SSL_CTX_free(c); }
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

class Recorder;

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
  web::RawExchange exchange_base() const;
  Exchanges exchanges();  // to the recorder
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
};

class Recorder {
 public:
  explicit Recorder(const ProxyConfig& config)
      : config_(config), ca_(certs::CertificateAuthority::load_or_create(config.dir)), writer_(config.dir) {
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
  certs::CertificateAuthority& ca() { return ca_; }
  bool verbose() const { return config_.verbose; }
  void unrecorded(Unrecorded why) { tally_.unrecorded(why); }
  uint64_t max_body() const { return config_.max_body; }

  // An exchange relayed whole but not recorded, as a body of it went over --max-body: said at once, verbose or not.
  void too_large(const web::RawExchange& e) {
    say(e.host + ":" + std::to_string(e.port) + ": " + e.request.first_line.substr(0, e.request.first_line.rfind(' ')) +
        " -> " + e.response.first_line + ": a body over --max-body (" + std::to_string(config_.max_body) +
        " bytes): relayed, not recorded");
  }

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
  certs::CertificateAuthority ca_;
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

web::RawExchange Relay::exchange_base() const {
  web::RawExchange e;
  e.address = address_;
  e.port = port_;
  e.scheme = https_ ? web::Scheme::kHttps : web::Scheme::kHttp;
  e.host = sni_.empty() ? address_ : sni_;
  e.protocol = protocol_;
  return e;
}

Exchanges Relay::exchanges() {
  return {recorder_.max_body(), [this](const web::RawExchange& e) { recorder_.record(e); },
          [this](const web::RawExchange& e) { recorder_.too_large(e); }};
}

std::optional<Unrecorded> Relay::relay_http1() {
  return webrecord::relay_http1(client_, *origin_, exchange_base(), exchanges());
}

std::optional<Unrecorded> Relay::relay_http2() {
  return webrecord::relay_http2(client_.ssl(), origin_->ssl(), exchange_base(), exchanges());
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
