#include "packet/event_loop.hh"

#include <poll.h>
#include <sched.h>
#include <sys/epoll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <iostream>

#include "util/error.hh"

namespace tracemod {
namespace {

constexpr uint32_t kSignalTag = 0, kArrivalTag = 1;
constexpr int kMaxEvents = 16;

int wait_status(int status) {
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace

EventLoop::EventLoop(const std::string& tool, std::vector<FerryLink> links, pid_t init,
                     std::function<void()> on_child_exit)
    : tool_(tool), links_(std::move(links)), init_(init), on_child_exit_(std::move(on_child_exit)) {
  signals_ = SignalFd(shell_signals());
  epoll_ = FileDescriptor(static_cast<int>(check_syscall("epoll_create", epoll_create1(EPOLL_CLOEXEC))));
  watch(signals_.get(), kSignalTag);
  for (const FerryLink& k : links_)
    for (auto d : {Ferry::kUplink, Ferry::kDownlink}) watch(k.ferry->fd_for_arrivals(d), kArrivalTag);
}

int EventLoop::run() {
  for (;;) {
    epoll_event ev[kMaxEvents];
    const int n = wait(ev);
    for (int i = 0; i < n; ++i) {
      int status;
      if (ev[i].data.u32 == kSignalTag && on_signals(status)) return status;
    }
    note_stall();
    Nanos now;
    const int arrived = turn(now);
    if (arrived > 0) {
      last_arrival_ = now;
      last_batch_ = arrived;
    }
    for (LoopTask* t : tasks_)
      if (now >= t->due()) t->run(now);
    stop_if_finished(now);
  }
}

Nanos EventLoop::tasks_due() const {
  Nanos due = kNever;
  for (const LoopTask* t : tasks_) due = std::min(due, t->due());
  return due;
}

// One turn over every link: what arrived into its queues, then what they release by now. Returns the frames read.
// Reading an empty ring costs a memory read: every ring is looked at every turn, whatever epoll said.
int EventLoop::turn(Nanos& now) {
  int arrived = 0;
  for (FerryLink& k : links_)
    for (auto d : {Ferry::kUplink, Ferry::kDownlink}) arrived += k.ferry->receive(d, *k.queues[d]);
  now = monotonic_now();
  if (now - awake_ > PacketQueue::kStall) tell_stalled(awake_, now);  // stopped since note_stall looked
  for (FerryLink& k : links_) {
    for (auto d : {Ferry::kUplink, Ferry::kDownlink}) k.ferry->release(d, *k.queues[d], now);
    k.ferry->flush_capture(now);
  }
  return arrived;
}

Nanos EventLoop::next_release() const {
  Nanos next = kNever;
  for (const FerryLink& k : links_) next = std::min({next, k.queues[0]->next_event(), k.queues[1]->next_event()});
  return next;
}

Nanos EventLoop::capture_due() const {
  Nanos due = kNever;
  for (const FerryLink& k : links_) due = std::min(due, k.ferry->capture_due());
  return due;
}

bool EventLoop::any_arrivals() const {
  for (const FerryLink& k : links_)
    if (k.ferry->has_arrivals(Ferry::kUplink) || k.ferry->has_arrivals(Ferry::kDownlink)) return true;
  return false;
}

// A release was due at due_ and the loop did not run until now, later by more than kStall: the ferry was stopped
// (SIGSTOP, a debugger) or starved of the CPU. The queues are told, so that a link does not send now, in a burst,
// all it would have carried meanwhile (Ferry::receive does the same for arrivals left unread). From awake_ on,
// the loop is busy until its turn reads the clock: a gap there is a stall too (turn looks).
void EventLoop::note_stall() {
  awake_ = monotonic_now();
  if (due_ != kNever && awake_ - due_ > PacketQueue::kStall) tell_stalled(due_, awake_);
  due_ = kNever;
}

void EventLoop::tell_stalled(Nanos from, Nanos to) {
  for (FerryLink& k : links_)
    for (PacketQueue* q : k.queues) q->stalled(from, to);
}

// A queue that can never release again (a trace played --once) ends the run: the command is asked to stop
// (SIGTERM through its init), and killed if it still runs a second later.
void EventLoop::stop_if_finished(Nanos now) {
  constexpr Nanos kGrace = 1000 * kMillisecond;
  if (kill_at_ == kNever) {
    for (const FerryLink& k : links_)
      for (int d : {Ferry::kUplink, Ferry::kDownlink}) {
        if (!k.queues[d]->finished()) continue;
        std::cerr << tool_ << ": " << (k.name.empty() ? "the " : k.name)
                  << (d == Ferry::kUplink ? "uplink" : "downlink")
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
// wake-ups on a virtual machine overshoot by 25-150 us, and now and then by more (with 150 us ahead, ping's p99
// through tm-delay 10 was 0.24 ms above the raw pair's, twice that of 300 us ahead, on this 2-core VM), more
// than the precision a delay line promises. The price: up to kSpinAhead of a CPU per release that traffic
// sparser than that leaves alone (3% for a ping each way every 10 ms).
// After an arrival it polls for kBusyPoll before sleeping, yielding the CPU to anyone else who wants it (the
// command, on a busy machine): a lone frame's reply then crosses at once. Under load (the last turn read
// kLoadBatch frames or more) it naps for kNap between turns instead, whatever waits: a turn per frame, or a
// wake-up per arrival, costs more than the frame; and a ferry that spins, or that the sender's frames wake
// (the kernel then pulls it onto the sender's CPU), takes the CPU the receiver needs to empty its socket in
// time. Napping, the ferry leaves its CPU to the others, wakes on its own with a batch waiting, and releases
// up to a nap late. Polling reads the rings' memory; epoll (for signals) is asked at most every kSignalPoll.
int EventLoop::wait(epoll_event* ev) {
  constexpr Nanos kSpinAhead = 300 * 1000, kBusyPoll = 50 * 1000, kNap = 50 * 1000, kSignalPoll = kMillisecond;
  constexpr int kLoadBatch = 2;
  const Nanos now = monotonic_now();
  due_ = next_release();
  const Nanos next = std::min(due_, kill_at_);
  const bool recent = now - last_arrival_ < kBusyPoll;
  if (recent && last_batch_ >= kLoadBatch) {
    last_epoll_ = now;
    return nap(ev, std::clamp<Nanos>(std::min({next, capture_due(), tasks_due()}) - now, 0, kNap));
  }
  const bool release_soon = next != kNever && next - now <= kSpinAhead;
  if (release_soon || recent) {
    if (!release_soon && !any_arrivals()) sched_yield();
    if (now - last_epoll_ < kSignalPoll) return 0;
    last_epoll_ = now;
    return poll(ev, 0);
  }
  last_epoll_ = now;
  const Nanos wake = std::min({next == kNever ? kNever : next - kSpinAhead, capture_due(), tasks_due()});
  return poll(ev, wake == kNever ? -1 : std::max<Nanos>(0, wake - now));
}

// Sleeps TIMEOUT ns, woken early by a signal only (not by arrivals).
int EventLoop::nap(epoll_event* ev, Nanos timeout) {
  pollfd p{signals_.get(), POLLIN, 0};
  const timespec ts{0, static_cast<long>(timeout)};
  const int n = ppoll(&p, 1, &ts, nullptr);
  if (n < 0 && errno != EINTR) throw_errno("ppoll", errno);
  if (n <= 0) return 0;
  ev[0].data.u32 = kSignalTag;
  return 1;
}

// Waits up to TIMEOUT ns (-1: for ever) for an event.
int EventLoop::poll(epoll_event* ev, Nanos timeout) {
  timespec ts{static_cast<time_t>(timeout / 1000000000), static_cast<long>(timeout % 1000000000)};
  const int n = epoll_pwait2(epoll_.get(), ev, kMaxEvents, timeout < 0 ? nullptr : &ts, nullptr);
  if (n < 0 && errno != EINTR) throw_errno("epoll_pwait2", errno);
  return std::max(n, 0);
}

// Returns true, with STATUS, once the command's init has exited.
bool EventLoop::on_signals(int& status) {
  signalfd_siginfo si;
  while (signals_.read(si)) {
    if (si.ssi_signo != SIGCHLD) {
      // The terminal's own signals (SI_KERNEL) reached the command's process group already.
      if (si.ssi_code != SI_KERNEL) kill(init_, static_cast<int>(si.ssi_signo));
      continue;
    }
    if (on_child_exit_) on_child_exit_();
    int raw;
    if (waitpid(init_, &raw, WNOHANG) == init_) {
      status = wait_status(raw);
      return true;
    }
  }
  return false;
}

}  // namespace tracemod
