#include "util/namespaces.hh"

#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <string>

#include "util/error.hh"

namespace tracemod {

FileDescriptor current_netns() {
  return FileDescriptor::open("/proc/thread-self/ns/net", O_RDONLY);
}

void enter_netns(const FileDescriptor& ns, const char* what) {
  check_syscall(std::string("enter ") + what + " network namespace", ::setns(ns.get(), CLONE_NEWNET));
}

FileDescriptor make_netns(const FileDescriptor& home) {
  check_syscall("create network namespace", ::unshare(CLONE_NEWNET));
  FileDescriptor made = current_netns();
  enter_netns(home, "original");
  return made;
}

InNetns::InNetns(const FileDescriptor& ns, const FileDescriptor& home) : home_(home) {
  enter_netns(ns, "target");
}

InNetns::~InNetns() {
  // Returning home cannot fail for a namespace we were in a moment ago; if it did, continuing would act in the
  // wrong namespace, so stop here.
  if (::setns(home_.get(), CLONE_NEWNET) < 0) {
    static const char msg[] = "tracemod: cannot return to the original network namespace\n";
    (void)!::write(2, msg, sizeof msg - 1);
    ::_exit(1);
  }
}

void configure_router_namespace() {
  write_sysctl("net/ipv4/ip_forward", "1");
  write_sysctl("net/ipv6/conf/all/forwarding", "1");
  for (const char* scope : {"all", "default"}) {
    const std::string base = std::string("net/ipv6/conf/") + scope + "/";
    write_sysctl(base + "accept_dad", "0");
    write_sysctl(base + "dad_transmits", "0");
    write_sysctl(base + "router_solicitations", "0");
    write_sysctl(base + "accept_ra", "0");
  }
  // Unprivileged ICMP echo, as most hosts allow; only mapped gids are valid inside an unprivileged user
  // namespace, so fall back to our own. Best effort: the command also holds CAP_NET_RAW.
  try {
    write_sysctl("net/ipv4/ping_group_range", "0 2147483647");
  } catch (const Error&) {
    const std::string gid = std::to_string(getegid());
    try {
      write_sysctl("net/ipv4/ping_group_range", gid + " " + gid);
    } catch (const Error&) {
    }
  }
}

static std::string sysctl_value(const char* path) {
  std::ifstream in(path);
  std::string v;
  if (!(in >> v)) return "";
  return v;
}

void explain_userns_failure(int err) {
  std::string why = std::strerror(err);
  if (err == ENOSPC) {
    throw Error("create user namespace: " + why + ": the limit user.max_user_namespaces (" +
                sysctl_value("/proc/sys/user/max_user_namespaces") +
                ") is reached or zero; raise it with: sysctl -w user.max_user_namespaces=15000");
  }
  if (err == EPERM || err == EACCES) {
    if (sysctl_value("/proc/sys/kernel/unprivileged_userns_clone") == "0")
      throw Error("create user namespace: " + why +
                  ": unprivileged user namespaces are disabled; enable with: sysctl -w "
                  "kernel.unprivileged_userns_clone=1");
    if (sysctl_value("/proc/sys/kernel/apparmor_restrict_unprivileged_userns") == "1")
      throw Error("create user namespace: " + why +
                  ": AppArmor restricts unprivileged user namespaces "
                  "(kernel.apparmor_restrict_unprivileged_userns=1); load tracemod's profile (the package installs it: "
                  "apparmor_parser -r /etc/apparmor.d/tracemod) or set that sysctl to 0");
    throw Error("create user namespace: " + why +
                ": the kernel or a security policy (seccomp, SELinux, a container runtime) forbids user namespaces");
  }
  throw_errno("create user namespace", err);
}

void write_sysctl(const std::string& key, const std::string& value) {
  const std::string path = "/proc/sys/" + key;
  FileDescriptor fd = FileDescriptor::open(path, O_WRONLY);
  write_all(fd.get(), value + "\n", "set sysctl " + key);
}

}  // namespace tracemod
