#include "packet/shell_runner.hh"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <optional>

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

int inherited_depth() {
  const char* d = getenv("TM_DEPTH");
  if (!d || !*d) return 0;
  char* end = nullptr;
  long v = std::strtol(d, &end, 10);
  if (*end || v < 1 || v >= LinkPlan::kMaxLevel) throw Error(std::string("bad TM_DEPTH in the environment: ") + d);
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
  write_sysctl("net/ipv4/ping_group_range", "0 2147483647");  // unprivileged ICMP echo, as most hosts allow
}

sigset_t shell_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGCHLD);
  for (int s : forwarded_signals()) sigaddset(&set, s);
  return set;
}

std::string user_shell(const Identity& id) {
  if (id.change && !id.shell.empty()) return id.shell;
  if (const char* s = getenv("SHELL"); s && *s) return s;
  return "/bin/sh";
}

std::vector<std::string> command_environment(const ShellOptions& o, const Identity& id, const LinkPlan& plan,
                                             int depth, const std::string& shell) {
  std::vector<std::pair<std::string, std::string>> set = {
      {"TM_DEPTH", std::to_string(depth + 1)},
      {"TM_OUTER", plan.outer4},
      {"TM_OUTER6", plan.outer6},
  };
  if (!getenv("TM_BASE")) set.insert(set.end(), {{"TM_BASE", plan.outer4}, {"TM_BASE6", plan.outer6}});
  if (!getenv("MAHIMAHI_BASE")) set.push_back({"MAHIMAHI_BASE", plan.outer4});
  const char* prompt = getenv("TM_PROMPT");
  const std::string tm_prompt = (prompt ? prompt : "") + o.prompt_tag + " ";
  set.push_back({"TM_PROMPT", tm_prompt});
  // bash's rc files set PS1 themselves, so the prefix is added before each prompt; other shells read PS1.
  set.push_back({"PROMPT_COMMAND", "PS1=\"${TM_PROMPT}${PS1#\"$TM_PROMPT\"}\""});
  if (shell.find("bash") == std::string::npos) set.push_back({"PS1", tm_prompt + "$ "});
  if (id.change) set.insert(set.end(), {{"HOME", id.home}, {"USER", id.user}, {"LOGNAME", id.user}, {"SHELL", id.shell}});

  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    std::string kv = *e;
    const std::string key = kv.substr(0, kv.find('='));
    bool replaced = false;
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
};

Outside enter_own_namespaces(const ShellOptions& o) {
  Outside out;
  std::string why;
  out.pasta = !o.isolated && pasta_usable(why);
  out.host = std::make_unique<HostHelper>();
  if (unshare(CLONE_NEWUSER) < 0) explain_userns_failure(errno);
  out.host->write_maps(getpid());
  check_syscall("create network namespace", unshare(CLONE_NEWNET));
  configure_router_namespace();
  Netlink().set_up("lo");
  out.netns = current_netns();
  if (out.pasta) out.host->exec_pasta(getpid(), out.netns.get(), kPastaIfname, o.verbose);
  else if (!o.isolated)
    std::cerr << o.tool << ": " << why << "; running isolated: only $TM_BASE is reachable\n";
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

int wait_status(int status) { return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status); }

class EventLoop {
 public:
  EventLoop(Ferry& ferry, PacketQueue* up, PacketQueue* down, pid_t init, HostHelper* host)
      : ferry_(ferry), init_(init), host_(host) {
    queues_[Ferry::kUplink] = up;
    queues_[Ferry::kDownlink] = down;
    sigset_t set = shell_signals();
    signals_ = FileDescriptor(static_cast<int>(check_syscall("signalfd", signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK))));
    epoll_ = FileDescriptor(static_cast<int>(check_syscall("epoll_create", epoll_create1(EPOLL_CLOEXEC))));
    watch(signals_.get(), 2);
    watch(ferry.fd_for_arrivals(Ferry::kUplink), Ferry::kUplink);
    watch(ferry.fd_for_arrivals(Ferry::kDownlink), Ferry::kDownlink);
  }

  int run() {
    for (;;) {
      epoll_event ev[4];
      const int n = wait(ev);
      for (int i = 0; i < n; ++i) {
        const uint32_t tag = ev[i].data.u32;
        if (tag == 2) {
          if (auto status = on_signals()) return *status;
        } else {
          auto d = static_cast<Ferry::Direction>(tag);
          ferry_.receive(d, *queues_[d]);
        }
      }
      const Nanos now = monotonic_now();
      ferry_.release(Ferry::kUplink, *queues_[Ferry::kUplink], now);
      ferry_.release(Ferry::kDownlink, *queues_[Ferry::kDownlink], now);
    }
  }

 private:
  void watch(int fd, uint32_t tag) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u32 = tag;
    check_syscall("epoll_ctl", epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, fd, &ev));
  }

  // Sleeps until kSpinAhead before the next release, then polls without sleeping until it is due: timer
  // wake-ups on a virtual machine overshoot by 25-150 us, more than the precision a delay line promises.
  int wait(epoll_event* ev) {
    constexpr Nanos kSpinAhead = 150 * 1000;
    const Nanos next = std::min(queues_[0]->next_event(), queues_[1]->next_event());
    timespec timeout{}, *tp = nullptr;
    if (next != kNever) {
      const Nanos wait = std::max<Nanos>(0, next - monotonic_now() - kSpinAhead);
      timeout = {static_cast<time_t>(wait / 1000000000), static_cast<long>(wait % 1000000000)};
      tp = &timeout;
    }
    const int n = epoll_pwait2(epoll_.get(), ev, 4, tp, nullptr);
    if (n < 0 && errno != EINTR) throw_errno("epoll_pwait2", errno);
    return std::max(n, 0);
  }

  std::optional<int> on_signals() {
    signalfd_siginfo si;
    while (::read(signals_.get(), &si, sizeof si) == sizeof si) {
      if (si.ssi_signo != SIGCHLD) {
        // The terminal's own signals (SI_KERNEL) reached the command's process group already.
        if (si.ssi_code != SI_KERNEL) kill(init_, static_cast<int>(si.ssi_signo));
        continue;
      }
      if (host_) host_->reap_if_exited();
      int status;
      if (waitpid(init_, &status, WNOHANG) == init_) return wait_status(status);
    }
    return std::nullopt;
  }

  Ferry& ferry_;
  PacketQueue* queues_[2];
  pid_t init_;
  HostHelper* host_;
  FileDescriptor signals_, epoll_;
};

void report(const ShellOptions& o, const PacketQueue& up, const PacketQueue& down, const Ferry& ferry) {
  for (auto [name, q] : {std::pair{"uplink", &up}, std::pair{"downlink", &down}}) {
    const QueueStats& s = q->stats();
    std::cerr << o.tool << ": " << name << ": " << s.in_packets << " packets in, " << s.out_packets << " out, "
              << s.dropped_packets << " dropped, " << s.queued_packets << " still queued\n";
  }
  if (ferry.counters().send_errors) std::cerr << o.tool << ": " << ferry.counters().send_errors << " frames refused by the kernel on send\n";
}

}  // namespace

int run_shell(const ShellOptions& o, const QueueFactory& make_queue) {
  prctl(PR_SET_TIMERSLACK, 1UL);  // wake-ups as exact as the timer allows; delays are the product
  sigset_t sigs = shell_signals();
  sigprocmask(SIG_BLOCK, &sigs, nullptr);
  for (const auto& line : o.log_lines)
    if (o.verbose) std::cerr << o.tool << ": " << line << "\n";

  const int depth = inherited_depth();
  if (depth + 1 >= LinkPlan::kMaxLevel) throw Error("too deeply nested");
  Outside outside;
  if (depth == 0) outside = enter_own_namespaces(o);
  else if (!have_effective_net_admin())
    throw Error("TM_DEPTH is set but this process lacks CAP_NET_ADMIN: was it started outside a tracemod shell?");

  const Identity identity = command_identity();
  FileDescriptor home = current_netns();
  Netlink p_nl;
  Link k;
  k.l = make_netns(home);
  {
    InNetns in(k.l, home);
    write_sysctl("net/ipv6/conf/all/disable_ipv6", "1");  // the link namespace only carries frames
    write_sysctl("net/ipv6/conf/default/disable_ipv6", "1");
  }
  k.plan = claim_link(p_nl, depth + 1, k.l);

  CommandSpec spec;
  spec.tool = o.tool;
  spec.identity = identity;
  spec.argv = o.command.empty() ? std::vector<std::string>{user_shell(identity)} : o.command;
  spec.env = command_environment(o, identity, k.plan, depth, spec.argv[0]);

  // The command namespace: made here, then its init is forked inside it, in a new pid namespace.
  check_syscall("create network namespace", unshare(CLONE_NEWNET));
  configure_router_namespace();
  k.c = current_netns();
  int go[2];
  check_syscall("pipe", pipe2(go, O_CLOEXEC));
  const pid_t init = start_init(spec, go);
  ::close(go[0]);
  FileDescriptor go_write(go[1]);
  enter_netns(home, "parent");

  wire_link_namespace(k, home);
  configure_outer_end(p_nl, k.plan);
  configure_command_end(k, home);

  std::string gateway;
  if (outside.pasta) {
    if (auto route = wait_for_pasta(p_nl, *outside.host)) gateway = route->gateway;
    else std::cerr << o.tool << ": pasta did not start; running isolated: only $TM_BASE is reachable\n";
  }
  std::unique_ptr<OwnedNftTable> nat;
  if (depth > 0 || !gateway.empty()) {
    const std::string table = "tracemod_" + std::to_string(k.plan.level) + "_" + std::to_string(k.plan.sibling);
    nat = std::make_unique<OwnedNftTable>(table, nat_rules(table, k.plan, gateway));
  }

  BufferPool pool;
  auto up = make_queue(Ferry::kUplink, pool);
  auto down = make_queue(Ferry::kDownlink, pool);
  Ferry ferry(std::move(k.outer_sock), std::move(k.inner_sock), pool);
  write_all(go_write.get(), "g", "start command");
  go_write.reset();

  const int status = EventLoop(ferry, up.get(), down.get(), init, outside.host.get()).run();
  if (o.verbose) report(o, *up, *down, ferry);
  return status;
}

}  // namespace tracemod
