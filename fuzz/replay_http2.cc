// The replay server's HTTP/2 (nghttp2's server session in webserve/http2.cc): the input as the bytes a client
// sends on one connection from its first (the preface), to a small recording (fuzz/replay.hh). Each stream whose
// request the input ends (as a second nghttp2 server session reads the same bytes) and that the client did not
// reset gets response headers, unless the connection failed; the server's frames are whole, its header blocks
// decode, each response's begin with :status, and no name or value holds an upper-case letter (names), CR, LF
// or NUL.
#include <nghttp2/nghttp2.h>

#include <set>

#include "replay.hh"

using namespace tracemod;

namespace {

using boost::asio::ip::tcp;

// What a second server session makes of the input: the streams whose request ended, and those the client reset.
struct Witness {
  std::set<int32_t> requests, ended, reset;
  bool failed = false;  // the session refused the bytes or ended the connection
};

int on_begin_headers(nghttp2_session*, const nghttp2_frame* frame, void* user) {
  if (frame->hd.type == NGHTTP2_HEADERS && frame->headers.cat == NGHTTP2_HCAT_REQUEST)
    static_cast<Witness*>(user)->requests.insert(frame->hd.stream_id);
  return 0;
}

int on_frame_recv(nghttp2_session*, const nghttp2_frame* frame, void* user) {
  auto& w = *static_cast<Witness*>(user);
  const bool ends = (frame->hd.type == NGHTTP2_HEADERS || frame->hd.type == NGHTTP2_DATA) &&
                    (frame->hd.flags & NGHTTP2_FLAG_END_STREAM);
  if (ends && w.requests.count(frame->hd.stream_id)) w.ended.insert(frame->hd.stream_id);
  if (frame->hd.type == NGHTTP2_RST_STREAM) w.reset.insert(frame->hd.stream_id);
  if (frame->hd.type == NGHTTP2_GOAWAY) w.failed = true;  // the client's: nothing more need be answered
  return 0;
}

Witness witness(const std::string& input) {
  Witness w;
  nghttp2_session_callbacks* cb = nullptr;
  nghttp2_session_callbacks_new(&cb);
  nghttp2_session_callbacks_set_on_begin_headers_callback(cb, on_begin_headers);
  nghttp2_session_callbacks_set_on_frame_recv_callback(cb, on_frame_recv);
  nghttp2_session* session = nullptr;
  nghttp2_session_server_new(&session, cb, &w);
  nghttp2_session_callbacks_del(cb);
  const nghttp2_settings_entry settings[] = {{NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, 256}};  // the server's
  nghttp2_submit_settings(session, NGHTTP2_FLAG_NONE, settings, 1);
  const ssize_t n = nghttp2_session_mem_recv(session, reinterpret_cast<const uint8_t*>(input.data()), input.size());
  // A connection error makes the session send GOAWAY and stop answering: what it had not answered is lost. The
  // session wants to read no more only once that GOAWAY is sent, so what it has to send is taken first.
  const uint8_t* sent = nullptr;
  while (n >= 0 && nghttp2_session_mem_send(session, &sent) > 0) {
  }
  w.failed = w.failed || n < 0 || !nghttp2_session_want_read(session);
  nghttp2_session_del(session);
  return w;
}

// One header block of the server's, decoded with the state of those before it: the response's fields.
void check_block(nghttp2_hd_inflater* inflater, const std::string& block) {
  const auto* in = reinterpret_cast<const uint8_t*>(block.data());
  size_t left = block.size();
  bool first = true;
  for (;;) {
    nghttp2_nv nv;
    int flags = 0;
    const ssize_t n = nghttp2_hd_inflate_hd2(inflater, &nv, &flags, in, left, 1);
    FUZZ_CHECK(n >= 0);
    in += n;
    left -= static_cast<size_t>(n);
    if (flags & NGHTTP2_HD_INFLATE_EMIT) {
      const std::string_view name(reinterpret_cast<const char*>(nv.name), nv.namelen);
      const std::string_view value(reinterpret_cast<const char*>(nv.value), nv.valuelen);
      FUZZ_CHECK(!first || name == ":status");
      first = false;
      for (char c : name) FUZZ_CHECK(!(c >= 'A' && c <= 'Z') && c != '\r' && c != '\n' && c != '\0');
      for (char c : value) FUZZ_CHECK(c != '\r' && c != '\n' && c != '\0');
    }
    if (flags & NGHTTP2_HD_INFLATE_FINAL) break;
    FUZZ_CHECK((flags & NGHTTP2_HD_INFLATE_EMIT) || left > 0);  // a block the server cut short
  }
  nghttp2_hd_inflate_end_headers(inflater);
  FUZZ_CHECK(left == 0 && !first);
}

// The server's frames: whole, header blocks decoded. Returns the streams given response headers.
std::set<int32_t> responses(std::string_view out) {
  nghttp2_hd_inflater* inflater = nullptr;
  nghttp2_hd_inflate_new(&inflater);
  std::set<int32_t> answered;
  std::string block;
  while (!out.empty()) {
    FUZZ_CHECK(out.size() >= 9);
    const auto* h = reinterpret_cast<const uint8_t*>(out.data());
    const size_t length = size_t{h[0]} << 16 | size_t{h[1]} << 8 | h[2];
    const uint8_t type = h[3], flags = h[4];
    const int32_t stream =
        static_cast<int32_t>((uint32_t{h[5]} << 24 | uint32_t{h[6]} << 16 | uint32_t{h[7]} << 8 | h[8]) & 0x7fffffff);
    FUZZ_CHECK(out.size() >= 9 + length);
    if (type == NGHTTP2_HEADERS || type == NGHTTP2_CONTINUATION) {
      FUZZ_CHECK(!(flags & (NGHTTP2_FLAG_PADDED | NGHTTP2_FLAG_PRIORITY)));  // the server sends neither
      block.append(out.substr(9, length));
      if (type == NGHTTP2_HEADERS) answered.insert(stream);
      if (flags & NGHTTP2_FLAG_END_HEADERS) {
        check_block(inflater, block);
        block.clear();
      }
    }
    out.remove_prefix(9 + length);
  }
  FUZZ_CHECK(block.empty());
  nghttp2_hd_inflate_del(inflater);
  return answered;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input(fuzz::text(data, size));
  const std::string out =
      fuzz::converse(input, web::Scheme::kHttps, true, tcp::endpoint{boost::asio::ip::make_address("192.0.2.1"), 443});
  const std::set<int32_t> answered = responses(out);
  const Witness w = witness(input);
  if (w.failed) return 0;
  for (int32_t stream : w.ended) FUZZ_CHECK(answered.count(stream) || w.reset.count(stream));
  return 0;
}
