#include "webrecord/opaque.hh"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <thread>

namespace tracemod::webrecord {
namespace {

bool send_all(int fd, const char* data, size_t size) {
  while (size > 0) {
    const ssize_t n = ::send(fd, data, size, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

void copy(int from, int to) {
  char buf[64 * 1024];
  for (;;) {
    const ssize_t n = ::read(from, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n == 0) {
      ::shutdown(to, SHUT_WR);
      return;
    }
    if (n < 0 || !send_all(to, buf, static_cast<size_t>(n))) {
      // Both sockets shut: the other direction's blocked read returns, and it ends too.
      ::shutdown(from, SHUT_RDWR);
      ::shutdown(to, SHUT_RDWR);
      return;
    }
  }
}

}  // namespace

void relay_bytes(int client, int origin) {
  std::thread back(copy, origin, client);
  copy(client, origin);
  back.join();
}

}  // namespace tracemod::webrecord
