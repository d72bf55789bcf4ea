// Signals, read synchronously: every process of tracemod blocks the signals it handles and reads them through
// one signalfd (the shell's event loop, the command's init, tm-record and tm-probe), so no handler runs in
// the middle of a packet or a system call.
#pragma once

#include <sys/signalfd.h>

#include <vector>

#include "util/file_descriptor.hh"

namespace tracemod {

// The signals a shell and its init pass on to the command.
const std::vector<int>& forwarded_signals();
// What a shell blocks and reads: SIGCHLD and the forwarded signals.
std::vector<int> shell_signals();
// What ends tm-record and tm-probe in an orderly way: SIGINT, SIGTERM, SIGHUP.
const std::vector<int>& stop_signals();

// Blocks SIGNALS in the calling thread (they stay pending until read from a SignalFd).
void block_signals(const std::vector<int>& signals);

// A signalfd for a set of signals, which it blocks in the calling thread first.
class SignalFd {
 public:
  SignalFd() = default;
  // BLOCKING: read() waits for a signal (the init has nothing else to wait for); otherwise it returns at once.
  explicit SignalFd(const std::vector<int>& signals, bool blocking = false);
  int get() const { return fd_.get(); }
  // Consumes the next pending signal into INFO; false if none is pending (or, blocking, if interrupted).
  bool read(signalfd_siginfo& info) const;
  // The next pending signal's number, consumed; 0 if none.
  int take() const;

 private:
  FileDescriptor fd_;
};

// block_signals(stop_signals()), SIGPIPE ignored, and a non-blocking SignalFd for them.
SignalFd block_stop_signals();
// SignalFd::take() on a descriptor passed around as a number.
int take_signal(int fd);

}  // namespace tracemod
