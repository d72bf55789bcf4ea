#include "shell/host_helper.hh"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <vector>

#include "shell/host_link.hh"
#include "util/error.hh"

namespace tracemod {
namespace {

enum Op : int { kMaps = 1, kPasta = 2, kHostLink = 3 };

struct Request {
  int op;
  pid_t pid;
  uid_t uid;
  gid_t gid;
  int verbose;
  int netns_fd;
  uint32_t start;
  char ifname[16];
  char address[64];  // pasta's DNS forward address, or the host's loopback resolver
};

struct HostLinkReply {
  int32_t number;      // the claimed tmhN, or -1
  int32_t permission;  // the host refused for lack of privilege
  char error[512];
};

// Builds the host side of the kernel path; it lives as long as the helper.
HostLinkReply host_link(const Request& r, std::unique_ptr<HostLink>& link) {
  HostLinkReply reply{-1, 0, {}};
  try {
    const std::string p0 = "/proc/" + std::to_string(r.pid) + "/fd/" + std::to_string(r.netns_fd);
    FileDescriptor ns = FileDescriptor::open(p0, O_RDONLY);
    link = std::make_unique<HostLink>(ns.get(), r.start, r.address);
    reply.number = static_cast<int32_t>(link->plan().number);
  } catch (const std::exception& e) {
    std::strncpy(reply.error, e.what(), sizeof reply.error - 1);
    reply.permission = std::strstr(e.what(), std::strerror(EPERM)) != nullptr;
  }
  return reply;
}

// Returns 0 or an errno value.
int write_map_file(pid_t pid, const char* file, const std::string& text) {
  const std::string path = "/proc/" + std::to_string(pid) + "/" + file;
  int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return errno;
  int err = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()) ? 0 : errno;
  ::close(fd);
  return err;
}

std::string single(uint32_t id) {
  return std::to_string(id) + " " + std::to_string(id) + " 1\n";
}

// Root running its own command maps every id, so files keep their owners inside. Anyone else -- including root
// acting for a sudo user -- maps only the command's own ids: with uid 0 unmapped, a setuid-root program inside
// cannot become root, whatever the command does with its capabilities in the namespace.
int write_maps_for(pid_t pid, uid_t uid, gid_t gid) {
  if (geteuid() == 0 && uid == 0) {
    if (int e = write_map_file(pid, "uid_map", "0 0 4294967295\n")) return e;
    return write_map_file(pid, "gid_map", "0 0 4294967295\n");
  }
  if (geteuid() != 0)  // an unprivileged gid_map needs setgroups denied first
    if (int e = write_map_file(pid, "setgroups", "deny\n")) return e;
  if (int e = write_map_file(pid, "uid_map", single(uid))) return e;
  return write_map_file(pid, "gid_map", single(gid));
}

[[noreturn]] void become_pasta(const Request& r) {
  std::vector<std::string> args = {"pasta", "--config-net", "--foreground", "--quiet", "--ns-ifname", r.ifname,
                                   // Nothing of the inside is exposed on the host, and no host port is
                                   // spliced in: the shell's own DNAT decides what TM_BASE reaches.
                                   "-t", "none", "-u", "none", "-T", "none", "-U", "none"};
  if (geteuid() == 0) args.insert(args.end(), {"--runas", "0:0"});  // else pasta drops to nobody and fails
  if (r.address[0]) args.insert(args.end(), {"--dns-forward", r.address});
  sigset_t none;  // helper_main blocked SIGTERM; pasta must not inherit that
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  const std::string proc = "/proc/" + std::to_string(r.pid);
  args.insert(args.end(), {"--userns", proc + "/ns/user", "--netns", proc + "/fd/" + std::to_string(r.netns_fd)});
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  int null = ::open("/dev/null", O_RDWR | O_CLOEXEC);
  dup2(null, 0);
  if (!r.verbose) dup2(null, 1), dup2(null, 2);
  execvp("pasta", argv.data());
  _exit(127);
}

// The next request into R; false once the shell closed the channel or asked the helper to end (SIGTERM, on
// SIG_FD).
bool next_request(int fd, int sig_fd, Request& r) {
  pollfd p[2] = {{fd, POLLIN, 0}, {sig_fd, POLLIN, 0}};
  while (::poll(p, 2, -1) < 0)
    if (errno != EINTR) return false;
  return !(p[1].revents & POLLIN) && ::read(fd, &r, sizeof r) == static_cast<ssize_t>(sizeof r);
}

// Serves the shell's requests until it closes the channel, asks the helper to end (SIGTERM), or dies (then
// PDEATHSIG: SIGTERM once a host link exists, SIGKILL before). A host link lives until then and is deleted on
// the way out; a killed helper leaves it to the kernel (it goes with P0).
[[noreturn]] void helper_main(int fd, pid_t shell) {
  sigset_t term;
  sigemptyset(&term);
  sigaddset(&term, SIGTERM);
  sigprocmask(SIG_BLOCK, &term, nullptr);
  const int sig_fd = signalfd(-1, &term, SFD_CLOEXEC);
  Request r{};
  std::unique_ptr<HostLink> link;
  while (sig_fd >= 0 && next_request(fd, sig_fd, r)) {
    if (r.op == kMaps) {
      int err = write_maps_for(r.pid, r.uid, r.gid);
      if (::write(fd, &err, sizeof err) != sizeof err) break;
    } else if (r.op == kHostLink) {
      const HostLinkReply reply = host_link(r, link);
      if (link) prctl(PR_SET_PDEATHSIG, SIGTERM);
      if (getppid() != shell || ::write(fd, &reply, sizeof reply) != sizeof reply) break;
    } else if (r.op == kPasta) {
      ::close(fd);
      become_pasta(r);
    }
  }
  // Deleting a veth takes tens of milliseconds (RCU grace periods): let go of the shell's stdout and stderr
  // first, or whoever reads the shell's output through a pipe would wait for it.
  if (const int null = ::open("/dev/null", O_RDWR | O_CLOEXEC); null >= 0)
    for (int std_fd : {0, 1, 2}) dup2(null, std_fd);
  try {
    if (link) link->remove();
  } catch (const std::exception&) {  // nobody to tell: the kernel still removes it with P0
  }
  _exit(0);  // the kernel removes the host link's table as the helper's socket closes
}
}  // namespace

HostHelper::HostHelper() {
  int sv[2];
  check_syscall("create helper channel", socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv));
  const pid_t parent = getpid();
  pid_ = static_cast<pid_t>(check_syscall("fork helper", fork()));
  if (pid_ == 0) {
    ::close(sv[0]);
    sigset_t none;  // the shell has its signals blocked for signalfd; the helper must stay killable
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(1);  // the shell died before PDEATHSIG was armed
    helper_main(sv[1], parent);
  }
  ::close(sv[1]);
  channel_ = FileDescriptor(sv[0]);
}

HostHelper::~HostHelper() {
  finish();
}

void HostHelper::finish() {
  // pasta holds no state worth a graceful stop: the kernel takes down its tap device as it dies. The helper
  // deletes a host link's veth on SIGTERM (P0 may outlive the shell); its owner nft table goes with it. Not
  // waited for: that takes 10-60 ms, and the shell exits right after; init reaps the helper.
  if (pid_ > 0) ::kill(pid_, pasta_ ? SIGKILL : SIGTERM);
  pid_ = -1;
}

void HostHelper::write_maps(pid_t shell, uid_t uid, gid_t gid) {
  Request r{kMaps, shell, uid, gid, 0, -1, 0, {}, {}};
  check_syscall("ask helper for user mappings", ::write(channel_.get(), &r, sizeof r));
  int err = 0;
  if (::read(channel_.get(), &err, sizeof err) != sizeof err) throw Error("write user namespace maps: helper died");
  if (err) throw_errno("write user namespace maps", err);
}

void HostHelper::exec_pasta(pid_t shell, int netns_fd, const std::string& ifname, const std::string& dns_forward,
                            bool verbose) {
  Request r{kPasta, shell, 0, 0, verbose, netns_fd, 0, {}, {}};
  std::strncpy(r.ifname, ifname.c_str(), sizeof r.ifname - 1);
  std::strncpy(r.address, dns_forward.c_str(), sizeof r.address - 1);
  check_syscall("start pasta", ::write(channel_.get(), &r, sizeof r));
  channel_.reset();
  pasta_ = true;
}

void HostHelper::request_host_link(pid_t shell, int netns_fd, uint32_t start, const std::string& resolver) {
  Request r{kHostLink, shell, 0, 0, 0, netns_fd, start, {}, {}};
  std::strncpy(r.address, resolver.c_str(), sizeof r.address - 1);
  check_syscall("ask helper for the host link", ::write(channel_.get(), &r, sizeof r));
}

HostLinkPlan HostHelper::host_link() {
  HostLinkReply reply{};
  if (::read(channel_.get(), &reply, sizeof reply) != sizeof reply) throw Error("create host link: helper died");
  if (reply.number < 0) {
    if (reply.permission) throw HostPermissionError(reply.error);
    throw Error(reply.error);
  }
  return plan_host_link(static_cast<uint32_t>(reply.number));
}

bool HostHelper::reap_if_exited(int* status) {
  if (pid_ <= 0) return true;
  int raw;
  if (waitpid(pid_, &raw, WNOHANG) == pid_) {
    pid_ = -1;
    if (status) *status = WIFEXITED(raw) ? WEXITSTATUS(raw) : 128 + WTERMSIG(raw);
    return true;
  }
  return false;
}

bool pasta_usable(std::string& why) {
  bool found = false;
  const char* path = getenv("PATH");
  std::string dirs = path ? path : "/usr/bin:/bin";
  for (size_t start = 0; start <= dirs.size();) {
    size_t end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    if (access((dirs.substr(start, end - start) + "/pasta").c_str(), X_OK) == 0) found = true;
    start = end + 1;
  }
  if (!found) {
    why = "pasta is not installed (Debian/Ubuntu package: passt)";
    return false;
  }
  // pasta hangs rather than failing when it cannot open the TUN device, so check first.
  int fd = ::open("/dev/net/tun", O_RDWR | O_CLOEXEC);
  if (fd < 0) {
    why = std::string("pasta needs /dev/net/tun: ") + std::strerror(errno);
    return false;
  }
  ::close(fd);
  return true;
}

}  // namespace tracemod
