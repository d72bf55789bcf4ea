// What every fuzz target shares. A target is one file defining LLVMFuzzerTestOneInput: it hands the input to a
// parser as a user's file would reach it and accepts a clean refusal (tracemod's Error, UsageError included).
// Anything else is a bug the target reports by crashing: a sanitizer report, a signal, an exception of another
// type (uncaught, so std::terminate), a hang (libFuzzer's -timeout), or a property checked with FUZZ_CHECK.
//
// Built two ways (fuzz/README.md): with libFuzzer (clang, --enable-fuzzing) to search for new inputs, and with
// fuzz/driver.cc's main in the normal build, where `make check` feeds it every seed and regression input.
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>
#include <string_view>
#include <thread>

#include "util/error.hh"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace tracemod::fuzz {

// A property of what the parser returned: false aborts with the condition, file and line.
#define FUZZ_CHECK(cond)                                                                 \
  do {                                                                                   \
    if (!(cond)) {                                                                       \
      std::fprintf(stderr, "%s:%d: FUZZ_CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                                      \
    }                                                                                    \
  } while (0)

inline std::string_view text(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// The input split at its first newline: "NAME\nREST" -> ("NAME", "REST"); no newline: (all, "").
inline std::pair<std::string, std::string> first_line(std::string_view in) {
  const size_t nl = in.find('\n');
  if (nl == std::string_view::npos) return {std::string(in), ""};
  return {std::string(in.substr(0, nl)), std::string(in.substr(nl + 1))};
}

// A private directory for the files a parser reads or a writer makes, removed when the process exits normally
// (a crashed run leaves its /tmp/tm-fuzz.* behind).
inline const std::string& scratch_dir() {
  static const std::string dir = [] {
    const char* tmp = getenv("TMPDIR");
    std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/tm-fuzz.XXXXXX";
    if (!mkdtemp(pattern.data())) {
      std::perror("mkdtemp");
      std::abort();
    }
    static std::string removed_at_exit = pattern;
    std::atexit([] {
      std::error_code ignored;
      std::filesystem::remove_all(removed_at_exit, ignored);
    });
    return pattern;
  }();
  return dir;
}

// Writes DATA to scratch_dir()/NAME (replacing it) and returns the path: for parsers that read a path.
inline std::string write_file(const std::string& name, const uint8_t* data, size_t size) {
  const std::string path = scratch_dir() + "/" + name;
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) {
    std::perror(path.c_str());
    std::abort();
  }
  for (size_t done = 0; done < size;) {
    const ssize_t n = ::write(fd, data + done, size - done);
    if (n <= 0) {
      std::perror(path.c_str());
      std::abort();
    }
    done += static_cast<size_t>(n);
  }
  ::close(fd);
  return path;
}

// Runs F; a tracemod Error (UsageError included) is a clean refusal and returns false. Any other exception
// propagates out of LLVMFuzzerTestOneInput, which ends the process: a bug.
template <typename F>
bool accepted(F f) {
  try {
    f();
    return true;
  } catch (const Error&) {
    return false;
  }
}

// A connected pair of stream sockets, for code that speaks over a socket: no listener, no port, no network
// namespace, and nothing else can connect. [0] goes to the code under test, [1] stays with the target. (AF_UNIX:
// asio's tcp::socket takes one with assign(), and its reads, writes and shutdowns are a TCP socket's.)
inline std::array<int, 2> socket_pair() {
  std::array<int, 2> fds{};
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds.data()) != 0) {
    std::perror("socketpair");
    std::abort();
  }
  return fds;
}

// The target's end of a socket pair, played on a thread of its own for code that blocks on the other end: it
// writes SEND, then shuts its sending side (the input has ended), and reads until the other end closes, so
// neither side can wait on the other. received() joins the thread; the destructor closes FD.
class Peer {
 public:
  Peer(int fd, std::string send) : fd_(fd), send_(std::move(send)) {
    ::fcntl(fd_, F_SETFL, ::fcntl(fd_, F_GETFL) | O_NONBLOCK);
    thread_ = std::thread([this] { run(); });
  }
  ~Peer() {
    if (thread_.joinable()) thread_.join();
    ::close(fd_);
  }
  Peer(const Peer&) = delete;
  Peer& operator=(const Peer&) = delete;

  // Everything the other end wrote, once it has closed.
  const std::string& received() {
    if (thread_.joinable()) thread_.join();
    return received_;
  }

 private:
  void run() {
    size_t sent = 0;
    if (send_.empty()) ::shutdown(fd_, SHUT_WR);
    for (;;) {
      pollfd p{fd_, static_cast<short>(POLLIN | (sent < send_.size() ? POLLOUT : 0)), 0};
      if (::poll(&p, 1, -1) < 0 && errno != EINTR) return;
      if (sent < send_.size() && (p.revents & (POLLOUT | POLLERR | POLLHUP))) {
        const ssize_t n = ::send(fd_, send_.data() + sent, send_.size() - sent, MSG_NOSIGNAL);
        if (n > 0) sent += static_cast<size_t>(n);
        if (n < 0 && errno != EAGAIN && errno != EINTR) sent = send_.size();  // the other end is gone
        if (sent == send_.size()) ::shutdown(fd_, SHUT_WR);
      }
      if (!(p.revents & (POLLIN | POLLHUP | POLLERR))) continue;
      char buf[65536];
      const ssize_t n = ::read(fd_, buf, sizeof buf);
      if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) return;
      if (n > 0) received_.append(buf, static_cast<size_t>(n));
    }
  }

  int fd_;
  std::string send_, received_;
  std::thread thread_;
};

}  // namespace tracemod::fuzz
