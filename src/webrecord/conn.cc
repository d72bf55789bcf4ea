#include "webrecord/conn.hh"

#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace tracemod::webrecord {
namespace {

constexpr size_t kReadSize = 64 * 1024;

}  // namespace

size_t Conn::read(std::string& out) {
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

bool Conn::write(std::string_view data) {
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

void Conn::shutdown() {
  if (ssl_) SSL_shutdown(ssl_.get());
  if (fd_.valid()) ::shutdown(fd_.get(), SHUT_RDWR);
}

void Conn::reset() {
  const linger abort{1, 0};
  setsockopt(fd_.get(), SOL_SOCKET, SO_LINGER, &abort, sizeof abort);
  fd_.reset();
}

}  // namespace tracemod::webrecord
