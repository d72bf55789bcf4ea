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

// While it lives, the calling thread makes and opens files as ID's user (setfsuid, setfsgid) where ID changes
// user (sudo), so what a shell makes for its command before it starts (tm-webreplay's CA) is the user's, with
// the user's permissions checked.
class FilesAs {
 public:
  explicit FilesAs(const Identity& id);
  ~FilesAs();
  FilesAs(const FilesAs&) = delete;
  FilesAs& operator=(const FilesAs&) = delete;

 private:
  bool changed_ = false;
  uid_t uid_ = 0;
  gid_t gid_ = 0;
};

struct CommandSpec {
  std::string tool;               // for messages: "tm-delay"
  std::vector<std::string> argv;  // never empty
  std::vector<std::string> env;   // complete environment, "K=V"
  Identity identity;
  std::string resolv_conf;  // if not empty: what the command sees as /etc/resolv.conf
  bool detach = false;      // a session of its own, stdin from /dev/null, stdout to stderr (--outside)
  int stdin_fd = -1;        // detached: its standard input instead of /dev/null (the shell's own file descriptor)
  int ready_fd = -1;        // given to the command as file descriptor 3 (it says there when it is ready)
  std::vector<int> pass_fds;  // handed to the command (close-on-exec cleared); its parent closes them once it has
};

// Runs in the freshly forked init. Waits for one byte on GO_FD (EOF: the shell gave up), then starts the
// command and returns only through _exit with the command's status (128+N if killed by signal N).
[[noreturn]] void run_init(const CommandSpec& spec, int go_fd);

// Clones the init of SPEC as pid 1 of a new pid namespace, in the caller's network namespace; it waits until a
// byte is written to GO (or GO closes: it gives up). clone() rather than unshare(CLONE_NEWPID)+fork(): the
// caller must stay able to start threads.
pid_t start_init(const CommandSpec& spec, FileDescriptor& go);

// Runs SPEC's command as a child of the caller, in the caller's namespaces (a fused level of a stack, which makes
// none of its own), passing signals on as the init does; returns its exit status (128+N if killed by signal N).
int run_child_command(const CommandSpec& spec);

}  // namespace tracemod
