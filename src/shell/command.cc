#include "shell/command.hh"

#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <sched.h>
#include <signal.h>
#include <sys/fsuid.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "util/capabilities.hh"
#include "util/error.hh"
#include "util/file_descriptor.hh"
#include "util/signals.hh"

namespace tracemod {
namespace {

void say(const CommandSpec& spec, const std::string& msg) {
  const std::string line = spec.tool + ": " + msg + "\n";
  (void)!::write(2, line.data(), line.size());
}

// A private /proc for the new pid namespace, so $$ and /proc/self agree inside. Mount events still flow in
// from the host (slave), none flow out.
void remount_proc(const CommandSpec& spec) {
  if (unshare(CLONE_NEWNS) < 0 || mount(nullptr, "/", nullptr, MS_REC | MS_SLAVE, nullptr) < 0 ||
      mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) < 0)
    say(spec, std::string("warning: cannot mount a private /proc (") + std::strerror(errno) +
                  "); process ids under /proc are the host's");
}

// The command's own /etc/resolv.conf, bind-mounted in its private mount namespace only (nested shells inherit
// it). The file lives in an anonymous tmpfs that is never attached anywhere, so nothing is left on any disk.
bool mount_resolv_conf(const std::string& content) {
  FileDescriptor fs(static_cast<int>(fsopen("tmpfs", FSOPEN_CLOEXEC)));
  if (fsconfig(fs.get(), FSCONFIG_CMD_CREATE, nullptr, nullptr, 0) < 0) return false;
  FileDescriptor root(static_cast<int>(fsmount(fs.get(), FSMOUNT_CLOEXEC, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV)));
  {
    FileDescriptor file(openat(root.get(), "resolv.conf", O_CREAT | O_WRONLY | O_CLOEXEC, 0644));
    if (::write(file.get(), content.data(), content.size()) != static_cast<ssize_t>(content.size())) return false;
  }
  FileDescriptor tree(static_cast<int>(open_tree(root.get(), "resolv.conf", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC)));
  return move_mount(tree.get(), "", AT_FDCWD, "/etc/resolv.conf", MOVE_MOUNT_F_EMPTY_PATH) == 0;
}

void override_resolv_conf(const CommandSpec& spec) {
  if (spec.resolv_conf.empty()) return;
  // Under sudo only the user's ids are mapped in our user namespace: a tmpfs file made as root (unmapped) is
  // refused with EOVERFLOW, so it is made as the user the command runs as.
  const uid_t fsuid = spec.identity.change ? static_cast<uid_t>(setfsuid(spec.identity.uid)) : 0;
  const gid_t fsgid = spec.identity.change ? static_cast<gid_t>(setfsgid(spec.identity.gid)) : 0;
  bool ok = false;
  try {
    ok = mount_resolv_conf(spec.resolv_conf);
  } catch (const std::exception&) {  // FileDescriptor refuses a failed open; errno still says why
  }
  const int err = errno;
  if (spec.identity.change) {
    setfsuid(fsuid);
    setfsgid(fsgid);
  }
  errno = err;
  if (!ok)
    say(spec, std::string("warning: cannot point /etc/resolv.conf at the host's resolver (") + std::strerror(errno) +
                  "); names may not resolve");
}

void noop_handler(int) {}

void become(const CommandSpec& spec) {
  const Identity& id = spec.identity;
  if (id.change) {
    prctl(PR_SET_KEEPCAPS, 1);  // keep permitted capabilities across the uid change, to make them ambient
    if (setgroups(id.groups.size(), id.groups.data()) < 0 || setresgid(id.gid, id.gid, id.gid) < 0 ||
        setresuid(id.uid, id.uid, id.uid) < 0) {
      say(spec, std::string("cannot switch to user ") + id.user + ": " + std::strerror(errno));
      _exit(1);
    }
  }
  try {
    raise_ambient_nesting_caps();
  } catch (const std::exception& e) {
    say(spec, std::string("warning: nested shells will not work: ") + e.what());
  }
}

// An --outside command reads nothing (or what the shell hands it) and writes to the shell's standard error; a
// program that says when it is ready does so on file descriptor 3. Both are first copied above 10, so that
// neither can be overwritten by the other's dup2.
void place_streams(const CommandSpec& spec) {
  const int in =
      spec.stdin_fd >= 0 ? fcntl(spec.stdin_fd, F_DUPFD_CLOEXEC, 10) : ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  const int ready = spec.ready_fd >= 0 ? fcntl(spec.ready_fd, F_DUPFD_CLOEXEC, 10) : -1;
  if (in >= 0) dup2(in, 0);
  dup2(2, 1);
  if (ready >= 0) dup2(ready, 3);
}

[[noreturn]] void exec_command(const CommandSpec& spec) {
  // A signal the init forwarded before we exec must act on the command, not on the init's no-op handlers.
  for (int s : forwarded_signals()) signal(s, SIG_DFL);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  if (spec.detach) place_streams(spec);
  for (int fd : spec.pass_fds) fcntl(fd, F_SETFD, 0);
  become(spec);
  std::vector<char*> argv, envp;
  for (auto& a : spec.argv) argv.push_back(const_cast<char*>(a.c_str()));
  for (auto& e : spec.env) envp.push_back(const_cast<char*>(e.c_str()));
  argv.push_back(nullptr);
  envp.push_back(nullptr);
  execvpe(argv[0], argv.data(), envp.data());
  const int err = errno;
  // "tm-delay 20 30" runs "30": a name that starts with a digit is more likely an extra value than a program.
  const bool value = err == ENOENT && std::isdigit(static_cast<unsigned char>(spec.argv[0][0])) &&
                     spec.argv[0].find('/') == std::string::npos;
  say(spec, spec.argv[0] + ": " + std::strerror(err) +
                (value ? " (taken as the command: a value the shell does not take? the command goes after --)" : ""));
  _exit(err == ENOENT ? 127 : 126);  // the shell convention for "not found" / "cannot run"
}

int status_code(int status) {
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// Until CHILD exits (its status returned), passes it the signals SIGNALS reads that someone sent on purpose and
// reaps every other child.
int wait_passing_signals(pid_t child, const SignalFd& signals) {
  for (;;) {
    signalfd_siginfo si;
    if (!signals.read(si)) {
      if (errno == EINTR) continue;
      return 1;
    }
    if (si.ssi_signo == SIGCHLD) {
      int status;
      pid_t p;
      while ((p = waitpid(-1, &status, WNOHANG)) > 0)
        if (p == child) return status_code(status);
    } else if (si.ssi_code != SI_KERNEL) {
      // Terminal-generated signals (SI_KERNEL) reached the command's process group directly already.
      kill(child, static_cast<int>(si.ssi_signo));
    }
  }
}

}  // namespace

Identity command_identity() {
  Identity id;
  id.uid = geteuid();
  id.gid = getegid();
  const char* sudo_uid = getenv("SUDO_UID");
  if (geteuid() != 0 || !sudo_uid || std::atol(sudo_uid) == 0) return id;
  const passwd* pw = getpwuid(static_cast<uid_t>(std::atol(sudo_uid)));
  if (!pw) return id;
  id.change = true;
  id.uid = pw->pw_uid;
  id.gid = pw->pw_gid;
  id.user = pw->pw_name;
  id.home = pw->pw_dir;
  id.shell = pw->pw_shell;
  id.groups = {pw->pw_gid};  // only the user's own ids are mapped inside (see HostHelper)
  return id;
}

FilesAs::FilesAs(const Identity& id) : changed_(id.change) {
  if (!changed_) return;
  gid_ = static_cast<gid_t>(setfsgid(id.gid));  // the group first: once the uid is the user's, it may not change
  uid_ = static_cast<uid_t>(setfsuid(id.uid));
}

FilesAs::~FilesAs() {
  if (!changed_) return;
  setfsuid(uid_);
  setfsgid(gid_);
}

void run_init(const CommandSpec& spec, int go_fd) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  char go = 0;
  if (::read(go_fd, &go, 1) != 1) _exit(1);  // the shell failed or died before the link was ready
  ::close(go_fd);
  if (spec.detach) setsid();  // out of the terminal's process group: Ctrl-C is for the command
  remount_proc(spec);
  override_resolv_conf(spec);

  // As pid 1 we receive only signals we handle; a handler (kept blocked, read via signalfd) makes them arrive.
  struct sigaction sa {};
  sa.sa_handler = noop_handler;
  for (int s : forwarded_signals()) sigaction(s, &sa, nullptr);
  const SignalFd signals(shell_signals(), /*blocking=*/true);

  const pid_t child = fork();
  if (child < 0) {
    say(spec, std::string("fork: ") + std::strerror(errno));
    _exit(1);
  }
  if (child == 0) exec_command(spec);
  // Only the command holds these now: its readiness pipe must end (EOF) when it does.
  if (spec.ready_fd >= 0) ::close(spec.ready_fd);
  if (spec.stdin_fd >= 0) ::close(spec.stdin_fd);
  for (int fd : spec.pass_fds) ::close(fd);  // a fused level's live page: its process alone holds it

  _exit(wait_passing_signals(child, signals));  // the kernel then kills what the command left behind
}

int run_child_command(const CommandSpec& spec) {
  block_signals(shell_signals());
  const SignalFd signals(shell_signals(), /*blocking=*/true);
  const pid_t child = fork();
  check_syscall("fork", child);
  if (child == 0) exec_command(spec);
  for (int fd : spec.pass_fds) ::close(fd);
  return wait_passing_signals(child, signals);
}

pid_t start_init(const CommandSpec& spec, FileDescriptor& go) {
  int pipe_fds[2];
  check_syscall("pipe", pipe2(pipe_fds, O_CLOEXEC));
  struct Args {
    const CommandSpec* spec;
    int read_fd, write_fd;
  } args{&spec, pipe_fds[0], pipe_fds[1]};
  static constexpr size_t kStack = 256 * 1024;
  std::unique_ptr<char[]> stack(new char[kStack]);
  auto entry = [](void* a) -> int {
    auto* p = static_cast<Args*>(a);
    ::close(p->write_fd);
    run_init(*p->spec, p->read_fd);
  };
  const pid_t pid = clone(entry, stack.get() + kStack, CLONE_NEWPID | SIGCHLD, &args);
  const int err = errno;
  ::close(pipe_fds[0]);
  go = FileDescriptor(pipe_fds[1]);
  if (pid < 0)
    throw_errno(err == ENOSPC ? "create pid namespace (the kernel nests at most 32)" : "create pid namespace", err);
  return pid;
}

}  // namespace tracemod
