#include "webrecord/opening.hh"

#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>

#include "util/clock.hh"

namespace tracemod::webrecord {
namespace {

constexpr size_t kMaxMethod = 32;        // the longest registered method has 17 characters
constexpr size_t kPeekSize = 16 * 1024;  // a request line this long, still well formed, is taken for HTTP

Opening undecided(bool ended) {
  return ended ? Opening::kOther : Opening::kUndecided;
}

bool token_char(unsigned char c) {
  return std::isalnum(c) || (c && std::strchr("!#$%&'*+-.^_`|~", c));
}

bool visible(unsigned char c) {
  return c > 0x20 && c != 0x7f;
}

// What a request line's version says: HTTP/1.x, or HTTP/2's preface.
Opening of_version(std::string_view number) {
  return number[0] == '1' ? Opening::kHttp : number == "2.0" ? Opening::kH2c : Opening::kOther;
}

// The version that ends a request line, and the line's end: "HTTP/1.1\r\n" (or a bare "\n").
Opening version(std::string_view rest, bool ended) {
  constexpr std::string_view kShape = "HTTP/9.9\r\n";  // 9: a digit
  for (size_t i = 0; i < rest.size() && i < kShape.size(); ++i) {
    if (kShape[i] == '\r' && rest[i] == '\n') return of_version(rest.substr(5, 3));
    const bool digit = kShape[i] == '9' && std::isdigit(static_cast<unsigned char>(rest[i]));
    if (!digit && rest[i] != kShape[i]) return Opening::kOther;
  }
  return rest.size() < kShape.size() ? undecided(ended) : of_version(rest.substr(5, 3));
}

// METHOD SP TARGET SP VERSION CRLF: the method a token, the target visible characters.
Opening request_line(std::string_view b, bool ended) {
  size_t method = 0;
  while (method < b.size() && token_char(static_cast<unsigned char>(b[method]))) ++method;
  if (method > kMaxMethod) return Opening::kOther;
  if (method == b.size()) return undecided(ended);
  if (method == 0 || b[method] != ' ') return Opening::kOther;
  size_t target = method + 1;
  while (target < b.size() && visible(static_cast<unsigned char>(b[target]))) ++target;
  if (target == b.size()) return undecided(ended);
  if (target == method + 1 || b[target] != ' ') return Opening::kOther;
  return version(b.substr(target + 1), ended);
}

// A TLS record header: content type 22 (handshake), version 3.0 to 3.4.
Opening tls_header(std::string_view b, bool ended) {
  if (b.size() >= 2 && b[1] != 0x03) return Opening::kOther;
  if (b.size() >= 3) return static_cast<unsigned char>(b[2]) <= 4 ? Opening::kTls : Opening::kOther;
  return undecided(ended);
}

void set_low_water(int fd, int bytes) {
  setsockopt(fd, SOL_SOCKET, SO_RCVLOWAT, &bytes, sizeof bytes);
}

}  // namespace

Opening classify(std::string_view bytes, bool ended) {
  if (bytes.empty()) return ended ? Opening::kClosed : Opening::kUndecided;
  if (bytes[0] == 0x16) return tls_header(bytes, ended);
  return request_line(bytes, ended);
}

Opening wait_for_opening(int client, int origin) {
  char buf[kPeekSize];
  Nanos deadline = kNever;  // set by the first bytes
  for (size_t seen = 0;;) {
    // Poll wakes for the client only once it has sent more than what was seen (or closed): no busy loop.
    set_low_water(client, static_cast<int>(seen + 1));
    const Nanos now = monotonic_now();
    const int wait = deadline == kNever ? -1 : static_cast<int>(std::max<Nanos>(0, deadline - now) / kMillisecond);
    pollfd fds[2] = {{client, POLLIN | POLLRDHUP, 0}, {origin, POLLIN, 0}};
    const int ready = poll(fds, 2, wait);
    if (ready < 0 && errno == EINTR) continue;
    set_low_water(client, 1);  // the relay's reads must not wait for more
    if (ready < 0) return Opening::kClosed;
    if (fds[1].revents) return Opening::kOriginFirst;
    const ssize_t n = recv(client, buf, sizeof buf, MSG_PEEK | MSG_DONTWAIT);
    if (n < 0 && errno != EAGAIN && errno != EINTR) return Opening::kClosed;  // reset
    seen = n > 0 ? static_cast<size_t>(n) : 0;
    const bool ended = ready == 0 || n == 0 || (fds[0].revents & (POLLRDHUP | POLLHUP | POLLERR));
    const Opening o = classify(std::string_view(buf, seen), ended);
    if (o != Opening::kUndecided) return o;
    if (seen == sizeof buf) return Opening::kHttp;  // a request line longer than we look at: Beast judges it
    if (deadline == kNever) deadline = now + kFinishWaitMs * kMillisecond;
  }
}

}  // namespace tracemod::webrecord
