#include "shell/outside.hh"

#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>

#include "shell/host_link.hh"
#include "util/capabilities.hh"
#include "util/error.hh"
#include "util/namespaces.hh"

namespace tracemod {
namespace {

constexpr const char* kPastaIfname = "pasta0";
constexpr Nanos kCommandGrace = 1000 * kMillisecond;  // between SIGTERM and SIGKILL for --outside CMD

// The address of a loopback resolver named by a resolv.conf line (127.0.0.53 of systemd-resolved, a local
// dnsmasq...), or empty.
std::string loopback_nameserver(const std::string& line) {
  std::istringstream in(line);
  std::string key, addr;
  in >> key >> addr;
  return key == "nameserver" && (addr.rfind("127.", 0) == 0 || addr == "::1") ? addr : "";
}

// The host's resolv.conf with its loopback resolvers replaced by kDnsForward (the first one is what the outside
// path maps it to: FIRST); empty if there is nothing to replace.
std::string forwarded_resolv_conf(std::string& first) {
  std::ifstream in("/etc/resolv.conf");
  std::string line, out;
  while (std::getline(in, line)) {
    const std::string loopback = loopback_nameserver(line);
    if (loopback.empty()) {
      out += line + "\n";
    } else if (first.empty()) {
      out += std::string("nameserver ") + kDnsForward + "\n";
      first = loopback;
    }
  }
  return first.empty() ? std::string() : out;
}

// pasta configures its interface asynchronously; the command must not start before the way out exists.
std::optional<Netlink::DefaultRoute> wait_for_pasta(Netlink& nl, HostHelper& host) {
  const Nanos deadline = monotonic_now() + 5000 * kMillisecond;
  while (monotonic_now() < deadline) {
    if (auto r = nl.default_route(AF_INET)) return r;
    if (host.reap_if_exited()) return std::nullopt;
    usleep(1000);
  }
  return std::nullopt;
}

}  // namespace

Outside::Outside(const std::string& tool, const OutsideOptions& options, const Identity& id, int depth, bool verbose)
    : tool_(tool), options_(options) {
  if (depth > 0) {
    if (!have_effective_net_admin())
      throw Error("TM_DEPTH is set but this process lacks CAP_NET_ADMIN: was it started outside a tracemod shell?");
    if (options.forwarding) throw UsageError("--forwarding: only the outermost shell meets the host");
    return;
  }
  const bool kernel = options.path == OutsideOptions::Path::kAuto && have_effective_net_admin();
  if (options.forwarding && !kernel)
    throw UsageError("--forwarding: only a shell with CAP_NET_ADMIN on the host (root) forwards through it");
  std::string forwarding_note;
  if (kernel && options.forwarding) {
    if (const std::string changed = turn_forwarding_on(); !changed.empty())
      forwarding_note = "turned the host's forwarding on (" + changed + "); it stays on after the shell ends";
  } else if (kernel) {
    if (const std::string off = forwarding_settings_off(); !off.empty())
      forwarding_note = "the host does not forward (" + off +
                        "): the command reaches the host's services, not the network beyond; --forwarding turns "
                        "it on";
  }
  enter_own_namespaces(id);
  if (kernel)
    request_kernel_path();  // the helper builds it while the shell builds its link; connect() finishes it
  else if (options.path != OutsideOptions::Path::kIsolated)
    join_without_kernel(verbose);
  if (path_ == Path::kKernel && !forwarding_note.empty()) std::cerr << tool_ << ": " << forwarding_note << "\n";
  verbose_ = verbose;
}

Outside::~Outside() = default;

// The shell's own user namespace (the helper, still on the host, writes its maps) and P0, which it enters.
void Outside::enter_own_namespaces(const Identity& id) {
  host_ = std::make_unique<HostHelper>();
  if (unshare(CLONE_NEWUSER) < 0) explain_userns_failure(errno);
  host_->write_maps(getpid(), id.uid, id.gid);
  check_syscall("create network namespace", unshare(CLONE_NEWNET));
  configure_router_namespace();
  Netlink nl;
  nl.set_up("lo");
  nl.add_address("lo", std::string(kBase4) + "/32");
  nl.add_address("lo", std::string(kBase6) + "/128");
  p0_ = current_netns();
}

// pasta where it can run, isolated otherwise.
void Outside::join_without_kernel(bool verbose) {
  std::string why;
  if (pasta_usable(why)) return join_by_pasta(verbose);
  if (options_.path == OutsideOptions::Path::kPasta) throw Error("--pasta: " + why);
  path_ = Path::kIsolated;
  std::cerr << tool_ << ": " << why << "; running isolated: only $TM_BASE (and --outside commands) is reachable\n";
}

void Outside::request_kernel_path() {
  std::string resolver;
  resolv_conf_ = forwarded_resolv_conf(resolver);
  if (resolver.find(':') != std::string::npos) resolv_conf_.clear(), resolver.clear();  // ::1 cannot be routed to
  host_->request_host_link(getpid(), p0_.get(), static_cast<uint32_t>(getpid()) % HostLinkPlan::kCount, resolver);
  path_ = Path::kKernel;
}

// Called in P0: P0's end of the host link, with the way out through it; pasta (or isolated) if the host refused.
void Outside::finish_kernel_path() {
  try {
    host_link_ = host_->host_link();
  } catch (const HostPermissionError& e) {
    std::cerr << tool_ << ": the host refused a link to it (" << e.what() << "); trying pasta\n";
    return join_without_kernel(verbose_);
  }
  const HostLinkPlan& p = host_link_;
  Netlink().configure_end({kHostLinkOuterName, p.outer4, p.outer6, p.host4, p.host6, p.host_mac}, true);
  host_gateway4_ = p.host4;
  host_gateway6_ = p.host6;
}

void Outside::join_by_pasta(bool verbose) {
  std::string resolver;
  resolv_conf_ = forwarded_resolv_conf(resolver);
  host_->exec_pasta(getpid(), p0_.get(), kPastaIfname, resolv_conf_.empty() ? "" : kDnsForward, verbose);
  path_ = Path::kPasta;
  std::cerr << tool_
            << ": the host is reached through pasta, which relays TCP at the host: far senders do not see the "
               "emulated link (for an end-to-end path run the far end with --outside, or run as root)\n";
}

// Masquerade what the command sends beyond P; as the outermost shell, TCP and UDP to $TM_BASE ($TM_BASE6), from
// the command or from P0 itself, go on to the host (the kernel path's host end, or pasta's gateway, which pasta
// maps to the host's loopback).
std::string Outside::nat_rules(const std::string& table, const std::vector<LinkPlan>& plans) const {
  const std::string t = "inet " + table;
  std::string r = "add chain " + t + " post { type nat hook postrouting priority srcnat; policy accept; }\n";
  for (const LinkPlan& p : plans) {
    r += "add rule " + t + " post ip saddr " + p.subnet4 + " oifname != \"" + p.outer_ifname + "\" masquerade\n";
    r += "add rule " + t + " post ip6 saddr " + p.subnet6 + " oifname != \"" + p.outer_ifname + "\" masquerade\n";
  }
  if (options_.intercept_tcp_port) r += intercept_rules(t, plans.front());
  if (host_gateway4_.empty() && host_gateway6_.empty()) return r;
  // P0's own connections to $TM_BASE (an --outside program's, tm-webrecord's recorder relaying the command's)
  // have $TM_BASE as their source, which the host cannot answer: they leave with their interface's address.
  r += "add rule " + t + " post ip saddr " + kBase4 + " oifname != \"lo\" masquerade\n";
  r += "add rule " + t + " post ip6 saddr " + kBase6 + " oifname != \"lo\" masquerade\n";
  for (const char* hook : {"prerouting", "output"}) {
    const std::string chain = hook[0] == 'p' ? "pre" : "out";
    r += "add chain " + t + " " + chain + " { type nat hook " + hook + " priority -100; policy accept; }\n";
    if (!host_gateway4_.empty())
      r += "add rule " + t + " " + chain + " ip daddr " + kBase4 + " meta l4proto { tcp, udp } dnat ip to " +
           host_gateway4_ + "\n";
    if (!host_gateway6_.empty())
      r += "add rule " + t + " " + chain + " ip6 daddr " + kBase6 + " meta l4proto { tcp, udp } dnat ip6 to " +
           host_gateway6_ + "\n";
  }
  return r;
}

// tm-webrecord's interception, for what arrives from the link (not what P sends, so its own upstream connections
// pass): TCP to any port but DNS's, whatever the address, goes to the recorder on the link's outer end, except
// what is addressed to the recorder itself there; QUIC is refused, so that a browser falls back to TCP.
std::string Outside::intercept_rules(const std::string& t, const LinkPlan& p) const {
  const std::string port = std::to_string(options_.intercept_tcp_port);
  const std::string from = "iifname \"" + p.outer_ifname + "\" ";
  const std::string web = "add rule " + t + " web " + from;
  std::string r = "add chain " + t + " web { type nat hook prerouting priority dstnat - 1; policy accept; }\n";
  r += web + "ip daddr " + p.outer4 + " tcp dport " + port + " accept\n";
  r += web + "ip6 daddr " + p.outer6 + " tcp dport " + port + " accept\n";
  r += web + "ip protocol tcp tcp dport != 53 dnat ip to " + p.outer4 + ":" + port + "\n";
  r += web + "ip6 nexthdr tcp tcp dport != 53 dnat ip6 to [" + p.outer6 + "]:" + port + "\n";
  for (const char* hook : {"input", "forward"}) {
    r += std::string("add chain ") + t + " quic_" + hook + " { type filter hook " + hook +
         " priority filter; policy accept; }\n";
    r += std::string("add rule ") + t + " quic_" + hook + " " + from + "udp dport 443 reject\n";
  }
  return r;
}

void Outside::connect(const std::vector<LinkPlan>& plans, Netlink& p_nl) {
  if (path_ == Path::kKernel) finish_kernel_path();
  if (path_ == Path::kPasta) {
    if (auto route = wait_for_pasta(p_nl, *host_)) {
      host_gateway4_ = route->gateway;
    } else {
      std::cerr << tool_ << ": pasta did not start; running isolated: only $TM_BASE is reachable\n";
      path_ = Path::kIsolated;
    }
  }
  if (path_ == Path::kIsolated && !options_.intercept_tcp_port) return;  // nothing lies beyond P0
  const LinkPlan& first = plans.front();                                 // its sibling number is this shell's alone
  const std::string table = "tracemod_" + std::to_string(first.level) + "_" + std::to_string(first.sibling);
  nat_ = std::make_unique<OwnedNftTable>(table, nat_rules(table, plans));
}

void Outside::start_command(CommandSpec spec) {
  if (options_.command.empty() && options_.argv.empty()) return;
  spec.argv = options_.argv.empty() ? std::vector<std::string>{"/bin/sh", "-c", options_.command} : options_.argv;
  spec.stdin_fd = options_.stdin_fd;
  command_ = std::make_unique<OuterCommand>(std::move(spec), options_.name, options_.says_ready);
  const Nanos wait = options_.command_wait;
  if (wait <= 0) return;
  if (options_.says_ready ? !command_->wait_until_ready(wait) : !command_->wait_until_listening(wait))
    std::cerr << tool_ << ": " << options_.name
              << (options_.says_ready ? " was not ready" : " opened no listening socket") << " within "
              << static_cast<double>(wait) / 1e9 << " s; starting the command anyway\n";
}

// The helper (or pasta, which it became) died while the command ran: killed by someone, or by the OOM killer.
// The way to the host went with it (pasta's tap device; the host's NAT table, owned by the helper's socket), so
// the shell says so once. On the kernel path nobody on the host is left to delete tmhN either: the shell deletes
// its own end, host0, and the pair goes now rather than with P0 (which an orphaned socket can keep for minutes).
void Outside::on_helper_exit(int status) {
  if (path_ == Path::kIsolated) return;  // it only wrote the maps: nothing went with it
  const bool kernel = path_ == Path::kKernel;
  const std::string how = status > 128 ? "was killed by signal " + std::to_string(status - 128)
                                       : "exited with status " + std::to_string(status);
  std::cerr << tool_ << ": the host helper" << (host_->became_pasta() ? " (pasta)" : "") << " " << how
            << " while the command ran: "
            << (kernel ? "the host's NAT table went with it, and the host link is removed" : "the relay is gone")
            << "; $TM_BASE and the network beyond are no longer reachable; the command runs on\n";
  if (!kernel) return;
  try {
    Netlink().delete_link(kHostLinkOuterName);
  } catch (const std::exception& e) {
    std::cerr << tool_ << ": could not remove the host link (it goes with the shell): " << e.what() << "\n";
  }
}

void Outside::on_child_exit() {
  if (int status = 0; host_ && host_->running() && host_->reap_if_exited(&status)) on_helper_exit(status);
  int status = 0;
  if (command_ && command_->reap(status)) {
    command_status_ = status;
    std::cerr << tool_ << ": " << options_.name << " exited with status " << status
              << (status > 128 ? " (killed by signal " + std::to_string(status - 128) + ")" : std::string())
              << " while the command ran\n";
  }
}

int Outside::finish() {
  const bool killed = command_ && command_->stop(kCommandGrace, command_status_) == OuterCommand::Stop::kKilled;
  if (host_) host_->finish();
  nat_.reset();
  if (!options_.program_status_counts) return 0;
  if (killed)
    std::cerr << tool_ << ": " << options_.name << " did not stop within " << kCommandGrace / kMillisecond
              << " ms of SIGTERM: killed\n";
  return command_status_;
}

}  // namespace tracemod
