// A child forked before the shell enters its own user namespace, so it still acts with the invoking user's
// identity and privilege in the host's namespaces. It writes the shell's uid/gid maps (as bubblewrap's parent
// does); then either builds and holds the kernel path's host side (HostLink), or becomes pasta, which must run
// in the host's network namespace. It dies with the shell (PDEATHSIG).
#pragma once

#include <sys/types.h>

#include <string>

#include "shell/link_plan.hh"
#include "util/error.hh"
#include "util/file_descriptor.hh"

namespace tracemod {

class HostHelper {
 public:
  HostHelper();   // forks
  ~HostHelper();  // ends the helper: see finish()
  HostHelper(const HostHelper&) = delete;
  HostHelper& operator=(const HostHelper&) = delete;

  // Maps ids in SHELL's new user namespace for a command that will run as UID/GID (see write_maps_for).
  void write_maps(pid_t shell, uid_t uid, gid_t gid);
  // Becomes `pasta` attached to SHELL's user namespace and to the network namespace SHELL holds open as
  // NETNS_FD (a path that stays put while the shell itself moves between namespaces), with interface IFNAME.
  // DNS_FORWARD, if not empty, is an address whose UDP port 53 pasta maps to the host's first resolver.
  void exec_pasta(pid_t shell, int netns_fd, const std::string& ifname, const std::string& dns_forward, bool verbose);
  // The kernel path: asks for a HostLink (host_link.hh) for SHELL's P0, which SHELL holds open as NETNS_FD,
  // claiming tmhN from N = START on; RESOLVER as HostLink takes it. The helper builds it while the shell goes
  // on; host_link() waits for it and returns its plan, or throws HostPermissionError if the host refused for
  // lack of privilege, Error with the helper's reason otherwise.
  void request_host_link(pid_t shell, int netns_fd, uint32_t start, const std::string& resolver);
  HostLinkPlan host_link();
  // Ends the helper (and with it pasta or the host link's table).
  void finish();
  pid_t pid() const { return pid_; }
  // Call after SIGCHLD: true (and reaped) if the helper has exited; STATUS, if given, gets how it ended (its
  // exit status, 128+N for signal N) when it is reaped by this call.
  bool reap_if_exited(int* status = nullptr);
  bool running() const { return pid_ > 0; }
  bool became_pasta() const { return pasta_; }

 private:
  pid_t pid_ = -1;
  bool pasta_ = false;  // the helper became pasta
  FileDescriptor channel_;
};

// What host_link() throws when the host refuses for lack of privilege (the caller may use pasta instead).
class HostPermissionError : public Error {
 public:
  using Error::Error;
};

// Whether pasta can be used here; if not, WHY says what stops it.
bool pasta_usable(std::string& why);

}  // namespace tracemod
