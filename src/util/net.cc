#include "util/net.hh"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "util/error.hh"
#include "util/parse.hh"

namespace tracemod {

bool SocketAddress::is_ipv6() const {
  if (family() != AF_INET6) return false;
  return !IN6_IS_ADDR_V4MAPPED(&reinterpret_cast<const sockaddr_in6*>(&storage)->sin6_addr);
}

std::string SocketAddress::text() const {
  char host[INET6_ADDRSTRLEN] = "?";
  if (family() == AF_UNIX) return reinterpret_cast<const sockaddr_un*>(&storage)->sun_path;
  if (family() == AF_INET) {
    auto* a = reinterpret_cast<const sockaddr_in*>(&storage);
    inet_ntop(AF_INET, &a->sin_addr, host, sizeof host);
    return std::string(host) + ":" + std::to_string(ntohs(a->sin_port));
  }
  auto* a = reinterpret_cast<const sockaddr_in6*>(&storage);
  inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof host);
  return "[" + std::string(host) + "]:" + std::to_string(ntohs(a->sin6_port));
}

SocketAddress resolve(const std::string& option, const std::string& host, uint16_t port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_DGRAM;
  hints.ai_flags = AI_ADDRCONFIG;
  addrinfo* found = nullptr;
  const int err = getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found);
  if (err != 0 && err != EAI_SYSTEM) {
    hints.ai_flags = 0;  // AI_ADDRCONFIG hides everything in a namespace with only loopback
    if (getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found) != 0) found = nullptr;
  }
  if (!found) throw UsageError("invalid " + option + " '" + host + "': " + gai_strerror(err));
  SocketAddress a;
  std::memcpy(&a.storage, found->ai_addr, found->ai_addrlen);
  a.length = found->ai_addrlen;
  freeaddrinfo(found);
  return a;
}

SocketAddress parse_endpoint(const std::string& option, const std::string& text, const std::string& default_host) {
  if (!text.empty() && text[0] == '/') {
    SocketAddress a;
    auto* un = reinterpret_cast<sockaddr_un*>(&a.storage);
    if (text.size() >= sizeof un->sun_path)
      throw UsageError("invalid " + option + " '" + text + "': a Unix socket path must be shorter than 108 bytes");
    un->sun_family = AF_UNIX;
    std::memcpy(un->sun_path, text.c_str(), text.size() + 1);
    a.length = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + text.size() + 1);
    return a;
  }
  const size_t colon = text.rfind(':');
  if (colon == std::string::npos)
    throw UsageError("invalid " + option + " '" + text + "': expected HOST:PORT, [IPV6]:PORT or /unix/socket/path");
  std::string host = text.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  if (host.empty()) host = default_host;
  return resolve(option, host, parse_port(option, text.substr(colon + 1)));
}

void bind_to_device(int fd, const std::string& device, const std::string& what) {
  if (device.empty()) return;
  check_syscall("bind the " + what + " socket to device " + device,
                setsockopt(fd, SOL_SOCKET, SO_BINDTODEVICE, device.c_str(), static_cast<socklen_t>(device.size())));
}

void set_nonblocking(int fd) {
  const int flags = static_cast<int>(check_syscall("fcntl F_GETFL", fcntl(fd, F_GETFL)));
  check_syscall("fcntl F_SETFL", fcntl(fd, F_SETFL, flags | O_NONBLOCK));
}

FileDescriptor udp_socket(int family, const std::string& device) {
  FileDescriptor fd(static_cast<int>(
      check_syscall("create the UDP data socket", socket(family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0))));
  const int one = 1, size = 8 << 20;
  check_syscall("enable receive timestamps", setsockopt(fd.get(), SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof one));
  setsockopt(fd.get(), SOL_SOCKET, SO_RCVBUF, &size, sizeof size);  // best effort: the kernel caps it
  setsockopt(fd.get(), SOL_SOCKET, SO_SNDBUF, &size, sizeof size);
  // A data packet must cross as one IP packet of the asked size: never fragment, say so instead.
  const int pmtu_v4 = IP_PMTUDISC_PROBE, pmtu_v6 = IPV6_PMTUDISC_PROBE;
  if (family == AF_INET6) {
    const int zero = 0;
    setsockopt(fd.get(), IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
    setsockopt(fd.get(), IPPROTO_IPV6, IPV6_MTU_DISCOVER, &pmtu_v6, sizeof pmtu_v6);
  }
  setsockopt(fd.get(), IPPROTO_IP, IP_MTU_DISCOVER, &pmtu_v4, sizeof pmtu_v4);
  bind_to_device(fd.get(), device, "data");
  return fd;
}

FileDescriptor connect_stream(const SocketAddress& to, const std::string& device, int timeout_ms) {
  FileDescriptor fd(static_cast<int>(
      check_syscall("create the feedback socket", socket(to.family(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0))));
  if (to.family() != AF_UNIX) {
    bind_to_device(fd.get(), device, "feedback");
    const int one = 1;
    setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  }
  if (connect(fd.get(), to.get(), to.length) != 0) {
    if (errno != EINPROGRESS && errno != EAGAIN) throw_errno("connect the feedback path to " + to.text(), errno);
    pollfd p{fd.get(), POLLOUT, 0};
    const int n = static_cast<int>(check_syscall("poll", poll(&p, 1, timeout_ms)));
    int err = ETIMEDOUT;
    socklen_t len = sizeof err;
    if (n == 1) getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &len);
    if (err != 0) throw_errno("connect the feedback path to " + to.text(), err);
  }
  return fd;
}

FileDescriptor listen_stream(const SocketAddress& at, const std::string& device) {
  FileDescriptor fd(static_cast<int>(
      check_syscall("create the feedback socket", socket(at.family(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0))));
  const int one = 1;
  if (at.family() == AF_UNIX) {
    const char* path = reinterpret_cast<const sockaddr_un*>(&at.storage)->sun_path;
    struct stat st;
    // A socket file left by a killed server is stale if nobody answers on it.
    if (lstat(path, &st) == 0 && S_ISSOCK(st.st_mode)) {
      FileDescriptor probe(static_cast<int>(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)));
      if (connect(probe.get(), at.get(), at.length) != 0 && errno == ECONNREFUSED) unlink(path);
    }
  } else {
    bind_to_device(fd.get(), device, "feedback");
    setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (at.family() == AF_INET6) {
      const int zero = 0;
      setsockopt(fd.get(), IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
    }
  }
  check_syscall("listen for feedback on " + at.text(), bind(fd.get(), at.get(), at.length));
  check_syscall("listen for feedback on " + at.text(), listen(fd.get(), 4));
  return fd;
}

}  // namespace tracemod
