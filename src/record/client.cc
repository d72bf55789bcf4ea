// `tm-record client`: connects the feedback path, presents the token, then sends and/or records.
#include <sys/socket.h>
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

// The server may still be starting: retry while nobody listens, until TIMEOUT.
FileDescriptor connect_feedback(const SocketAddress& to, const std::string& device, Nanos timeout) {
  const Nanos deadline = monotonic_now() + timeout;
  for (;;) {
    try {
      return connect_stream(to, device, 2000);
    } catch (const Error&) {
      if (monotonic_now() >= deadline) throw;
    }
    usleep(100000);
  }
}

}  // namespace

int run_client(const ClientConfig& c) {
  const SocketAddress data_to = resolve("server address", c.server, c.data_port);
  const SocketAddress feedback_to = parse_endpoint(
      "--feedback", c.feedback.empty() ? "[" + c.server + "]:" + std::to_string(kDefaultFeedbackPort) : c.feedback,
      c.server);
  if (c.up && c.down)
    say("warning: --direction both saturates both directions at once; on Wi-Fi they interfere (downlink loss "
        "up to 80%): record one direction at a time there");
  ControlStream control(connect_feedback(feedback_to, c.feedback_dev, c.connect_timeout));
  Control hello;
  *hello.mutable_hello() = make_hello(c);
  hello.mutable_hello()->set_ipv6(data_to.is_ipv6());
  control.send(hello);
  control.drain(5000);
  const Control answer = control.receive(10000, "the server at " + feedback_to.text());
  if (answer.has_reject()) throw Error("the server refused: " + answer.reject().reason());
  if (!answer.has_welcome()) throw Error("the server at " + feedback_to.text() + " does not speak tm-record");

  FileDescriptor data = udp_socket(data_to.family(), c.data_dev);
  check_syscall("connect the data socket to " + data_to.text(), connect(data.get(), data_to.get(), data_to.length));
  // Until now Ctrl-C simply ends the client: there is nothing to keep yet.
  const SignalFd signals = block_stop_signals();
  SessionSetup s;
  s.session = answer.welcome().session();
  s.send = c.up;
  s.send_up = true;
  s.receive = c.down;
  s.data_fd = data.get();
  s.data_connected = true;
  s.data_ipv6 = data_to.is_ipv6();
  s.probe = true;  // the server learns our data address (through any NAT) from these
  s.ip_packet_bytes = c.ip_packet_bytes;
  s.duration = c.duration;
  s.window = c.window;
  s.max_rate_bps = c.max_rate_bps;
  s.feedback_silence = c.feedback_silence;
  s.output = c.output;
  s.quiet = c.quiet;
  s.signal_fd = signals.get();
  if (!c.quiet)
    say("recording " + directions(c.up, c.down) + " for " + seconds_text(c.duration) + " s: data to " + data_to.text() +
        ", feedback via " + feedback_to.text());
  return run_session(s, control);
}

}  // namespace tracemod::record
