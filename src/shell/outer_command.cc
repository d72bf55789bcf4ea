#include "shell/outer_command.hh"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>

#include "util/error.hh"

namespace tracemod {
namespace {

int exit_status(int raw) {
  return WIFEXITED(raw) ? WEXITSTATUS(raw) : 128 + WTERMSIG(raw);
}

std::string link_target(const std::string& path) {
  char buf[256];
  const ssize_t n = readlink(path.c_str(), buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
}

// The inodes of the sockets held by every process in the pid namespace of INIT (the command and all it started).
std::set<unsigned long> socket_inodes(pid_t init) {
  std::set<unsigned long> inodes;
  const std::string ns = link_target("/proc/" + std::to_string(init) + "/ns/pid");
  DIR* proc = opendir("/proc");
  if (!proc || ns.empty()) {
    if (proc) closedir(proc);
    return inodes;
  }
  while (dirent* e = readdir(proc)) {
    if (e->d_name[0] < '1' || e->d_name[0] > '9') continue;
    const std::string dir = std::string("/proc/") + e->d_name;
    if (link_target(dir + "/ns/pid") != ns) continue;
    if (DIR* fds = opendir((dir + "/fd").c_str())) {
      while (dirent* f = readdir(fds)) {
        const std::string t = link_target(dir + "/fd/" + f->d_name);
        if (t.rfind("socket:[", 0) == 0) inodes.insert(std::strtoul(t.c_str() + 8, nullptr, 10));
      }
      closedir(fds);
    }
  }
  closedir(proc);
  return inodes;
}

// Whether a line of /proc/net/{tcp,udp}[6] is a listening TCP socket (state 0A) or a UDP socket bound to a port,
// and one of INODES.
bool serving(const std::string& line, bool tcp, const std::set<unsigned long>& inodes) {
  std::istringstream in(line);
  std::string slot, local, remote, state, queues, timer, retransmits, uid, timeout;
  unsigned long inode = 0;
  if (!(in >> slot >> local >> remote >> state >> queues >> timer >> retransmits >> uid >> timeout >> inode))
    return false;
  const bool bound = local.size() > 5 && local.substr(local.size() - 4) != "0000";
  return inodes.count(inode) && (tcp ? state == "0A" : bound);
}

}  // namespace

OuterCommand::OuterCommand(CommandSpec spec, std::string name, bool ready_pipe) : name_(std::move(name)) {
  spec.detach = true;
  FileDescriptor writer;
  if (ready_pipe) {
    int fds[2];
    check_syscall("pipe", pipe2(fds, O_CLOEXEC));
    ready_ = FileDescriptor(fds[0]);
    writer = FileDescriptor(fds[1]);
    spec.ready_fd = writer.get();
  }
  FileDescriptor go;
  init_ = start_init(spec, go);
  writer.reset();  // only the program holds the writing end: its end is the pipe's end
  write_all(go.get(), "g", "start " + name_);
}

OuterCommand::~OuterCommand() {
  if (init_ > 0) {
    kill(init_, SIGKILL);
    waitpid(init_, nullptr, 0);
  }
}

bool OuterCommand::listening() const {
  const std::set<unsigned long> inodes = socket_inodes(init_);
  if (inodes.empty()) return false;
  const std::string net = "/proc/" + std::to_string(init_) + "/net/";
  for (const char* table : {"tcp", "tcp6", "udp", "udp6"}) {
    std::ifstream in(net + table);
    std::string line;
    std::getline(in, line);  // the header
    while (std::getline(in, line))
      if (serving(line, table[0] == 't', inodes)) return true;
  }
  std::ifstream packet(net + "packet");  // sk RefCnt Type Proto Iface R Rmem User Inode
  std::string line;
  std::getline(packet, line);
  while (std::getline(packet, line)) {
    std::istringstream in(line);
    std::string field;
    unsigned long inode = 0;
    for (int i = 0; i < 8; ++i) in >> field;
    if (in >> inode && inodes.count(inode)) return true;
  }
  return false;
}

void OuterCommand::exited_early() {
  int raw = 0;
  while (waitpid(init_, &raw, 0) < 0 && errno == EINTR) {
  }
  init_ = -1;
  throw Error(name_ + " exited with status " + std::to_string(exit_status(raw)) + " before the command started");
}

bool OuterCommand::wait_until_ready(Nanos wait) {
  const Nanos deadline = monotonic_now() + wait;
  for (;;) {
    pollfd p{ready_.get(), POLLIN, 0};
    const Nanos left = std::max<Nanos>(0, deadline - monotonic_now());
    const int n = poll(&p, 1, static_cast<int>(std::min<Nanos>(left / kMillisecond + 1, 1000)));
    if (n < 0 && errno != EINTR) throw_errno("wait for " + name_, errno);
    if (n > 0) {
      char byte;
      const ssize_t got = ::read(ready_.get(), &byte, 1);
      if (got == 1) return true;
      if (got == 0) exited_early();  // it closed the pipe without a word: it is ending, or has ended
    }
    if (monotonic_now() >= deadline) return false;
  }
}

bool OuterCommand::wait_until_listening(Nanos wait) {
  const Nanos deadline = monotonic_now() + wait;
  for (;;) {
    int raw = 0;
    if (waitpid(init_, &raw, WNOHANG) == init_) {
      init_ = -1;
      throw Error(name_ + " exited with status " + std::to_string(exit_status(raw)) + " before the command started");
    }
    if (listening()) return true;
    if (monotonic_now() >= deadline) return false;
    usleep(2000);
  }
}

bool OuterCommand::reap(int& status) {
  int raw = 0;
  if (init_ <= 0 || waitpid(init_, &raw, WNOHANG) != init_) return false;
  init_ = -1;
  status = exit_status(raw);
  return true;
}

OuterCommand::Stop OuterCommand::stop(Nanos grace, int& status) {
  if (init_ <= 0) return Stop::kGone;
  kill(init_, SIGTERM);
  const Nanos deadline = monotonic_now() + grace;
  while (monotonic_now() < deadline) {
    if (reap(status)) return Stop::kStopped;
    usleep(1000);
  }
  kill(init_, SIGKILL);
  waitpid(init_, nullptr, 0);
  init_ = -1;
  status = 128 + SIGKILL;
  return Stop::kKilled;
}

}  // namespace tracemod
