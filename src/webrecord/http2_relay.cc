#include "webrecord/http2_relay.hh"

#include <fcntl.h>
#include <nghttp2/nghttp2.h>
#include <poll.h>

#include <boost/beast/http/status.hpp>
#include <cerrno>
#include <cstring>
#include <memory>
#include <ostream>  // first: Beast's status.hpp streams, and includes only <iosfwd>
#include <string>
#include <utility>
#include <vector>

namespace tracemod::webrecord {
namespace {

namespace http = boost::beast::http;

constexpr size_t kWriteBatch = 256 * 1024;

struct Stream {
  int32_t client_id = 0, origin_id = -1;
  std::vector<std::pair<std::string, std::string>> request, response;  // as received, pseudo-headers included
  std::string request_body, response_body;                             // all of it, for the record
  std::string to_origin, to_client;                                    // received, not yet passed on
  bool request_ended = false, response_ended = false, response_submitted = false, final_headers = false;
  bool informational = false;  // the origin's headers being read are a 1xx's, not passed on
  bool recorded = false;
  bool over = false;  // a body went over the limit: relayed on, neither body kept
  int status = 0;
};

struct Side {
  SSL* ssl;
  int fd;
  nghttp2_session* session = nullptr;
  std::string out;  // nghttp2's output not yet taken by TLS
};

class Http2Relay {
 public:
  Http2Relay(SSL* client, SSL* origin, const web::RawExchange& base, const Exchanges& out)
      : client_{client, SSL_get_fd(client), nullptr, {}},
        origin_{origin, SSL_get_fd(origin), nullptr, {}},
        base_(base),
        out_(out) {}
  ~Http2Relay() {
    nghttp2_session_del(client_.session);
    nghttp2_session_del(origin_.session);
  }

  std::optional<Unrecorded> run() {
    nghttp2_session_callbacks* cb = nullptr;
    nghttp2_session_callbacks_new(&cb);
    nghttp2_session_callbacks_set_on_begin_headers_callback(cb, on_begin_headers);
    nghttp2_session_callbacks_set_on_header_callback(cb, on_header);
    nghttp2_session_callbacks_set_on_frame_recv_callback(cb, on_frame_recv);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, on_data);
    nghttp2_session_callbacks_set_on_stream_close_callback(cb, on_stream_close);
    const bool made = nghttp2_session_server_new(&client_.session, cb, this) == 0 &&
                      nghttp2_session_client_new(&origin_.session, cb, this) == 0;
    nghttp2_session_callbacks_del(cb);
    if (!made) return Unrecorded::kCutShort;
    const nghttp2_settings_entry to_client[] = {{NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, 100}};
    const nghttp2_settings_entry to_origin[] = {{NGHTTP2_SETTINGS_ENABLE_PUSH, 0}};
    nghttp2_submit_settings(client_.session, NGHTTP2_FLAG_NONE, to_client, 1);
    nghttp2_submit_settings(origin_.session, NGHTTP2_FLAG_NONE, to_origin, 1);
    // Non-blocking from here: a write TLS could not take whole is retried from Side::out, which may have grown
    // (and moved) by then.
    for (Side* s : {&client_, &origin_}) {
      fcntl(s->fd, F_SETFL, fcntl(s->fd, F_GETFL) | O_NONBLOCK);
      SSL_set_mode(s->ssl, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    }
    loop();
    return outcome();
  }

 private:
  std::optional<Unrecorded> outcome() const {
    if (malformed_) return Unrecorded::kMalformed;
    bool over = false;
    for (const auto& s : streams_) {
      if (!s->recorded) return Unrecorded::kCutShort;
      over = over || s->over;
    }
    if (over) return Unrecorded::kTooLarge;
    return std::nullopt;
  }

  static Http2Relay& of(void* user_data) { return *static_cast<Http2Relay*>(user_data); }
  bool from_client(nghttp2_session* s) const { return s == client_.session; }

  static int on_begin_headers(nghttp2_session* session, const nghttp2_frame* frame, void* user_data) {
    Http2Relay& r = of(user_data);
    if (!r.from_client(session) || frame->hd.type != NGHTTP2_HEADERS || frame->headers.cat != NGHTTP2_HCAT_REQUEST)
      return 0;
    r.streams_.push_back(std::make_unique<Stream>());
    r.streams_.back()->client_id = frame->hd.stream_id;
    nghttp2_session_set_stream_user_data(session, frame->hd.stream_id, r.streams_.back().get());
    return 0;
  }

  static int on_header(nghttp2_session* session, const nghttp2_frame* frame, const uint8_t* name, size_t namelen,
                       const uint8_t* value, size_t valuelen, uint8_t, void* user_data) {
    auto* s = static_cast<Stream*>(nghttp2_session_get_stream_user_data(session, frame->hd.stream_id));
    if (!s || frame->hd.type != NGHTTP2_HEADERS) return 0;
    std::string n(reinterpret_cast<const char*>(name), namelen), v(reinterpret_cast<const char*>(value), valuelen);
    if (of(user_data).from_client(session)) {
      if (frame->headers.cat == NGHTTP2_HCAT_REQUEST) s->request.emplace_back(std::move(n), std::move(v));
      return 0;  // trailers are not relayed
    }
    if (s->final_headers) return 0;  // the origin's trailers
    if (n == ":status") {
      s->informational = !v.empty() && v[0] == '1';
      if (!s->informational) s->status = std::atoi(v.c_str());
    }
    if (!s->informational) s->response.emplace_back(std::move(n), std::move(v));
    return 0;
  }

  static int on_data(nghttp2_session* session, uint8_t, int32_t stream_id, const uint8_t* data, size_t len,
                     void* user_data) {
    Http2Relay& r = of(user_data);
    auto* s = static_cast<Stream*>(nghttp2_session_get_stream_user_data(session, stream_id));
    if (!s) return 0;
    const std::string_view bytes(reinterpret_cast<const char*>(data), len);
    const std::string& body = r.from_client(session) ? s->request_body : s->response_body;
    if (!s->over && body.size() + len > r.out_.max_body) {
      s->over = true;
      s->request_body.clear();
      s->request_body.shrink_to_fit();
      s->response_body.clear();
      s->response_body.shrink_to_fit();
    }
    if (r.from_client(session)) {
      if (!s->over) s->request_body.append(bytes);
      s->to_origin.append(bytes);
      if (s->origin_id >= 0) nghttp2_session_resume_data(r.origin_.session, s->origin_id);
    } else {
      if (!s->over) s->response_body.append(bytes);
      s->to_client.append(bytes);
      if (s->response_submitted) nghttp2_session_resume_data(r.client_.session, s->client_id);
    }
    return 0;
  }

  static int on_frame_recv(nghttp2_session* session, const nghttp2_frame* frame, void* user_data) {
    Http2Relay& r = of(user_data);
    auto* s = static_cast<Stream*>(nghttp2_session_get_stream_user_data(session, frame->hd.stream_id));
    if (!s) return 0;
    const bool ends = frame->hd.flags & NGHTTP2_FLAG_END_STREAM;
    const bool headers = frame->hd.type == NGHTTP2_HEADERS;
    if (r.from_client(session)) {
      if (ends) s->request_ended = true;
      if (headers && frame->headers.cat == NGHTTP2_HCAT_REQUEST) return r.submit_request(*s);
      if (ends && s->origin_id >= 0) nghttp2_session_resume_data(r.origin_.session, s->origin_id);
      return 0;
    }
    if (headers && !s->informational && !s->final_headers) {
      s->final_headers = true;
      if (ends) s->response_ended = true;
      r.submit_response(*s);
    } else if (ends) {
      s->response_ended = true;
      if (s->response_submitted) nghttp2_session_resume_data(r.client_.session, s->client_id);
    }
    if (s->response_ended) r.record(*s);
    return 0;
  }

  static int on_stream_close(nghttp2_session* session, int32_t stream_id, uint32_t error_code, void* user_data) {
    Http2Relay& r = of(user_data);
    auto* s = static_cast<Stream*>(nghttp2_session_get_stream_user_data(session, stream_id));
    if (!s) return 0;
    if (r.from_client(session)) {  // the client cancelled, or the response went out whole
      if (s->origin_id >= 0 && !s->response_ended)
        nghttp2_submit_rst_stream(r.origin_.session, NGHTTP2_FLAG_NONE, s->origin_id, NGHTTP2_CANCEL);
    } else if (!s->response_ended) {  // the origin reset the stream
      nghttp2_submit_rst_stream(r.client_.session, NGHTTP2_FLAG_NONE, s->client_id,
                                error_code ? error_code : uint32_t{NGHTTP2_INTERNAL_ERROR});
    }
    return 0;
  }

  static ssize_t read_pending(std::string& pending, bool ended, uint8_t* buf, size_t length, uint32_t* flags) {
    if (pending.empty() && !ended) return NGHTTP2_ERR_DEFERRED;
    const size_t n = std::min(length, pending.size());
    std::memcpy(buf, pending.data(), n);
    pending.erase(0, n);
    if (pending.empty() && ended) *flags |= NGHTTP2_DATA_FLAG_EOF;
    return static_cast<ssize_t>(n);
  }
  static ssize_t read_request(nghttp2_session*, int32_t, uint8_t* buf, size_t length, uint32_t* flags,
                              nghttp2_data_source* source, void*) {
    auto* s = static_cast<Stream*>(source->ptr);
    return read_pending(s->to_origin, s->request_ended, buf, length, flags);
  }
  static ssize_t read_response(nghttp2_session*, int32_t, uint8_t* buf, size_t length, uint32_t* flags,
                               nghttp2_data_source* source, void*) {
    auto* s = static_cast<Stream*>(source->ptr);
    return read_pending(s->to_client, s->response_ended, buf, length, flags);
  }

  static std::vector<nghttp2_nv> nv_of(std::vector<std::pair<std::string, std::string>>& headers) {
    std::vector<nghttp2_nv> nv;
    for (auto& [n, v] : headers)
      nv.push_back({reinterpret_cast<uint8_t*>(n.data()), reinterpret_cast<uint8_t*>(v.data()), n.size(), v.size(),
                    NGHTTP2_NV_FLAG_NONE});
    return nv;
  }

  int submit_request(Stream& s) {
    const std::vector<nghttp2_nv> nv = nv_of(s.request);
    nghttp2_data_provider body{};
    body.source.ptr = &s;
    body.read_callback = read_request;
    s.origin_id =
        nghttp2_submit_request(origin_.session, nullptr, nv.data(), nv.size(), s.request_ended ? nullptr : &body, &s);
    if (s.origin_id < 0)
      nghttp2_submit_rst_stream(client_.session, NGHTTP2_FLAG_NONE, s.client_id, NGHTTP2_REFUSED_STREAM);
    return 0;
  }

  void submit_response(Stream& s) {
    const std::vector<nghttp2_nv> nv = nv_of(s.response);
    nghttp2_data_provider body{};
    body.source.ptr = &s;
    body.read_callback = read_response;
    nghttp2_submit_response(client_.session, s.client_id, nv.data(), nv.size(), s.response_ended ? nullptr : &body);
    s.response_submitted = true;
  }

  void record(Stream& s) {
    web::RawExchange e = base_;
    std::string method, path, authority;
    std::vector<web::Header> headers;
    for (const auto& [n, v] : s.request) {
      if (n == ":method")
        method = v;
      else if (n == ":path")
        path = v;
      else if (n == ":authority")
        authority = v;
      else if (n[0] != ':')
        headers.push_back({n, v});
    }
    if (!authority.empty()) {
      headers.insert(headers.begin(), {"Host", authority});
      const size_t colon = authority.rfind(':');
      const bool has_port = colon != std::string::npos && authority.find(']', colon) == std::string::npos;
      std::string host = has_port ? authority.substr(0, colon) : authority;
      if (!host.empty() && host[0] == '[') host = host.substr(1, host.size() - 2);
      for (char& c : host) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      e.host = host;
    }
    e.request = {method + " " + path + " HTTP/1.1", std::move(headers), std::move(s.request_body)};
    std::string reason(http::obsolete_reason(static_cast<http::status>(s.status)));
    if (reason.empty() || reason[0] == '<') reason = "Unknown";
    e.response.first_line = "HTTP/1.1 " + std::to_string(s.status) + " " + reason;
    for (const auto& [n, v] : s.response)
      if (n[0] != ':') e.response.headers.push_back({n, v});
    e.response.body = std::move(s.response_body);
    s.request_body.clear();
    s.response_body.clear();
    s.recorded = true;
    if (!s.over)
      out_.record(e);
    else if (out_.too_large)
      out_.too_large(e);
  }

  // TLS's bytes into the session; false once the side has ended.
  bool pump_in(Side& side) {
    char buf[16384];
    for (;;) {
      const int n = SSL_read(side.ssl, buf, sizeof buf);
      if (n > 0) {
        if (nghttp2_session_mem_recv(side.session, reinterpret_cast<const uint8_t*>(buf), n) < 0) {
          malformed_ = true;
          return false;
        }
        continue;
      }
      const int err = SSL_get_error(side.ssl, n);
      return err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE;
    }
  }

  // The session's bytes into TLS; false on an error.
  bool pump_out(Side& side) {
    for (;;) {
      while (side.out.size() < kWriteBatch) {
        const uint8_t* data = nullptr;
        const ssize_t n = nghttp2_session_mem_send(side.session, &data);
        if (n < 0) return false;
        if (n == 0) break;
        side.out.append(reinterpret_cast<const char*>(data), static_cast<size_t>(n));
      }
      if (side.out.empty()) return true;
      const int n = SSL_write(side.ssl, side.out.data(), static_cast<int>(side.out.size()));
      if (n <= 0) {
        const int err = SSL_get_error(side.ssl, n);
        return err == SSL_ERROR_WANT_WRITE || err == SSL_ERROR_WANT_READ;
      }
      side.out.erase(0, static_cast<size_t>(n));
      if (!side.out.empty()) return true;  // TLS takes no more now
    }
  }

  bool done(const Side& s) const {
    return !nghttp2_session_want_read(s.session) && !nghttp2_session_want_write(s.session) && s.out.empty();
  }

  void loop() {
    for (;;) {
      if (!pump_out(client_) || !pump_out(origin_)) return;
      if (done(client_) || done(origin_)) return;
      pollfd fds[2] = {{client_.fd, static_cast<short>(POLLIN | (client_.out.empty() ? 0 : POLLOUT)), 0},
                       {origin_.fd, static_cast<short>(POLLIN | (origin_.out.empty() ? 0 : POLLOUT)), 0}};
      if (poll(fds, 2, -1) < 0) {
        if (errno == EINTR) continue;
        return;
      }
      if ((fds[0].revents & (POLLIN | POLLHUP | POLLERR)) && !pump_in(client_)) return;
      if ((fds[1].revents & (POLLIN | POLLHUP | POLLERR)) && !pump_in(origin_)) return;
    }
  }

  Side client_, origin_;
  const web::RawExchange& base_;
  const Exchanges& out_;
  std::vector<std::unique_ptr<Stream>> streams_;
  bool malformed_ = false;  // a side's bytes refused by nghttp2
};

}  // namespace

std::optional<Unrecorded> relay_http2(SSL* client, SSL* origin, const web::RawExchange& base, const Exchanges& out) {
  return Http2Relay(client, origin, base, out).run();
}

}  // namespace tracemod::webrecord
