#include "probe/prober.hh"

#include <poll.h>
#include <time.h>

#include <algorithm>
#include <iostream>
#include <map>
#include <sstream>

#include "config.h"
#include "probe/probe.pb.h"
#include "util/delimited.hh"
#include "util/error.hh"
#include "util/signals.hh"

namespace tracemod::probe {
namespace {

constexpr Nanos kFlushEvery = 1000 * kMillisecond;

class Prober {
 public:
  Prober(const ProbeConfig& c, EchoSocket& socket, DelimitedWriter& out)
      : c_(c), socket_(socket), out_(out), start_(monotonic_now()), next_tick_(start_) {}
  std::string run();

 private:
  struct Pending {
    Echo echo;
    Nanos deadline;
    bool device_stamp = false;  // its send time is when the device sent it, the best the kernel gives
  };
  void send(uint32_t index, uint32_t size);
  void tick(Nanos now);
  void on_replies();
  void expire(Nanos now);
  void finish(Pending& p);
  Nanos wake_at() const;
  bool sending() const { return !stopped_ && (c_.duration == 0 || next_tick_ < start_ + c_.duration); }

  const ProbeConfig& c_;
  EchoSocket& socket_;
  DelimitedWriter& out_;
  Nanos start_, next_tick_, last_flush_ = 0;
  uint64_t seq_ = 0, triplet_ = 0, replies_ = 0;
  int64_t open_triplet_ = -1;  // the triplet whose small echo may still start its pair
  bool stopped_ = false;
  std::string reason_ = "duration";
  std::map<uint64_t, Pending> pending_;
  std::vector<EchoSocket::Sent> sent_;
  std::vector<EchoSocket::Reply> got_;
  std::vector<Nanos> small_rtts_;
};

void Prober::send(uint32_t index, uint32_t size) {
  Pending p;
  p.echo.set_seq(seq_);
  p.echo.set_triplet(triplet_ - 1);
  p.echo.set_index(index);
  p.echo.set_size(size);
  const Nanos at = socket_.send(seq_, size);
  p.echo.set_send_ns(at);
  p.deadline = at + c_.timeout;
  pending_.emplace(seq_++, std::move(p));
}

// A new triplet starts with its small echo; ticks missed (the process was stopped) are not made up.
void Prober::tick(Nanos now) {
  ++triplet_;
  open_triplet_ = static_cast<int64_t>(triplet_ - 1);
  send(0, c_.small);
  while (next_tick_ <= now) next_tick_ += c_.interval;
}

void Prober::on_replies() {
  sent_.clear();
  got_.clear();
  socket_.receive(sent_, got_);
  for (const EchoSocket::Sent& s : sent_) {
    auto it = pending_.find(s.seq);
    // The device's stamp is the later and truer one; the queueing layer's stands in only until it comes.
    if (it == pending_.end() || it->second.device_stamp) continue;
    it->second.echo.set_send_ns(s.at);
    it->second.echo.set_send_kernel(true);
    it->second.device_stamp = s.device;
  }
  for (const EchoSocket::Reply& r : got_) {
    auto it = pending_.find(r.seq);
    if (it == pending_.end() || it->second.echo.replied()) continue;  // too late, or a duplicate
    Echo& e = it->second.echo;
    e.set_replied(true);
    e.set_recv_ns(std::max(r.at, e.send_ns()));
    ++replies_;
    // The pair goes out on the small echo's reply, if its triplet is still the latest one.
    const bool opens_pair = e.index() == 0 && static_cast<int64_t>(e.triplet()) == open_triplet_ && !stopped_;
    if (e.index() == 0) small_rtts_.push_back(e.recv_ns() - e.send_ns());
    finish(it->second);
    pending_.erase(it);
    if (opens_pair) {
      open_triplet_ = -1;
      send(1, c_.large);
      send(2, c_.large);
    }
  }
}

void Prober::finish(Pending& p) {
  ProbeEntry entry;
  *entry.mutable_echo() = p.echo;
  out_.write(entry);
}

void Prober::expire(Nanos now) {
  for (auto it = pending_.begin(); it != pending_.end();) {
    if (it->second.deadline > now) {
      ++it;
      continue;
    }
    finish(it->second);
    it = pending_.erase(it);
  }
  if (now - last_flush_ >= kFlushEvery) {
    out_.flush();
    last_flush_ = now;
  }
}

Nanos Prober::wake_at() const {
  Nanos t = last_flush_ + kFlushEvery;
  if (sending()) t = std::min(t, next_tick_);
  for (const auto& [seq, p] : pending_) t = std::min(t, p.deadline);
  return t;
}

std::string Prober::run() {
  const SignalFd signals = block_stop_signals();
  for (;;) {
    Nanos now = monotonic_now();
    if (sending() && now >= next_tick_) tick(now);
    expire(now);
    if (!sending() && pending_.empty()) break;
    const Nanos wait = std::max<Nanos>(0, wake_at() - monotonic_now());
    const timespec timeout{static_cast<time_t>(wait / 1000000000), static_cast<long>(wait % 1000000000)};
    pollfd fds[2] = {{socket_.fd(), POLLIN | POLLERR, 0}, {signals.get(), POLLIN, 0}};
    if (ppoll(fds, 2, &timeout, nullptr) < 0 && errno != EINTR) throw_errno("poll", errno);
    if (fds[1].revents && signals.take()) {
      if (stopped_) break;  // the second signal: stop at once
      stopped_ = true;
      reason_ = "interrupted";
    }
    on_replies();
  }
  for (auto& [seq, p] : pending_) finish(p);  // unanswered when stopped
  ProbeEntry footer;
  footer.mutable_footer()->set_echoes(seq_);
  footer.mutable_footer()->set_replies(replies_);
  footer.mutable_footer()->set_reason(reason_);
  out_.write(footer);
  out_.close();
  std::ostringstream s;
  s << "tm-probe: " << triplet_ << " triplets, " << seq_ << " echoes, " << replies_ << " answered ("
    << (seq_ ? 100.0 * static_cast<double>(seq_ - replies_) / static_cast<double>(seq_) : 0.0) << "% not)";
  if (!small_rtts_.empty()) {
    std::sort(small_rtts_.begin(), small_rtts_.end());
    s << "; round trip of the small echo: median " << static_cast<double>(small_rtts_[small_rtts_.size() / 2]) / 1e6
      << " ms";
  }
  s << "; raw record " << c_.output << " (" << reason_ << ")";
  return s.str();
}

}  // namespace

std::string run_probe(const ProbeConfig& c) {
  EchoSocket socket(c.method, c.address);
  for (auto [name, size] : {std::pair{"--small", c.small}, std::pair{"--large", c.large}})
    if (size < socket.min_size() || size > EchoSocket::kMaxSize)
      throw UsageError(std::string("invalid ") + name + " '" + std::to_string(size) + "': an echo over " +
                       (socket.ipv6() ? "IPv6" : "IPv4") + " is from " + std::to_string(socket.min_size()) + " to " +
                       std::to_string(EchoSocket::kMaxSize) + " IP bytes");
  if (c.small >= c.large)
    throw UsageError("--small must be smaller than --large: the delays of the two sizes give F and V");
  DelimitedWriter out(c.output);
  ProbeEntry entry;
  Header* h = entry.mutable_header();
  h->set_format_version(1);
  h->set_kind(kRawRecordKind);
  h->set_tool_version(PACKAGE_VERSION);
  h->set_target(c.target);
  h->set_address(c.address.text());
  h->set_method(socket.method_name());
  h->set_ipv6(socket.ipv6());
  h->set_small_bytes(c.small);
  h->set_large_bytes(c.large);
  h->set_interval_ns(c.interval);
  h->set_timeout_ns(c.timeout);
  timespec wall;
  clock_gettime(CLOCK_REALTIME, &wall);
  h->set_start_unix_ns(static_cast<int64_t>(wall.tv_sec) * 1000000000 + wall.tv_nsec);
  out.write(entry);
  if (!c.quiet)
    std::cerr << "tm-probe: probing " << c.target << " (" << c.address.text() << ") by " << socket.method_name() << ": "
              << c.small << " then 2 x " << c.large << " bytes every " << static_cast<double>(c.interval) / 1e9
              << " s\n";
  return Prober(c, socket, out).run();
}

}  // namespace tracemod::probe
