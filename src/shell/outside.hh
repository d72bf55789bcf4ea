// How a shell meets what lies outside its link. Theory of operation: docs/ARCHITECTURE.md §2.
//
// The outermost shell makes its own user namespace and a private outer namespace P0 (its link's parent), and
// joins P0 to the host by one of three paths:
//   kernel    the shell holds CAP_NET_ADMIN in the host's network namespace (root, sudo): a veth pair from the
//             host to P0 and NAT (HostLink). Every packet between the command and the host or the network
//             beyond is forwarded by the kernel, so far ends see the emulated link end to end.
//   pasta     otherwise, where pasta can run: pasta relays at layer 4, so TCP is terminated at the host and far
//             senders do not see the emulated link (said in one line at start).
//   isolated  --isolated, or neither works: nothing beyond P0.
// Every shell, outermost or nested, masquerades what its command sends beyond its parent namespace P (an
// nftables table with the owner flag, gone when the shell's socket closes), and may run a command on its
// outer side in P (--outside), which is how anyone gets an end-to-end far end.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "shell/command.hh"
#include "shell/host_helper.hh"
#include "shell/link_plan.hh"
#include "shell/nftables.hh"
#include "shell/outer_command.hh"
#include "util/clock.hh"
#include "util/file_descriptor.hh"
#include "util/netlink.hh"

namespace tracemod {

// $TM_BASE and $TM_BASE6: addresses on P0's loopback, outside every link plan. TCP and UDP to them go on to the
// host (kernel and pasta paths); everything else -- ping, and all traffic when isolated -- is answered by P0,
// where the outermost shell's --outside commands run. They differ from the outermost shell's $TM_OUTER, the
// outer end of its link, which always reaches P0 itself.
constexpr const char* kBase4 = "100.127.255.1";
constexpr const char* kBase6 = "fd74:6d00:1::1";

struct OutsideOptions {
  enum class Path { kAuto, kPasta, kIsolated };
  Path path = Path::kAuto;                     // --pasta, --isolated
  bool forwarding = false;                     // --forwarding: turn the host's forwarding on for the kernel path
  std::string command;                         // --outside CMD
  std::vector<std::string> argv;               // or a program run as is (tm-webreplay's servers), not with sh -c
  std::string name = "the --outside command";  // how messages call it: "the replay's server"
  // The program says it is ready on file descriptor 3 (a byte), rather than by listening: it may listen on
  // thousands of addresses, and the command must not start before the last.
  bool says_ready = false;
  int stdin_fd = -1;                         // the program's standard input (default /dev/null)
  Nanos command_wait = 5000 * kMillisecond;  // --outside-wait: how long to wait for CMD to listen (or say ready)
  // tm-webrecord: TCP arriving from the link, to any port but 53 (DNS), is sent (DNAT) to this port on the link's
  // outer addresses in P, where the outside program listens; UDP to 443 (QUIC) from the link is refused. 0: none.
  uint16_t intercept_tcp_port = 0;
  // The outside program's failure (an exit status not 0, at any time) fails the shell's run if the command
  // succeeded: tm-webrecord's recorder exits 1 when a record could not be written.
  bool program_status_counts = false;
};

class Outside {
 public:
  enum class Path { kNested, kKernel, kPasta, kIsolated };

  // DEPTH 0 (outermost): makes the shell's own user namespace and P0, enters P0 and joins it to the host as
  // OPTIONS ask. Deeper: P is the enclosing shell's command namespace, where the shell already is.
  Outside(const std::string& tool, const OutsideOptions& options, const Identity& id, int depth, bool verbose);
  ~Outside();
  Outside(const Outside&) = delete;
  Outside& operator=(const Outside&) = delete;

  Path path() const { return path_; }
  // What the command (and --outside command) sees as /etc/resolv.conf, if not the host's own.
  const std::string& resolv_conf() const { return resolv_conf_; }

  // Once this shell's link is configured in P (through P_NL): NAT, and for the outermost shell the mapping of
  // TCP and UDP for $TM_BASE/$TM_BASE6 to the host's services.
  // PLANS: one per link (tm-multipath has one per path).
  void connect(const std::vector<LinkPlan>& plans, Netlink& p_nl);
  // Starts --outside CMD, if given, in P as SPEC (argv and environment filled by the caller) and waits until it
  // listens. Throws Error if it ends first.
  void start_command(CommandSpec spec);
  // After SIGCHLD: reaps what the outside holds (the host helper or pasta, the --outside command) and says in
  // one line if one of them ended while the command runs.
  void on_child_exit();
  // When the command has ended: stops the --outside command and takes the path to the host down. Returns the
  // outside program's exit status if it counts (program_status_counts), else 0.
  int finish();

 private:
  void enter_own_namespaces(const Identity& id);
  void request_kernel_path();
  void finish_kernel_path();
  void join_without_kernel(bool verbose);
  void join_by_pasta(bool verbose);
  void on_helper_exit(int status);
  std::string nat_rules(const std::string& table, const std::vector<LinkPlan>& plans) const;
  std::string intercept_rules(const std::string& table, const LinkPlan& plan) const;

  std::string tool_;
  OutsideOptions options_;
  Path path_ = Path::kNested;
  bool verbose_ = false;
  std::unique_ptr<HostHelper> host_;
  FileDescriptor p0_;       // P0, held open for pasta and the helper to find
  HostLinkPlan host_link_;  // the kernel path's link
  std::string resolv_conf_;
  std::string host_gateway4_, host_gateway6_;  // where $TM_BASE's TCP and UDP go (empty: nowhere)
  std::unique_ptr<OwnedNftTable> nat_;
  std::unique_ptr<OuterCommand> command_;
  int command_status_ = 0;  // the outside command's exit status, once it has ended
};

}  // namespace tracemod
