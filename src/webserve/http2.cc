#include "webserve/http2.hh"

#include <nghttp2/nghttp2.h>

#include <array>
#include <boost/asio/write.hpp>
#include <chrono>
#include <cstring>
#include <unordered_map>
#include <vector>

namespace tracemod::webserve::detail {
namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;

// What the session gathers of one request stream, and then what it answers with.
struct Stream {
  std::string method, path, authority, host;
  std::vector<web::Header> headers;  // the request's, pseudo-headers but :authority left out
  Served served{};
  size_t offset = 0;                       // of the body sent so far
  std::vector<std::string> names, values;  // the response's headers, lower-cased
  Clock::time_point start;
};

// A larger write lets TLS fill its records; the cap keeps one connection from buffering a whole large body.
constexpr size_t kWriteBatch = 256 * 1024;

template <class AsyncStream>
class Http2Session : public std::enable_shared_from_this<Http2Session<AsyncStream>> {
 public:
  Http2Session(std::unique_ptr<AsyncStream> stream, ReplayServer& server, tcp::endpoint local)
      : stream_(std::move(stream)), server_(server), local_(std::move(local)) {}
  ~Http2Session() { nghttp2_session_del(session_); }
  using std::enable_shared_from_this<Http2Session>::shared_from_this;  // a dependent base's: named, not found

  void start() {
    nghttp2_session_callbacks* cb = nullptr;
    nghttp2_session_callbacks_new(&cb);
    nghttp2_session_callbacks_set_on_begin_headers_callback(cb, on_begin_headers);
    nghttp2_session_callbacks_set_on_header_callback(cb, on_header);
    nghttp2_session_callbacks_set_on_frame_recv_callback(cb, on_frame_recv);
    nghttp2_session_callbacks_set_on_frame_send_callback(cb, on_frame_send);
    nghttp2_session_callbacks_set_on_stream_close_callback(cb, on_stream_close);
    const int rv = nghttp2_session_server_new(&session_, cb, this);
    nghttp2_session_callbacks_del(cb);
    if (rv != 0) return close();
    const nghttp2_settings_entry settings[] = {{NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, 256}};
    nghttp2_submit_settings(session_, NGHTTP2_FLAG_NONE, settings, 1);
    flush();
    read();
  }

 private:
  static Http2Session& of(void* user_data) { return *static_cast<Http2Session*>(user_data); }

  // The session owns its streams (nghttp2_session_del does not report the ones still open).
  static int on_begin_headers(nghttp2_session* session, const nghttp2_frame* frame, void* user_data) {
    if (frame->hd.type != NGHTTP2_HEADERS || frame->headers.cat != NGHTTP2_HCAT_REQUEST) return 0;
    std::unique_ptr<Stream>& s = of(user_data).streams_[frame->hd.stream_id];
    s = std::make_unique<Stream>();
    nghttp2_session_set_stream_user_data(session, frame->hd.stream_id, s.get());
    return 0;
  }

  static int on_header(nghttp2_session* session, const nghttp2_frame* frame, const uint8_t* name, size_t namelen,
                       const uint8_t* value, size_t valuelen, uint8_t, void*) {
    auto* s = static_cast<Stream*>(nghttp2_session_get_stream_user_data(session, frame->hd.stream_id));
    if (!s) return 0;
    const std::string_view n(reinterpret_cast<const char*>(name), namelen);
    std::string v(reinterpret_cast<const char*>(value), valuelen);
    if (n == ":method")
      s->method = std::move(v);
    else if (n == ":path")
      s->path = std::move(v);
    else if (n == ":authority")
      s->authority = std::move(v);
    else if (n == "host")
      s->host = v;
    if (n.empty() || n[0] != ':') s->headers.push_back({std::string(n), std::move(v)});
    return 0;
  }

  static int on_frame_recv(nghttp2_session* session, const nghttp2_frame* frame, void* user_data) {
    const bool request_ends = (frame->hd.type == NGHTTP2_HEADERS || frame->hd.type == NGHTTP2_DATA) &&
                              (frame->hd.flags & NGHTTP2_FLAG_END_STREAM);
    if (!request_ends) return 0;
    auto* s = static_cast<Stream*>(nghttp2_session_get_stream_user_data(session, frame->hd.stream_id));
    if (s) of(user_data).respond(frame->hd.stream_id, *s);
    return 0;
  }

  // The response's last frame is on its way out: its time is taken when the write holding it completes.
  static int on_frame_send(nghttp2_session* session, const nghttp2_frame* frame, void* user_data) {
    if (!(frame->hd.flags & NGHTTP2_FLAG_END_STREAM)) return 0;
    if (auto* s = static_cast<Stream*>(nghttp2_session_get_stream_user_data(session, frame->hd.stream_id)))
      of(user_data).finishing_.push_back(s->start);
    return 0;
  }

  static int on_stream_close(nghttp2_session* session, int32_t stream_id, uint32_t, void* user_data) {
    nghttp2_session_set_stream_user_data(session, stream_id, nullptr);
    of(user_data).streams_.erase(stream_id);
    return 0;
  }

  static ssize_t read_body(nghttp2_session*, int32_t, uint8_t* buf, size_t length, uint32_t* flags,
                           nghttp2_data_source* source, void*) {
    auto* s = static_cast<Stream*>(source->ptr);
    const std::string& body = *s->served.body;
    const size_t n = std::min(length, body.size() - s->offset);
    std::memcpy(buf, body.data() + s->offset, n);
    s->offset += n;
    if (s->offset == body.size()) *flags |= NGHTTP2_DATA_FLAG_EOF;
    return static_cast<ssize_t>(n);
  }

  void respond(int32_t stream_id, Stream& s) {
    s.start = Clock::now();
    const std::string host = host_without_port(s.authority.empty() ? s.host : s.authority);
    const web::Asked asked{web::Scheme::kHttps, local_.port(), host, s.method, s.path, &s.headers};
    s.served = server_.answer(asked, local_);
    const bool bodiless = s.served.bodiless;
    const std::vector<nghttp2_nv> nv = response_headers(s, bodiless);
    nghttp2_data_provider body{};
    body.source.ptr = &s;
    body.read_callback = read_body;
    const bool send_body = !bodiless && s.method != "HEAD" && !s.served.body->empty();
    nghttp2_submit_response(session_, stream_id, nv.data(), nv.size(), send_body ? &body : nullptr);
  }

  // The headers as HTTP/2 allows them: lower-case, without connection-specific ones (the readers leave none, but
  // HTTP/2 makes one a protocol error), with a Content-Length of the body.
  static std::vector<nghttp2_nv> response_headers(Stream& s, bool bodiless) {
    add_header(s, ":status", std::to_string(s.served.status));
    for (const web::Header& h : s.served.headers) {
      std::string name = lower(h.name);
      if (!name.empty() && name[0] != ':' && !is_hop_by_hop(name) && name != "te") add_header(s, name, h.value);
    }
    if (!bodiless) add_header(s, "content-length", std::to_string(s.served.body->size()));
    std::vector<nghttp2_nv> nv;
    for (size_t i = 0; i < s.names.size(); ++i)
      nv.push_back({reinterpret_cast<uint8_t*>(s.names[i].data()), reinterpret_cast<uint8_t*>(s.values[i].data()),
                    s.names[i].size(), s.values[i].size(), NGHTTP2_NV_FLAG_NONE});
    return nv;
  }

  static void add_header(Stream& s, std::string name, std::string value) {
    s.names.push_back(std::move(name));
    s.values.push_back(std::move(value));
  }

  void read() {
    stream_->async_read_some(asio::buffer(in_), [self = shared_from_this()](boost::system::error_code ec, size_t n) {
      if (ec) return self->close();
      if (nghttp2_session_mem_recv(self->session_, self->in_.data(), n) < 0) return self->close();
      self->flush();
      if (self->open_) self->read();
    });
  }

  // Writes what nghttp2 has to send, one write at a time; closes once neither side has more to say.
  void flush() {
    if (writing_ || !open_) return;
    out_.clear();
    while (out_.size() < kWriteBatch) {
      const uint8_t* data = nullptr;
      const ssize_t n = nghttp2_session_mem_send(session_, &data);
      if (n < 0) return close();
      if (n == 0) break;
      out_.append(reinterpret_cast<const char*>(data), n);
    }
    if (out_.empty()) {
      if (!nghttp2_session_want_read(session_) && !nghttp2_session_want_write(session_)) close();
      return;
    }
    writing_ = true;
    in_write_.swap(finishing_);
    finishing_.clear();
    asio::async_write(*stream_, asio::buffer(out_), [self = shared_from_this()](boost::system::error_code ec, size_t) {
      self->writing_ = false;
      const Clock::time_point now = Clock::now();
      for (const Clock::time_point start : self->in_write_) self->server_.record_time((now - start).count());
      self->in_write_.clear();
      if (ec) return self->close();
      self->flush();
    });
  }

  void close() {
    if (!open_) return;
    open_ = false;
    boost::system::error_code ignored;
    stream_->lowest_layer().shutdown(tcp::socket::shutdown_both, ignored);
    stream_->lowest_layer().close(ignored);
  }

  std::unique_ptr<AsyncStream> stream_;
  ReplayServer& server_;
  tcp::endpoint local_;
  nghttp2_session* session_ = nullptr;
  bool open_ = true, writing_ = false;
  std::array<uint8_t, 16384> in_;
  std::string out_;
  std::vector<Clock::time_point> finishing_, in_write_;
  std::unordered_map<int32_t, std::unique_ptr<Stream>> streams_;
};

}  // namespace

template <class AsyncStream>
void start_http2(std::unique_ptr<AsyncStream> stream, ReplayServer& server, tcp::endpoint local) {
  std::make_shared<Http2Session<AsyncStream>>(std::move(stream), server, std::move(local))->start();
}

template void start_http2(std::unique_ptr<TlsStream>, ReplayServer&, tcp::endpoint);
template void start_http2(std::unique_ptr<tcp::socket>, ReplayServer&, tcp::endpoint);

}  // namespace tracemod::webserve::detail
