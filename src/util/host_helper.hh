// A child forked before the shell enters its own user namespace, so it still acts with the invoking user's
// identity in the host's namespaces. It writes the shell's uid/gid maps (as bubblewrap's parent does) and can
// then become pasta, which must run in the host's network namespace. It dies with the shell (PDEATHSIG).
#pragma once

#include <sys/types.h>

#include <string>

#include "util/file_descriptor.hh"

namespace tracemod {

class HostHelper {
 public:
  HostHelper();   // forks
  ~HostHelper();  // kills whatever the child has become
  HostHelper(const HostHelper&) = delete;
  HostHelper& operator=(const HostHelper&) = delete;

  // Maps ids in SHELL's new user namespace for a command that will run as UID/GID (see write_maps_for).
  void write_maps(pid_t shell, uid_t uid, gid_t gid);
  // Becomes `pasta` attached to SHELL's user namespace and to the network namespace SHELL holds open as
  // NETNS_FD (a path that stays put while the shell itself moves between namespaces), with interface IFNAME.
  // DNS_FORWARD, if not empty, is an address whose UDP port 53 pasta maps to the host's first resolver.
  void exec_pasta(pid_t shell, int netns_fd, const std::string& ifname, const std::string& dns_forward, bool verbose);
  pid_t pid() const { return pid_; }
  // Call after SIGCHLD: true (and reaped) if the helper has exited.
  bool reap_if_exited();

 private:
  pid_t pid_ = -1;
  FileDescriptor channel_;
};

// Whether pasta can be used here; if not, WHY says what stops it.
bool pasta_usable(std::string& why);

}  // namespace tracemod
