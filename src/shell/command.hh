// The command's side of a shell: who it runs as, and the small init (pid 1 of the command's own pid
// namespace) that starts it, passes signals on and reports its exit. Because it is pid 1, everything the
// command started dies with it, and it dies with the shell (PDEATHSIG), SIGKILL included.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "util/file_descriptor.hh"

namespace tracemod {

struct Identity {
  bool change = false;  // run as another user than the shell (sudo's invoking user)
  uid_t uid = 0;        // the command's ids (the caller's own if !change)
  gid_t gid = 0;
  std::vector<gid_t> groups;
  std::string user, home, shell;
};

// Who the command should run as: the sudo user when root was reached through sudo, otherwise the caller.
Identity command_identity();

struct CommandSpec {
  std::string tool;               // for messages: "tm-delay"
  std::vector<std::string> argv;  // never empty
  std::vector<std::string> env;   // complete environment, "K=V"
  Identity identity;
  std::string resolv_conf;  // if not empty: what the command sees as /etc/resolv.conf
  bool detach = false;      // a session of its own, stdin from /dev/null, stdout to stderr (--outside)
};

// Runs in the freshly forked init. Waits for one byte on GO_FD (EOF: the shell gave up), then starts the
// command and returns only through _exit with the command's status (128+N if killed by signal N).
[[noreturn]] void run_init(const CommandSpec& spec, int go_fd);

// Clones the init of SPEC as pid 1 of a new pid namespace, in the caller's network namespace; it waits until a
// byte is written to GO (or GO closes: it gives up). clone() rather than unshare(CLONE_NEWPID)+fork(): the
// caller must stay able to start threads.
pid_t start_init(const CommandSpec& spec, FileDescriptor& go);

}  // namespace tracemod
