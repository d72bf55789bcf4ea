// The kernel path's host side: a veth pair from the host's network namespace to the outermost shell's private
// outer namespace P0, and an nftables table (owner flag) that NATs what leaves P0 and maps the host end's
// address to the host's own services. It runs in HostHelper, the one process of the shell that still acts in
// the host's namespaces with the caller's privilege. Nothing outlives the shell, by the kernel's own doing: the
// veth dies with P0 (whose last user is the shell), the table with the helper's netlink socket (the helper
// dies with the shell, SIGKILL included). Both go within tens of milliseconds of the shell's exit. The helper
// also deletes the veth itself as it ends (remove()), because P0 may outlive the shell.
#pragma once

#include <memory>
#include <string>

#include "shell/link_plan.hh"
#include "shell/nftables.hh"

namespace tracemod {

// Where P0 sends DNS when the host's resolver listens on loopback (127.0.0.53 of systemd-resolved): the
// command's resolv.conf names it, and the outside path maps it to that resolver. Outside every link plan.
constexpr const char* kDnsForward = "100.127.255.53";

class HostLink {
 public:
  // Claims the first free tmhN from N = START on (wrapping), with its P0 end in the namespace P0_FD, and sets
  // up the host side. RESOLVER, if not empty, is the host's loopback resolver (IPv4) that kDnsForward maps to.
  HostLink(int p0_fd, uint32_t start, const std::string& resolver);
  HostLink(const HostLink&) = delete;
  HostLink& operator=(const HostLink&) = delete;
  const HostLinkPlan& plan() const { return plan_; }
  // Deletes the host's end (so both ends) now: P0, and with it the veth, can outlive the shell for minutes
  // while an orphaned TCP socket in P0 (an --outside sender's) retransmits to a namespace that is gone.
  void remove();

 private:
  HostLinkPlan plan_;
  std::unique_ptr<OwnedNftTable> table_;
};

// The host's forwarding settings that reaching beyond the host needs and that are off, with a default route
// that makes them matter: "net.ipv4.ip_forward=0", "net.ipv6.conf.all.forwarding=0"; empty if none.
std::string forwarding_settings_off();
// Turns them on (--forwarding); returns what it changed, as forwarding_settings_off() named it.
std::string turn_forwarding_on();

}  // namespace tracemod
