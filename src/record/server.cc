// `tm-record server`: one data socket and one feedback listener; sessions one after another.
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>

#include "record/config.hh"
#include "record/control.hh"
#include "record/handshake.hh"
#include "record/session.hh"
#include "util/error.hh"
#include "util/net.hh"
#include "util/signals.hh"

namespace tracemod::record {
namespace {

// Removes the Unix socket file when the server exits.
struct SocketFile {
  std::string path;
  ~SocketFile() {
    if (!path.empty()) unlink(path.c_str());
  }
};

bool ipv6_available() {
  const int fd = socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd >= 0) close(fd);
  return fd >= 0;  // not with ipv6.disable=1 on the kernel command line
}

// Every address: dual-stack where IPv6 exists (IPv4 clients then arrive as v4-mapped addresses).
std::string any_address() {
  return ipv6_available() ? "::" : "0.0.0.0";
}

SocketAddress data_address(const ServerConfig& c) {
  return resolve("--listen", c.listen.empty() ? any_address() : c.listen, c.data_port);
}

std::string session_prefix(const ServerConfig& c, unsigned n) {
  return n == 1 ? c.output : c.output + "-" + std::to_string(n);
}

// Waits for a client; returns an invalid descriptor when a stop signal came first (SIGNAL set).
FileDescriptor accept_client(int listener, int signal_fd, int* signal) {
  pollfd fds[2] = {{listener, POLLIN, 0}, {signal_fd, POLLIN, 0}};
  for (;;) {
    if (poll(fds, 2, -1) < 0 && errno != EINTR) throw_errno("poll", errno);
    if ((fds[1].revents & POLLIN) && (*signal = take_signal(signal_fd)) != 0) return FileDescriptor();
    if (!(fds[0].revents & POLLIN)) continue;
    const int fd = accept4(listener, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd >= 0) return FileDescriptor(fd);
    if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED) throw_errno("accept a feedback connection", errno);
  }
}

constexpr int kRefused = -1;  // not a session: a --once server keeps waiting for its client

// Reads the connection's first message into FIRST; returns why it is not a hello with the right token, or ""
// if it is. A connection that closes, stays silent or speaks another protocol is refused as a wrong token is,
// so that a port scan or a stray connection does not end a --once server.
std::string refusal_of(const ServerConfig& c, ControlStream& control, Control* first) {
  try {
    *first = control.receive(5000, "no hello");
  } catch (const Error& e) {
    return e.what();
  }
  return first->has_hello() ? check_hello(first->hello(), c.token) : "no hello";
}

int serve(const ServerConfig& c, ControlStream& control, int data_fd, int signal_fd, unsigned n) {
  Control first;
  const std::string refusal = refusal_of(c, control, &first);
  if (!refusal.empty()) {
    Control reject;
    reject.mutable_reject()->set_reason(refusal);
    control.send(reject);
    control.close_gracefully(1000);
    say("refused a client: " + refusal);
    return kRefused;
  }
  const Hello& hello = first.hello();
  SessionSetup s;
  s.is_server = true;
  s.session = random_session_id();
  s.send = hello.record_down();
  s.send_up = false;
  s.receive = hello.record_up();
  s.data_fd = data_fd;
  s.data_ipv6 = hello.ipv6();
  s.ip_packet_bytes = hello.ip_packet_bytes();
  s.duration = hello.duration_ns();
  s.window = window_from(hello.window());
  s.max_rate_bps = tighter_cap(c.max_rate_bps, hello.window().max_rate_bps());
  s.feedback_silence = c.feedback_silence;
  s.output = session_prefix(c, n);
  s.quiet = c.quiet;
  s.signal_fd = signal_fd;
  Control welcome;
  welcome.mutable_welcome()->set_session(s.session);
  control.send(welcome);
  say("session " + std::to_string(n) + ": recording " + directions(hello.record_up(), hello.record_down()) + " for " +
      seconds_text(s.duration) + " s");
  return run_session(s, control);
}

}  // namespace

int run_server(const ServerConfig& c) {
  const SignalFd signals = block_stop_signals();
  const SocketAddress data_at = data_address(c);
  const SocketAddress feedback_at =
      parse_endpoint("--feedback", c.feedback.empty() ? ":" + std::to_string(kDefaultFeedbackPort) : c.feedback,
                     c.listen.empty() ? any_address() : c.listen);
  FileDescriptor data = udp_socket(data_at.family(), c.data_dev);
  check_syscall("bind the data socket to " + data_at.text(), bind(data.get(), data_at.get(), data_at.length));
  FileDescriptor listener = listen_stream(feedback_at, c.feedback_dev);
  SocketFile file;
  if (feedback_at.family() == AF_UNIX) file.path = feedback_at.text();
  say("server ready: data on UDP " + data_at.text() + ", feedback on " + feedback_at.text());
  for (unsigned n = 1;;) {
    int signal = 0;
    FileDescriptor client = accept_client(listener.get(), signals.get(), &signal);
    if (signal) return 128 + signal;
    ControlStream control(std::move(client));
    int status = 0;
    try {
      status = serve(c, control, data.get(), signals.get(), n);
    } catch (const Error& e) {
      say("session " + std::to_string(n) + ": " + e.what());
      status = 1;
    }
    if (status == kRefused) continue;
    if (c.once || status > 128) return status;
    ++n;
  }
}

}  // namespace tracemod::record
