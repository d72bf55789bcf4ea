#include "shell/shell_runner.hh"

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

#include "live/publisher.hh"
#include "packet/event_loop.hh"
#include "shell/command.hh"
#include "shell/link_plan.hh"
#include "shell/outside.hh"
#include "util/error.hh"
#include "util/namespaces.hh"
#include "util/netlink.hh"
#include "util/signals.hh"

extern char** environ;

namespace tracemod {
namespace {

int inherited_depth() {
  const char* d = getenv("TM_DEPTH");
  if (!d || !*d) return 0;
  char* end = nullptr;
  long v = std::strtol(d, &end, 10);
  if (*end || v < 1 || v + 1 >= LinkPlan::kMaxLevel) throw Error(std::string("bad TM_DEPTH in the environment: ") + d);
  return static_cast<int>(v);
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

// Our environment with SET replacing any inherited value of the same names.
std::vector<std::string> merged_environment(const std::vector<std::pair<std::string, std::string>>& set) {
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

void add_identity(std::vector<std::pair<std::string, std::string>>& set, const Identity& id) {
  if (id.change)
    set.insert(set.end(), {{"HOME", id.home}, {"USER", id.user}, {"LOGNAME", id.user}, {"SHELL", id.shell}});
}

// The command's environment. The outermost shell overrides stale TM_* values (from a script or another tool);
// nested shells keep the outermost's.
std::vector<std::string> command_environment(const ShellOptions& o, const Identity& id, const LinkPlan& plan, int depth,
                                             const std::string& shell) {
  std::vector<std::pair<std::string, std::string>> set = {
      {"TM_DEPTH", std::to_string(depth + 1)},
      {"TM_OUTER", plan.outer4},
      {"TM_OUTER6", plan.outer6},
  };
  // TM_OUTSIDE names where the outermost shell's --outside commands run (its outer end), at every level: the
  // far end of the whole stack on every path, where TM_BASE is the host on the kernel path.
  if (depth == 0)
    set.insert(set.end(), {{"TM_BASE", kBase4},
                           {"TM_BASE6", kBase6},
                           {"MAHIMAHI_BASE", kBase4},
                           {"TM_OUTSIDE", plan.outer4},
                           {"TM_OUTSIDE6", plan.outer6}});
  set_prompt(set, o.prompt_tag, depth, shell);
  add_identity(set, id);
  return merged_environment(set);
}

struct Link {
  LinkPlan plan;
  FileDescriptor l, c;
  PacketSockets outer_sock, inner_sock;
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
  bind_packet_socket(k.outer_sock, nl.ifindex(kLinkOuterName), kLinkOuterName);
  bind_packet_socket(k.inner_sock, nl.ifindex(kLinkInnerName), kLinkInnerName);
}

void configure_outer_end(Netlink& nl, const LinkPlan& p) {
  nl.configure_end({p.outer_ifname, p.outer4, p.outer6, p.inner4, p.inner6, p.inner_mac}, false);
}

void configure_command_end(const Link& k, const FileDescriptor& home) {
  InNetns in(k.c, home);
  Netlink nl;
  const LinkPlan& p = k.plan;
  nl.set_up("lo");
  nl.configure_end({kCommandIfname, p.inner4, p.inner6, p.outer4, p.outer6, p.outer_mac}, true);
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
  if (const uint64_t lost = ferry.counters().lost_on_receive())
    std::cerr << o.tool << ": " << lost << " frames lost in the kernel before the ferry read them (it fell behind)\n";
}

// The command namespace, with the command's init already waiting inside it (see run_init).
pid_t make_command_namespace(Link& k, const CommandSpec& spec, const FileDescriptor& home, FileDescriptor& go) {
  k.c = make_netns(home);
  InNetns in(k.c, home);  // the init must be cloned from inside C
  configure_router_namespace();
  return start_init(spec, go);
}

// The link namespace L, and the veth that joins it to the parent, named so that siblings cannot collide.
void make_link_namespace(Link& k, Netlink& p_nl, int level, const FileDescriptor& home) {
  k.l = make_netns(home);
  {
    InNetns in(k.l, home);
    write_sysctl("net/ipv6/conf/all/disable_ipv6", "1");  // the link namespace only carries frames
    write_sysctl("net/ipv6/conf/default/disable_ipv6", "1");
    k.outer_sock = open_packet_socket(kLinkOuterName);  // its rings take milliseconds: begun now, bound later
    k.inner_sock = open_packet_socket(kLinkInnerName);
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
  spec.resolv_conf = outside.resolv_conf();
  return spec;
}

// What --outside CMD gets: the shell's own environment, with $TM_OUTER/$TM_OUTER6 naming its side of the link
// (and, of the outermost shell, $TM_OUTSIDE/$TM_OUTSIDE6 too).
CommandSpec outer_command_spec(const ShellOptions& o, const Identity& id, const LinkPlan& plan, int depth,
                               const Outside& outside) {
  CommandSpec spec;
  spec.tool = o.tool;
  spec.identity = id;
  std::vector<std::pair<std::string, std::string>> set = {{"TM_OUTER", plan.outer4}, {"TM_OUTER6", plan.outer6}};
  if (depth == 0) set.insert(set.end(), {{"TM_OUTSIDE", plan.outer4}, {"TM_OUTSIDE6", plan.outer6}});
  add_identity(set, id);
  spec.env = merged_environment(set);
  spec.resolv_conf = outside.resolv_conf();
  return spec;
}

// The live counters tm-top and --meter read. A shell that cannot publish them still runs, and says so.
std::unique_ptr<live::Publisher> publish(const ShellOptions& o, const CommandSpec& spec, int depth, Ferry& ferry,
                                         const PacketQueue& up, const PacketQueue& down) {
  std::string command;
  for (const std::string& a : spec.argv) command += (command.empty() ? "" : " ") + a;
  try {
    auto p = std::make_unique<live::Publisher>(live::ShellFacts{o.tool, o.prompt_tag, o.arguments, command, depth},
                                               ferry, up, down, monotonic_now());
    if (o.meter) p->set_meter(std::make_unique<live::Meter>(o.tool, depth, STDERR_FILENO));
    return p;
  } catch (const Error& e) {
    std::cerr << o.tool << ": no live counters (tm-top and --meter cannot see this shell): " << e.what() << "\n";
    return nullptr;
  }
}

}  // namespace

int run_shell(const ShellOptions& o, const QueueFactory& make_queue) {
  prctl(PR_SET_TIMERSLACK, 1UL);  // wake-ups as exact as the timer allows; delays are the product
  block_signals(shell_signals());
  if (o.verbose)
    for (const auto& line : o.log_lines) std::cerr << o.tool << ": " << line << "\n";

  const int depth = inherited_depth();
  const Identity identity = command_identity();  // before our own user namespace changes what getuid() says
  Outside outside(o.tool, o.outside, identity, depth, o.verbose);  // the outermost shell enters P0 here

  FileDescriptor home = current_netns(), go;
  Netlink p_nl;
  Link k;
  make_link_namespace(k, p_nl, depth + 1, home);
  const CommandSpec spec = command_spec(o, identity, k.plan, depth, outside);
  const pid_t init = make_command_namespace(k, spec, home, go);
  wire_link_namespace(k, home);
  configure_outer_end(p_nl, k.plan);
  configure_command_end(k, home);
  outside.connect(k.plan, p_nl);
  outside.start_command(outer_command_spec(o, identity, k.plan, depth, outside));

  BufferPool pool;
  auto up = make_queue(Ferry::kUplink, pool);
  auto down = make_queue(Ferry::kDownlink, pool);
  auto ferry = std::make_unique<Ferry>(std::move(k.outer_sock), std::move(k.inner_sock), pool);
  if (o.capture) o.capture->attach(o.tool, o.command_line, o.log_lines, *ferry, *up, *down);
  std::unique_ptr<live::Publisher> live = publish(o, spec, depth, *ferry, *up, *down);  // seen from the start
  write_all(go.get(), "g", "start command");
  go.reset();

  EventLoop loop(o.tool, *ferry, up.get(), down.get(), init, [&] { outside.on_child_exit(); });
  if (live) loop.add_task(live.get());
  const int status = loop.run();
  if (live) live->finish(monotonic_now());
  if (o.verbose) report(o, *up, *down, *ferry);
  // Each closing netlink or packet socket waits for an RCU grace period: close them all at once.
  std::thread outside_closer([&outside] { outside.finish(); });
  ferry.reset();
  outside_closer.join();
  return status;
}

}  // namespace tracemod
