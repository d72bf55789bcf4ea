#include "record/session.hh"

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <vector>

#include "config.h"
#include "record/wire.hh"
#include "util/error.hh"
#include "util/signals.hh"

namespace tracemod::record {
namespace {

constexpr Nanos kSecond = 1000 * kMillisecond;
constexpr Nanos kHeartbeat = 250 * kMillisecond;  // so a silent feedback path means a dead peer
constexpr Nanos kProbeEvery = 200 * kMillisecond;
constexpr Nanos kFirstDataWithin = 10 * kSecond;
constexpr Nanos kSendRetry = kMillisecond;  // after ENOBUFS: the local queue is full
constexpr size_t kBatch = 64, kMaxDatagram = 9216;

// The sending half: window, rate cap and counters.
struct Sender {
  Sender(const WindowParams& w, uint64_t max_rate, uint32_t bytes) : window(w), limiter(max_rate, bytes) {}
  WindowControl window;
  RateLimiter limiter;
  uint64_t next_seq = 0, capped = 0, progress_acked = 0;
  // Seconds sending; of those, at the smallest window with the queue above the high threshold (crowded), or at
  // least above the low one (squeezed).
  uint64_t seconds = 0, crowded = 0, squeezed = 0;
  size_t changes_told = 0;                                     // threshold changes already announced
  bool stopped = false, waited_for_cap = false, held = false;  // held: by a full local queue
  Nanos retry_at = 0;
};

__attribute__((format(printf, 1, 2))) std::string fmt(const char* format, ...) {
  char buf[400];
  va_list args;
  va_start(args, format);
  std::vsnprintf(buf, sizeof buf, format, args);
  va_end(args);
  return buf;
}

// "20/80 ms": the window's low and high queueing-delay thresholds.
std::string thresholds_text(Nanos low, Nanos high) {
  return fmt("%g/%g ms", static_cast<double>(low) / 1e6, static_cast<double>(high) / 1e6);
}

// The kernel's receive time of a datagram, on CLOCK_MONOTONIC (it stamps CLOCK_REALTIME).
Nanos receive_time(msghdr& h, Nanos offset, Nanos now) {
  for (cmsghdr* c = CMSG_FIRSTHDR(&h); c; c = CMSG_NXTHDR(&h, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_TIMESTAMPNS) continue;
    timespec ts;
    std::memcpy(&ts, CMSG_DATA(c), sizeof ts);
    const Nanos t = static_cast<Nanos>(ts.tv_sec) * kSecond + ts.tv_nsec + offset;
    return std::clamp(t, now - kMaxStepBack, now);  // a reader allows an arrival this far out of order
  }
  return now;
}

Nanos realtime_offset() {
  timespec real;
  clock_gettime(CLOCK_REALTIME, &real);
  const Nanos mono = monotonic_now();
  return mono - (static_cast<Nanos>(real.tv_sec) * kSecond + real.tv_nsec);
}

class Session {
 public:
  Session(const SessionSetup& s, ControlStream& control);
  int run();

 private:
  Nanos next_deadline(Nanos now) const;
  void tick(Nanos now);
  void send_data(Nanos now);
  bool send_one(Nanos now);
  void send_probe();
  void receive_data();
  void on_datagram(const uint8_t* buf, size_t len, const sockaddr_storage& from, socklen_t from_len, Nanos at);
  void read_control(Nanos now);
  void handle_control(const Control& m, Nanos now);
  void on_feedback(const Feedback& f, Nanos now);
  void tell_threshold_changes();
  std::string threshold_history() const;
  void finish_recording(const std::string& reason);
  void stop_sending(const std::string& why);
  void flush_feedback();
  void progress(Nanos now);
  void note_crowding();
  void say(const std::string& line) const;
  void say_lines(const std::string& prefix, const std::string& text) const;
  bool done() const;
  void leave(const std::string& reason);
  bool sending() const { return sender_ && !sender_->stopped; }
  bool recording() const { return recorder_ && !recorder_->finished(); }
  bool send_v6() const { return s_.data_connected ? s_.data_ipv6 : peer_.is_ipv6(); }

  SessionSetup s_;
  ControlStream& control_;
  std::optional<Sender> sender_;
  std::unique_ptr<Recorder> recorder_;
  Control pending_;
  SocketAddress peer_;  // the client's data address, as the server sees it
  bool have_peer_ = false, ended_ = false;
  int status_ = 0;
  Nanos start_ = 0, last_heard_ = 0, next_heartbeat_ = 0, next_progress_ = 0, next_probe_ = 0;
  uint64_t progress_packets_ = 0;
  std::vector<uint8_t> packet_;
};

Session::Session(const SessionSetup& s, ControlStream& control) : s_(s), control_(control) {
  if (s.send) sender_.emplace(s.window, s.max_rate_bps, s.ip_packet_bytes);
  if (s.receive) {
    RecorderOptions o;
    o.prefix = s.output;
    o.up = s.is_server;  // the server receives up, the client down
    o.ip_packet_bytes = s.ip_packet_bytes;
    o.ipv6 = s.data_ipv6;
    o.duration = s.duration;
    o.tool_version = PACKAGE_VERSION;
    recorder_ = std::make_unique<Recorder>(o);
  }
  pending_.mutable_feedback()->set_up(s.is_server);
  packet_.assign(kMaxDatagram, 0);
}

void Session::say(const std::string& line) const {
  record::say(line);
}

void Session::say_lines(const std::string& prefix, const std::string& text) const {
  for (size_t begin = 0; begin < text.size();) {
    const size_t end = std::min(text.find('\n', begin), text.size());
    say(prefix + text.substr(begin, end - begin));
    begin = end + 1;
  }
}

bool Session::done() const {
  return ended_ || (!sending() && !recording());
}

int Session::run() {
  start_ = last_heard_ = next_heartbeat_ = next_probe_ = monotonic_now();
  next_progress_ = start_ + kSecond;
  while (!done()) {
    Nanos now = monotonic_now();
    tick(now);
    if (done()) break;
    const Nanos wait = std::max<Nanos>(0, next_deadline(now) - now);
    pollfd fds[3] = {{s_.data_fd, POLLIN, 0},
                     {control_.fd(), static_cast<short>(POLLIN | (control_.wants_write() ? POLLOUT : 0)), 0},
                     {s_.signal_fd, POLLIN, 0}};
    const timespec ts{static_cast<time_t>(wait / kSecond), static_cast<long>(wait % kSecond)};
    if (ppoll(fds, 3, &ts, nullptr) < 0 && errno != EINTR) throw_errno("ppoll", errno);
    now = monotonic_now();
    if (const int signal = (fds[2].revents & POLLIN) ? take_signal(s_.signal_fd) : 0) {
      status_ = 128 + signal;
      finish_recording("interrupted");
      leave("interrupted");
      break;
    }
    if (fds[0].revents & POLLIN) receive_data();
    if (fds[1].revents & (POLLIN | POLLHUP | POLLERR)) read_control(now);
    flush_feedback();
    control_.flush();
  }
  if (!ended_) leave("done");
  control_.close_gracefully(1000);
  return status_;
}

Nanos Session::next_deadline(Nanos now) const {
  Nanos t = std::min({next_heartbeat_, next_progress_, now + kSecond});
  if (sending()) {
    t = std::min({t, sender_->window.next_expiry(), last_heard_ + s_.feedback_silence});
    if (sender_->retry_at > now)
      t = std::min(t, sender_->retry_at);
    else if (sender_->window.can_send() && (have_peer_ || s_.data_connected))
      t = std::min(t, sender_->limiter.ready_at(s_.ip_packet_bytes, now));
  }
  if (recording()) t = std::min(t, recorder_->started() ? recorder_->end_time() : start_ + kFirstDataWithin);
  if (s_.probe) t = std::min(t, next_probe_);
  return t;
}

void Session::tick(Nanos now) {
  if (recording() && recorder_->started() && now >= recorder_->end_time()) finish_recording("duration");
  if (recording() && !recorder_->started() && now >= start_ + kFirstDataWithin) {
    say("error: no data packet arrived within 10 s: is UDP reaching the receiver (address, port, firewall)?");
    status_ = 1;
    finish_recording("no data");
  }
  if (sending()) {
    sender_->window.expire(now);
    if (now - last_heard_ >= s_.feedback_silence) {
      say("error: no feedback for " + fmt("%.1f", static_cast<double>(s_.feedback_silence) / 1e9) +
          " s: stopping the sender");
      status_ = 1;
      stop_sending("feedback silent");
      leave("feedback silent");
    } else {
      send_data(now);
    }
  }
  if (s_.probe && now >= next_probe_) send_probe(), next_probe_ = now + kProbeEvery;
  if (now >= next_heartbeat_) {
    Control beat;
    beat.mutable_feedback()->set_up(s_.is_server);
    control_.send(beat);
    next_heartbeat_ = now + kHeartbeat;
  }
  if (now >= next_progress_) {
    if (sending()) note_crowding();
    progress(now);
    next_progress_ += kSecond;
  }
}

void Session::send_data(Nanos now) {
  Sender& snd = *sender_;
  if (!s_.data_connected && !have_peer_) return;  // the server waits for the client's first probe
  if (now < snd.retry_at) return;
  while (snd.window.can_send() && !snd.stopped) {
    if (!snd.limiter.allows(s_.ip_packet_bytes, now)) {
      snd.waited_for_cap = true;
      return;
    }
    if (!send_one(now)) return;
    now = monotonic_now();
  }
}

bool Session::send_one(Nanos now) {
  Sender& snd = *sender_;
  DataHeader h;
  h.up = s_.send_up;
  h.session = s_.session;
  h.seq = snd.next_seq;
  h.send_ns = now;
  encode(h, packet_.data());
  const size_t len = udp_payload(s_.ip_packet_bytes, send_v6());
  const ssize_t n = s_.data_connected ? ::send(s_.data_fd, packet_.data(), len, 0)
                                      : ::sendto(s_.data_fd, packet_.data(), len, 0, peer_.get(), peer_.length);
  if (n < 0) {
    if (errno == EAGAIN || errno == ENOBUFS || errno == EINTR)
      return snd.retry_at = now + kSendRetry, snd.held = true, false;
    if (errno == EMSGSIZE)
      throw Error("a " + std::to_string(s_.ip_packet_bytes) +
                  "-byte data packet is larger than the path MTU: give a smaller --packet-size");
    if (errno == ECONNREFUSED) throw Error("the receiver's UDP data port is closed (ICMP port unreachable)");
    throw_errno("send a data packet", errno);
  }
  const bool capped = std::exchange(snd.waited_for_cap, false);
  snd.window.on_sent(snd.next_seq++, now, std::exchange(snd.held, false));
  snd.limiter.take(s_.ip_packet_bytes);
  // The cap matters where it kept the queue short; with a deep queue the link never felt it.
  if (capped && snd.window.queueing_delay() < snd.window.params().low_delay) ++snd.capped;
  return true;
}

void Session::send_probe() {
  DataHeader h;
  h.kind = PacketKind::kProbe;
  h.session = s_.session;
  h.send_ns = monotonic_now();
  encode(h, packet_.data());
  (void)::send(s_.data_fd, packet_.data(), kHeaderBytes, 0);  // best effort: the next one follows soon
}

void Session::receive_data() {
  // Static: 590 KiB is too much for the stack, and one session runs at a time.
  static uint8_t bufs[kBatch][kMaxDatagram];
  static char controls[kBatch][CMSG_SPACE(sizeof(timespec)) + 64];
  sockaddr_storage from[kBatch];
  iovec iov[kBatch];
  mmsghdr msgs[kBatch];
  for (int round = 0; round < 16; ++round) {
    for (size_t i = 0; i < kBatch; ++i) {
      iov[i] = {bufs[i], kMaxDatagram};
      msgs[i].msg_hdr = {&from[i], sizeof from[i], &iov[i], 1, controls[i], sizeof controls[i], 0};
    }
    const int n = recvmmsg(s_.data_fd, msgs, kBatch, MSG_DONTWAIT, nullptr);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
    if (n < 0 && errno == ECONNREFUSED) continue;  // ICMP for an early probe; the server will be there
    if (n < 0) throw_errno("receive data packets", errno);
    const Nanos now = monotonic_now(), offset = realtime_offset();
    for (int i = 0; i < n; ++i)
      on_datagram(bufs[i], msgs[i].msg_len, from[i], msgs[i].msg_hdr.msg_namelen,
                  receive_time(msgs[i].msg_hdr, offset, now));
    if (static_cast<size_t>(n) < kBatch) return;
  }
}

void Session::on_datagram(const uint8_t* buf, size_t len, const sockaddr_storage& from, socklen_t from_len, Nanos at) {
  const auto h = decode(buf, len);
  if (!h || h->session != s_.session) return;  // not ours: ignored
  if (s_.is_server) {
    std::memcpy(&peer_.storage, &from, from_len);
    peer_.length = from_len;
    have_peer_ = true;
  }
  if (h->kind != PacketKind::kData || h->up != s_.is_server || !recording()) return;
  SocketAddress source;
  std::memcpy(&source.storage, &from, from_len);
  const uint32_t size = static_cast<uint32_t>(len + (source.is_ipv6() ? kIpv6Overhead : kIpv4Overhead));
  if (!recorder_->on_arrival(h->seq, h->send_ns, at, size)) return finish_recording("duration");
  Feedback* f = pending_.mutable_feedback();
  f->add_seq(h->seq);
  f->add_send_ns(h->send_ns);
  f->add_recv_ns(at);
}

void Session::flush_feedback() {
  if (pending_.feedback().seq_size() == 0) return;
  control_.send(pending_);
  Feedback* f = pending_.mutable_feedback();
  f->clear_seq();
  f->clear_send_ns();
  f->clear_recv_ns();
}

void Session::read_control(Nanos now) {
  const bool open = control_.read_some();
  Control m;
  while (!done() && control_.next(&m)) handle_control(m, now);
  if (open || done()) return;
  say("the feedback connection closed before the peer said goodbye");
  status_ = 1;
  finish_recording("feedback connection lost");
  stop_sending("feedback connection lost");
  ended_ = true;
}

void Session::handle_control(const Control& m, Nanos now) {
  last_heard_ = now;
  if (m.has_feedback()) return on_feedback(m.feedback(), now);
  if (m.has_stop()) {
    if (sending()) {
      say_lines(s_.is_server ? "client: " : "server: ", m.stop().reason());
      stop_sending("receiver stopped");
    }
    return;
  }
  if (m.has_bye()) {
    finish_recording("peer left: " + m.bye().reason());
    stop_sending("peer left");
    ended_ = true;
  }
}

void Session::on_feedback(const Feedback& f, Nanos now) {
  if (!sender_ || f.up() != s_.send_up) return;
  for (int i = 0; i < f.seq_size(); ++i) sender_->window.on_ack(f.seq(i), f.send_ns(i), f.recv_ns(i), now);
  tell_threshold_changes();
}

void Session::tell_threshold_changes() {
  Sender& snd = *sender_;
  const std::vector<ThresholdChange>& changes = snd.window.changes();
  for (; snd.changes_told < changes.size(); ++snd.changes_told) {
    const ThresholdChange& c = changes[snd.changes_told];
    say(std::string(s_.send_up ? "up" : "down") +
        fmt(": %.1f s: thresholds now %s (--profile auto): the queue ran ", static_cast<double>(c.at - start_) / 1e9,
            thresholds_text(c.low, c.high).c_str()) +
        fmt("dry with the window full in a burst after a stall (packets had queued %.0f ms through it)",
            static_cast<double>(c.queued) / 1e6));
  }
}

// "20/80 ms (auto: 20/80 ms from the start, 320/1280 ms from 5.2 s)"
std::string Session::threshold_history() const {
  const WindowControl& w = sender_->window;
  std::string text = thresholds_text(w.params().low_delay, w.params().high_delay);
  if (!w.params().adaptive) return text;
  const WindowParams first = s_.window;
  text += " (auto: " + thresholds_text(first.low_delay, first.high_delay) + " from the start";
  for (const ThresholdChange& c : w.changes())
    text += ", " + thresholds_text(c.low, c.high) + fmt(" from %.1f s", static_cast<double>(c.at - start_) / 1e9);
  return text + ")";
}

void Session::finish_recording(const std::string& reason) {
  if (!recording()) return;
  flush_feedback();
  const std::string summary = recorder_->finish(reason);
  say_lines("", summary);
  Control stop;
  stop.mutable_stop()->set_up(s_.is_server);
  stop.mutable_stop()->set_reason(summary);
  control_.send(stop);
}

void Session::stop_sending(const std::string& why) {
  if (!sending()) return;
  Sender& snd = *sender_;
  snd.stopped = true;
  const double sent = static_cast<double>(snd.next_seq);
  const double capped = sent > 0 ? 100.0 * static_cast<double>(snd.capped) / sent : 0;
  say(std::string(s_.send_up ? "up" : "down") + ": sent " + std::to_string(snd.next_seq) + " packets (" + why +
      "), window " + std::to_string(snd.window.window()) + ", thresholds " + threshold_history() +
      fmt(", %.1f%% of sends waited for --max-rate with the queue short", capped));
  if (capped > 5) say("warning: --max-rate held the sender back: the trace may show that cap rather than the link");
  if (snd.seconds >= 3 && snd.crowded * 5 <= snd.seconds && snd.squeezed * 5 > snd.seconds) {
    // A window of min_window packets holds the queue above the low threshold on a link slower than this alone.
    const WindowParams& p = snd.window.params();
    const double mbps = p.min_window * s_.ip_packet_bytes * 8.0 / (static_cast<double>(p.low_delay) / 1e9) / 1e6;
    say(
        fmt("note: for %llu of %llu s the window was at its smallest with the queue above --low-delay: the link "
            "is slower than %.2f Mbit/s, or other traffic shares it and the trace holds only the recorder's "
            "share; the recorder cannot tell which",
            static_cast<unsigned long long>(snd.squeezed), static_cast<unsigned long long>(snd.seconds), mbps));
  }
  if (snd.seconds >= 3 && snd.crowded * 5 > snd.seconds)
    say("warning: for " + std::to_string(snd.crowded) + " of " + std::to_string(snd.seconds) +
        " s the queue stayed above --high-delay with the window at its smallest: other traffic shares the link, "
        "and the trace holds only the recorder's share");
}

void Session::note_crowding() {
  Sender& snd = *sender_;
  const WindowControl& w = snd.window;
  ++snd.seconds;
  if (w.window() != w.params().min_window) return;
  if (w.queueing_delay() > w.params().high_delay) ++snd.crowded;
  if (w.queueing_delay() >= w.params().low_delay) ++snd.squeezed;
}

void Session::leave(const std::string& reason) {
  if (ended_) return;
  ended_ = true;
  Control bye;
  bye.mutable_bye()->set_reason(reason);
  flush_feedback();
  control_.send(bye);
  stop_sending(reason);
}

void Session::progress(Nanos now) {
  if (s_.quiet) return;
  std::string line;
  if (sending()) {
    Sender& snd = *sender_;
    const double acked = static_cast<double>(snd.window.acked() - snd.progress_acked);
    snd.progress_acked = snd.window.acked();
    const double total = static_cast<double>(snd.window.acked() + snd.window.lost());
    line += std::string(s_.send_up ? "up" : "down") +
            fmt(" sending %5.1f s %7.2f Mbit/s loss %.2f%% ", static_cast<double>(now - start_) / 1e9,
                acked * s_.ip_packet_bytes * 8 / 1e6,
                total > 0 ? 100 * static_cast<double>(snd.window.lost()) / total : 0) +
            "window " + std::to_string(snd.window.window()) +
            fmt(" qdelay %.1f ms", static_cast<double>(snd.window.queueing_delay()) / 1e6) + " thresholds " +
            thresholds_text(snd.window.params().low_delay, snd.window.params().high_delay) +
            (snd.window.params().adaptive ? " (auto)" : "");
  }
  if (recording() && recorder_->started()) {
    const ArrivalStats& st = recorder_->stats();
    const double got = static_cast<double>(st.packets() - progress_packets_);
    progress_packets_ = st.packets();
    if (!line.empty()) line += " | ";
    line += std::string(s_.is_server ? "up" : "down") +
            fmt(" recording %5.1f s %7.2f Mbit/s loss %.2f%% qdelay %.1f ms",
                static_cast<double>(now - st.first()) / 1e9, got * s_.ip_packet_bytes * 8 / 1e6,
                st.expected() ? 100 * static_cast<double>(st.lost()) / static_cast<double>(st.expected()) : 0,
                static_cast<double>(st.queueing_delay()) / 1e6);
  }
  if (!line.empty()) say(line);
}

}  // namespace

void say(const std::string& line) {
  const std::string text = "tm-record: " + line + "\n";
  (void)!::write(STDERR_FILENO, text.data(), text.size());  // nothing to do if stderr is gone
}

std::string seconds_text(Nanos t) {
  return fmt("%g", static_cast<double>(t) / 1e9);
}

std::string directions(bool up, bool down) {
  return up && down ? "both directions" : up ? "up" : "down";
}

int run_session(const SessionSetup& setup, ControlStream& control) {
  Session session(setup, control);
  return session.run();
}

}  // namespace tracemod::record
