#include "packet/event_loop.hh"

#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <iostream>

#include "util/command.hh"
#include "util/error.hh"

namespace tracemod {
namespace {

constexpr uint32_t kSignalTag = 2;

int wait_status(int status) {
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace

sigset_t shell_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGCHLD);
  for (int s : forwarded_signals()) sigaddset(&set, s);
  return set;
}

EventLoop::EventLoop(const std::string& tool, Ferry& ferry, PacketQueue* up, PacketQueue* down, pid_t init,
                     HostHelper* host)
    : tool_(tool), ferry_(ferry), init_(init), host_(host) {
  queues_[Ferry::kUplink] = up;
  queues_[Ferry::kDownlink] = down;
  sigset_t set = shell_signals();
  signals_ =
      FileDescriptor(static_cast<int>(check_syscall("signalfd", signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK))));
  epoll_ = FileDescriptor(static_cast<int>(check_syscall("epoll_create", epoll_create1(EPOLL_CLOEXEC))));
  watch(signals_.get(), kSignalTag);
  watch(ferry.fd_for_arrivals(Ferry::kUplink), Ferry::kUplink);
  watch(ferry.fd_for_arrivals(Ferry::kDownlink), Ferry::kDownlink);
}

int EventLoop::run() {
  for (;;) {
    epoll_event ev[4];
    const int n = wait(ev);
    for (int i = 0; i < n; ++i) {
      const uint32_t tag = ev[i].data.u32;
      if (tag == kSignalTag) {
        int status;
        if (on_signals(status)) return status;
      } else {
        auto d = static_cast<Ferry::Direction>(tag);
        if (ferry_.receive(d, *queues_[d]) > 0) last_arrival_ = monotonic_now();
      }
    }
    const Nanos now = monotonic_now();
    ferry_.release(Ferry::kUplink, *queues_[Ferry::kUplink], now);
    ferry_.release(Ferry::kDownlink, *queues_[Ferry::kDownlink], now);
    stop_if_finished(now);
  }
}

// A queue that can never release again (a trace played --once) ends the run: the command is asked to stop
// (SIGTERM through its init), and killed if it still runs a second later.
void EventLoop::stop_if_finished(Nanos now) {
  constexpr Nanos kGrace = 1000 * kMillisecond;
  if (kill_at_ == kNever) {
    for (int d : {Ferry::kUplink, Ferry::kDownlink}) {
      if (!queues_[d]->finished()) continue;
      std::cerr << tool_ << ": the " << (d == Ferry::kUplink ? "uplink" : "downlink")
                << " trace has ended (--once): stopping the command\n";
      kill(init_, SIGTERM);
      kill_at_ = now + kGrace;
      return;
    }
  } else if (now >= kill_at_) {
    kill(init_, SIGKILL);
    kill_at_ = now + kGrace;
  }
}

void EventLoop::watch(int fd, uint32_t tag) {
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u32 = tag;
  check_syscall("epoll_ctl", epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, fd, &ev));
}

// Sleeps until kSpinAhead before the next release, then polls without sleeping until it is due: timer
// wake-ups on a virtual machine overshoot by 25-150 us, more than the precision a delay line promises.
// Likewise, while traffic flows it polls for kBusyPoll after the last arrival before sleeping: a sleep and
// wake-up per burst costs more than the burst itself at multi-Gbit/s.
int EventLoop::wait(epoll_event* ev) {
  constexpr Nanos kSpinAhead = 150 * 1000, kBusyPoll = 50 * 1000;
  const Nanos now = monotonic_now();
  Nanos next = std::min({queues_[0]->next_event(), queues_[1]->next_event(), kill_at_});
  if (now - last_arrival_ < kBusyPoll) next = now;
  timespec timeout{}, *tp = nullptr;
  if (next != kNever) {
    const Nanos wait = std::max<Nanos>(0, next - now - kSpinAhead);
    timeout = {static_cast<time_t>(wait / 1000000000), static_cast<long>(wait % 1000000000)};
    tp = &timeout;
  }
  const int n = epoll_pwait2(epoll_.get(), ev, 4, tp, nullptr);
  if (n < 0 && errno != EINTR) throw_errno("epoll_pwait2", errno);
  return std::max(n, 0);
}

// Returns true, with STATUS, once the command's init has exited.
bool EventLoop::on_signals(int& status) {
  signalfd_siginfo si;
  while (::read(signals_.get(), &si, sizeof si) == sizeof si) {
    if (si.ssi_signo != SIGCHLD) {
      // The terminal's own signals (SI_KERNEL) reached the command's process group already.
      if (si.ssi_code != SI_KERNEL) kill(init_, static_cast<int>(si.ssi_signo));
      continue;
    }
    if (host_) host_->reap_if_exited();
    int raw;
    if (waitpid(init_, &raw, WNOHANG) == init_) {
      status = wait_status(raw);
      return true;
    }
  }
  return false;
}

}  // namespace tracemod
