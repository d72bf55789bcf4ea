#include "util/signals.hh"

#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "util/error.hh"

namespace tracemod::record {

FileDescriptor block_stop_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGHUP);
  check_syscall("block signals", sigprocmask(SIG_BLOCK, &set, nullptr));
  signal(SIGPIPE, SIG_IGN);
  return FileDescriptor(static_cast<int>(check_syscall("signalfd", signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK))));
}

int take_signal(int fd) {
  signalfd_siginfo info;
  if (read(fd, &info, sizeof info) != sizeof info) return 0;
  return static_cast<int>(info.ssi_signo);
}

}  // namespace tracemod::record
