// --outside CMD: a command on a shell's outer side -- the namespace its link joins -- such as the server at the
// far end of an experiment, so that its own TCP meets the emulated link end to end. It runs through `sh -c`
// as the invoking user, under an init of its own (pid 1 of a new pid namespace) in a session of its own, so
// everything it starts ends with it, terminal signals meant for the command do not reach it, and it dies with
// the shell (PDEATHSIG), SIGKILL included. Its output goes to the shell's standard error.
#pragma once

#include <sys/types.h>

#include <string>

#include "shell/command.hh"
#include "util/clock.hh"

namespace tracemod {

class OuterCommand {
 public:
  // Starts SPEC (argv: sh -c CMD; spec.detach is set here) in the caller's current network namespace. NAME is
  // how messages call it ("the --outside command"). With READY_PIPE, it gets a pipe as file descriptor 3 to
  // say it is ready on (wait_until_ready).
  OuterCommand(CommandSpec spec, std::string name, bool ready_pipe = false);
  ~OuterCommand();  // kills it if it still runs
  OuterCommand(const OuterCommand&) = delete;
  OuterCommand& operator=(const OuterCommand&) = delete;

  // Waits until one of its processes listens (a listening TCP socket, a bound UDP socket, or a packet socket),
  // at most WAIT. Returns false if WAIT passed first; throws Error ("... exited with status N before ...") if it
  // ended first.
  bool wait_until_listening(Nanos wait);
  // Waits until it writes a byte to its readiness pipe, at most WAIT. Returns false if WAIT passed first; throws
  // Error ("NAME exited with status N before ...") if it ended first.
  bool wait_until_ready(Nanos wait);
  // After SIGCHLD: true, once, if it has exited; STATUS then holds its exit status (128+N for signal N).
  bool reap(int& status);
  enum class Stop { kGone, kStopped, kKilled };  // it had ended before; it exited; it was killed after GRACE
  // Asks it to stop (SIGTERM), kills it after GRACE, and waits. STATUS gets its exit status (128+N for signal
  // N) unless it had ended before.
  Stop stop(Nanos grace, int& status);

 private:
  bool listening() const;
  [[noreturn]] void exited_early();
  std::string name_;
  pid_t init_ = -1;
  FileDescriptor ready_;  // the readiness pipe's reading end
};

}  // namespace tracemod
