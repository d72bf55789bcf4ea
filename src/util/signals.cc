#include "util/signals.hh"

#include <signal.h>
#include <unistd.h>

#include "util/error.hh"

namespace tracemod {
namespace {

sigset_t signal_set(const std::vector<int>& signals) {
  sigset_t set;
  sigemptyset(&set);
  for (int s : signals) sigaddset(&set, s);
  return set;
}

bool read_info(int fd, signalfd_siginfo& info) {
  return ::read(fd, &info, sizeof info) == sizeof info;
}

}  // namespace

const std::vector<int>& forwarded_signals() {
  static const std::vector<int> sigs = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};
  return sigs;
}

std::vector<int> shell_signals() {
  std::vector<int> sigs = {SIGCHLD};
  sigs.insert(sigs.end(), forwarded_signals().begin(), forwarded_signals().end());
  return sigs;
}

const std::vector<int>& stop_signals() {
  static const std::vector<int> sigs = {SIGINT, SIGTERM, SIGHUP};
  return sigs;
}

void block_signals(const std::vector<int>& signals) {
  const sigset_t set = signal_set(signals);
  check_syscall("block signals", sigprocmask(SIG_BLOCK, &set, nullptr));
}

SignalFd::SignalFd(const std::vector<int>& signals, bool blocking) {
  block_signals(signals);
  const sigset_t set = signal_set(signals);
  const int flags = SFD_CLOEXEC | (blocking ? 0 : SFD_NONBLOCK);
  fd_ = FileDescriptor(static_cast<int>(check_syscall("signalfd", signalfd(-1, &set, flags))));
}

bool SignalFd::read(signalfd_siginfo& info) const {
  return read_info(fd_.get(), info);
}

int SignalFd::take() const {
  return take_signal(fd_.get());
}

SignalFd block_stop_signals() {
  signal(SIGPIPE, SIG_IGN);
  return SignalFd(stop_signals());
}

int take_signal(int fd) {
  signalfd_siginfo info;
  return read_info(fd, info) ? static_cast<int>(info.ssi_signo) : 0;
}

}  // namespace tracemod
