#include "packet/shell_runner.hh"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <thread>

#include "packet/event_loop.hh"
#include "packet/link_plan.hh"
#include "util/capabilities.hh"
#include "util/command.hh"
#include "util/error.hh"
#include "util/host_helper.hh"
#include "util/namespaces.hh"
#include "util/netlink.hh"
#include "util/nftables.hh"
#include "util/sysctl.hh"

extern char** environ;

namespace tracemod {
namespace {

constexpr const char* kPastaIfname = "pasta0";
// Where the command sends DNS when the host's resolver listens on loopback: pasta maps it to that resolver.
// Outside every level's link prefix (those stay below 100.68.0.0).
constexpr const char* kDnsForward = "100.127.255.53";

int inherited_depth() {
  const char* d = getenv("TM_DEPTH");
  if (!d || !*d) return 0;
  char* end = nullptr;
  long v = std::strtol(d, &end, 10);
  if (*end || v < 1 || v + 1 >= LinkPlan::kMaxLevel) throw Error(std::string("bad TM_DEPTH in the environment: ") + d);
  return static_cast<int>(v);
}

// A namespace that routes for the one inside it: forwarding on, and no IPv6 autoconfiguration chatter (DAD,
// router solicitations) crossing the emulated link.
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

std::string user_shell(const Identity& id) {
  if (id.change && !id.shell.empty()) return id.shell;
  if (const char* s = getenv("SHELL"); s && *s) return s;
  return "/bin/sh";
}

bool reads_ps1_from_environment(const std::string& shell) {
  const std::string name = shell.substr(shell.rfind('/') + 1);
  return name == "sh" || name == "dash" || name == "ash" || name == "ksh" || name == "mksh";
}

// The prompt: TM_PROMPT accumulates one tag per level. bash's rc files set PS1 themselves, so bash gets the
// prefix from PROMPT_COMMAND (after the user's own, if any), replacing a prefix an outer level put in an
// inherited PS1; POSIX shells that read PS1 from the environment get it there.
void set_prompt(std::vector<std::pair<std::string, std::string>>& set, const std::string& tag, int depth,
                const std::string& shell) {
  const char* outer = depth > 0 ? getenv("TM_PROMPT") : nullptr;
  const std::string prompt = (outer ? outer : "") + tag + " ";
  set.push_back({"TM_PROMPT", prompt});
  const std::string ours = "case $PS1 in \"$TM_PROMPT\"*) ;; *) PS1=\"$TM_PROMPT${PS1#\"${TM_PS1_PREFIX:-}\"}\";; esac";
  const char* theirs = getenv("PROMPT_COMMAND");
  const bool chain = theirs && *theirs && std::string(theirs).find(ours) == std::string::npos;
  set.push_back({"PROMPT_COMMAND", chain ? std::string(theirs) + "; " + ours : theirs && *theirs ? theirs : ours});
  if (!reads_ps1_from_environment(shell)) return;
  const char* ps1 = getenv("PS1");
  const char* old_prefix = depth > 0 ? getenv("TM_PS1_PREFIX") : nullptr;
  std::string base = ps1 ? ps1 : "$ ";
  if (old_prefix && base.rfind(old_prefix, 0) == 0) base.erase(0, std::string(old_prefix).size());
  set.insert(set.end(), {{"PS1", prompt + base}, {"TM_PS1_PREFIX", prompt}});
}

// The command's environment: ours, with what the shell sets replacing any inherited value. The outermost
// shell overrides stale TM_* values (from a script or another tool); nested shells keep the outermost's.
std::vector<std::string> command_environment(const ShellOptions& o, const Identity& id, const LinkPlan& plan, int depth,
                                             const std::string& shell) {
  std::vector<std::pair<std::string, std::string>> set = {
      {"TM_DEPTH", std::to_string(depth + 1)},
      {"TM_OUTER", plan.outer4},
      {"TM_OUTER6", plan.outer6},
  };
  if (depth == 0)
    set.insert(set.end(), {{"TM_BASE", plan.outer4}, {"TM_BASE6", plan.outer6}, {"MAHIMAHI_BASE", plan.outer4}});
  set_prompt(set, o.prompt_tag, depth, shell);
  if (id.change)
    set.insert(set.end(), {{"HOME", id.home}, {"USER", id.user}, {"LOGNAME", id.user}, {"SHELL", id.shell}});

  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    std::string kv = *e;
    const std::string key = kv.substr(0, kv.find('='));
    bool replaced = key == "TM_PS1_PREFIX";  // only meaningful next to the PS1 it was set with
    for (auto& [k, v] : set) replaced |= (k == key);
    if (!replaced) env.push_back(kv);
  }
  for (auto& [k, v] : set) env.push_back(k + "=" + v);
  return env;
}

// The outermost shell's own user namespace and private outer namespace (P0), joined to the host by pasta.
struct Outside {
  std::unique_ptr<HostHelper> host;
  FileDescriptor netns;  // P0, held open for pasta to find
  bool pasta = false;
  std::string resolv_conf;  // the command's resolv.conf, if the host's names a loopback resolver
};

bool is_loopback_nameserver(const std::string& line) {
  std::istringstream in(line);
  std::string key, addr;
  in >> key >> addr;
  return key == "nameserver" && (addr.rfind("127.", 0) == 0 || addr == "::1");
}

// The host's resolv.conf with loopback resolvers (127.0.0.53 of systemd-resolved, a local dnsmasq...)
// replaced by kDnsForward; empty if there is nothing to replace.
std::string forwarded_resolv_conf() {
  std::ifstream in("/etc/resolv.conf");
  std::string line, out;
  bool replaced = false;
  while (std::getline(in, line)) {
    if (!is_loopback_nameserver(line)) {
      out += line + "\n";
    } else if (!replaced) {
      out += std::string("nameserver ") + kDnsForward + "\n";
      replaced = true;
    }
  }
  return replaced ? out : std::string();
}

Outside enter_own_namespaces(const ShellOptions& o, const Identity& id) {
  Outside out;
  std::string why;
  out.pasta = !o.isolated && pasta_usable(why);
  out.host = std::make_unique<HostHelper>();
  if (unshare(CLONE_NEWUSER) < 0) explain_userns_failure(errno);
  out.host->write_maps(getpid(), id.uid, id.gid);
  check_syscall("create network namespace", unshare(CLONE_NEWNET));
  configure_router_namespace();
  Netlink().set_up("lo");
  out.netns = current_netns();
  if (out.pasta) {
    out.resolv_conf = forwarded_resolv_conf();
    out.host->exec_pasta(getpid(), out.netns.get(), kPastaIfname, out.resolv_conf.empty() ? "" : kDnsForward,
                         o.verbose);
  } else if (!o.isolated) {
    std::cerr << o.tool << ": " << why << "; running isolated: only $TM_BASE is reachable\n";
  }
  return out;
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

struct Link {
  LinkPlan plan;
  FileDescriptor l, c;
  FileDescriptor outer_sock, inner_sock;
};

LinkPlan claim_link(Netlink& p_nl, int level, const FileDescriptor& l) {
  for (int j = 0; j < LinkPlan::kSiblings; ++j) {
    LinkPlan plan = plan_link(level, j);
    if (p_nl.add_veth(plan.outer_ifname, plan.outer_mac, -1, kLinkOuterName, plan.l_outer_mac, l.get())) return plan;
  }
  throw Error("create link: " + std::to_string(LinkPlan::kSiblings) + " shells already run side by side here");
}

void wire_link_namespace(Link& k, const FileDescriptor& home) {
  InNetns in(k.l, home);
  Netlink nl;
  if (!nl.add_veth(kLinkInnerName, k.plan.l_inner_mac, -1, kCommandIfname, k.plan.inner_mac, k.c.get()))
    throw Error("create veth pair: inner end exists");
  nl.set_up(kLinkOuterName);
  nl.set_up(kLinkInnerName);
  k.outer_sock = open_packet_socket(nl.ifindex(kLinkOuterName), kLinkOuterName);
  k.inner_sock = open_packet_socket(nl.ifindex(kLinkInnerName), kLinkInnerName);
}

void configure_outer_end(Netlink& nl, const LinkPlan& p) {
  nl.add_address(p.outer_ifname, p.outer4 + "/30");
  nl.add_address(p.outer_ifname, p.outer6 + "/64");
  nl.set_up(p.outer_ifname);
  nl.add_neighbour(p.outer_ifname, p.inner4, p.inner_mac);
  nl.add_neighbour(p.outer_ifname, p.inner6, p.inner_mac);
}

void configure_command_end(const Link& k, const FileDescriptor& home) {
  InNetns in(k.c, home);
  Netlink nl;
  const LinkPlan& p = k.plan;
  nl.set_up("lo");
  nl.add_address(kCommandIfname, p.inner4 + "/30");
  nl.add_address(kCommandIfname, p.inner6 + "/64");
  nl.set_up(kCommandIfname);
  nl.add_neighbour(kCommandIfname, p.outer4, p.outer_mac);
  nl.add_neighbour(kCommandIfname, p.outer6, p.outer_mac);
  nl.add_route("default", p.outer4, kCommandIfname, AF_INET);
  nl.add_route("default", p.outer6, kCommandIfname, AF_INET6);
}

// Masquerade what the command sends beyond this namespace; as the outermost shell with pasta, TCP and UDP
// to TM_BASE go on to the host (pasta maps its gateway address to the host's loopback).
std::string nat_rules(const std::string& table, const LinkPlan& p, const std::string& host_gateway) {
  const std::string t = "inet " + table;
  std::string r = "add chain " + t + " post { type nat hook postrouting priority srcnat; policy accept; }\n";
  r += "add rule " + t + " post ip saddr " + p.subnet4 + " oifname != \"" + p.outer_ifname + "\" masquerade\n";
  r += "add rule " + t + " post ip6 saddr " + p.subnet6 + " oifname != \"" + p.outer_ifname + "\" masquerade\n";
  if (!host_gateway.empty()) {
    r += "add chain " + t + " pre { type nat hook prerouting priority dstnat; policy accept; }\n";
    r += "add rule " + t + " pre iifname \"" + p.outer_ifname + "\" ip daddr " + p.outer4 +
         " meta l4proto { tcp, udp } dnat ip to " + host_gateway + "\n";
  }
  return r;
}

// clone() rather than unshare(CLONE_NEWPID)+fork(): the shell itself must stay able to start threads.
pid_t start_init(CommandSpec& spec, int go[2]) {
  struct Args {
    CommandSpec* spec;
    int* go;
  } args{&spec, go};
  static constexpr size_t kStack = 256 * 1024;
  std::unique_ptr<char[]> stack(new char[kStack]);
  auto entry = [](void* a) -> int {
    auto* p = static_cast<Args*>(a);
    ::close(p->go[1]);
    run_init(*p->spec, p->go[0]);
  };
  const pid_t pid = clone(entry, stack.get() + kStack, CLONE_NEWPID | SIGCHLD, &args);
  if (pid < 0)
    throw_errno(errno == ENOSPC ? "create pid namespace (the kernel nests at most 32)" : "create pid namespace", errno);
  return pid;
}

void report(const ShellOptions& o, const PacketQueue& up, const PacketQueue& down, const Ferry& ferry) {
  for (auto [name, q] : {std::pair{"uplink", &up}, std::pair{"downlink", &down}}) {
    const QueueStats& s = q->stats();
    std::cerr << o.tool << ": " << name << ": " << s.in_packets << " packets in, " << s.out_packets << " out, "
              << s.dropped_packets << " dropped, " << s.queued_packets << " still queued\n";
    if (const std::string extra = q->summary(); !extra.empty())
      std::cerr << o.tool << ": " << name << ": " << extra << "\n";
  }
  if (const uint64_t refused = ferry.counters().send_errors)
    std::cerr << o.tool << ": " << refused << " frames refused by the kernel on send\n";
}

// The command namespace, with the command's init already waiting inside it (see run_init).
pid_t make_command_namespace(Link& k, CommandSpec& spec, const FileDescriptor& home, FileDescriptor& go_write) {
  k.c = make_netns(home);
  InNetns in(k.c, home);  // the init must be cloned from inside C
  configure_router_namespace();
  int go[2];
  check_syscall("pipe", pipe2(go, O_CLOEXEC));
  go_write = FileDescriptor(go[1]);
  const pid_t init = start_init(spec, go);
  ::close(go[0]);
  return init;
}

// The link namespace L, and the veth that joins it to the parent, named so that siblings cannot collide.
void make_link_namespace(Link& k, Netlink& p_nl, int level, const FileDescriptor& home) {
  k.l = make_netns(home);
  {
    InNetns in(k.l, home);
    write_sysctl("net/ipv6/conf/all/disable_ipv6", "1");  // the link namespace only carries frames
    write_sysctl("net/ipv6/conf/default/disable_ipv6", "1");
  }
  k.plan = claim_link(p_nl, level, k.l);
}

CommandSpec command_spec(const ShellOptions& o, const Identity& id, const LinkPlan& plan, int depth,
                         const Outside& outside) {
  CommandSpec spec;
  spec.tool = o.tool;
  spec.identity = id;
  spec.argv = o.command.empty() ? std::vector<std::string>{user_shell(spec.identity)} : o.command;
  spec.env = command_environment(o, spec.identity, plan, depth, spec.argv[0]);
  spec.resolv_conf = outside.resolv_conf;
  return spec;
}

// The NAT table in the parent namespace: needed wherever the command's traffic can go further than P.
std::unique_ptr<OwnedNftTable> install_nat(const ShellOptions& o, const LinkPlan& plan, int depth, Outside& outside,
                                           Netlink& p_nl) {
  std::optional<Netlink::DefaultRoute> pasta_route;
  if (outside.pasta && !(pasta_route = wait_for_pasta(p_nl, *outside.host)))
    std::cerr << o.tool << ": pasta did not start; running isolated: only $TM_BASE is reachable\n";
  if (depth == 0 && !pasta_route) return nullptr;  // isolated: nothing lies beyond P0
  const std::string table = "tracemod_" + std::to_string(plan.level) + "_" + std::to_string(plan.sibling);
  return std::make_unique<OwnedNftTable>(table, nat_rules(table, plan, pasta_route ? pasta_route->gateway : ""));
}

}  // namespace

int run_shell(const ShellOptions& o, const QueueFactory& make_queue) {
  prctl(PR_SET_TIMERSLACK, 1UL);  // wake-ups as exact as the timer allows; delays are the product
  sigset_t sigs = shell_signals();
  sigprocmask(SIG_BLOCK, &sigs, nullptr);
  if (o.verbose)
    for (const auto& line : o.log_lines) std::cerr << o.tool << ": " << line << "\n";

  const int depth = inherited_depth();
  const Identity identity = command_identity();  // before our own user namespace changes what getuid() says
  Outside outside;
  if (depth == 0)
    outside = enter_own_namespaces(o, identity);
  else if (!have_effective_net_admin())
    throw Error("TM_DEPTH is set but this process lacks CAP_NET_ADMIN: was it started outside a tracemod shell?");

  FileDescriptor home = current_netns(), go;
  Netlink p_nl;
  Link k;
  make_link_namespace(k, p_nl, depth + 1, home);
  CommandSpec spec = command_spec(o, identity, k.plan, depth, outside);
  const pid_t init = make_command_namespace(k, spec, home, go);
  wire_link_namespace(k, home);
  configure_outer_end(p_nl, k.plan);
  configure_command_end(k, home);
  std::unique_ptr<OwnedNftTable> nat = install_nat(o, k.plan, depth, outside, p_nl);

  BufferPool pool;
  auto up = make_queue(Ferry::kUplink, pool);
  auto down = make_queue(Ferry::kDownlink, pool);
  auto ferry = std::make_unique<Ferry>(std::move(k.outer_sock), std::move(k.inner_sock), pool);
  write_all(go.get(), "g", "start command");
  go.reset();

  const int status = EventLoop(o.tool, *ferry, up.get(), down.get(), init, outside.host.get()).run();
  if (o.verbose) report(o, *up, *down, *ferry);
  // Each closing netlink or packet socket waits for an RCU grace period: close them all at once.
  outside.host.reset();
  std::thread nat_closer([&nat] { nat.reset(); });
  ferry.reset();
  nat_closer.join();
  return status;
}

}  // namespace tracemod
