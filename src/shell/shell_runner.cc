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
#include "shell/mptcp.hh"
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

// One link of the shell (one per path with tm-multipath): its plan, its ends' names in L and C, and the ferry's
// sockets on the L ends.
struct Link {
  LinkPlan plan;
  std::string l_outer, l_inner, c_ifname;
  PacketSockets outer_sock, inner_sock;
};

// The link namespace L, the command namespace C, and the links between them and P.
struct Links {
  FileDescriptor l, c;
  std::vector<Link> paths;
};

// The command's environment. The outermost shell overrides stale TM_* values (from a script or another tool);
// nested shells keep the outermost's.
std::vector<std::string> command_environment(const ShellOptions& o, const Identity& id, const Links& ks, int depth,
                                             const std::string& shell) {
  const LinkPlan& plan = ks.paths[o.default_path].plan;
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
  for (size_t i = 0; o.multipath && i < ks.paths.size(); ++i) {  // each path's own addresses, to bind to
    const std::string name = "TM_PATH" + std::to_string(i + 1);
    set.insert(set.end(), {{name, ks.paths[i].plan.inner4}, {name + "_6", ks.paths[i].plan.inner6}});
  }
  set.insert(set.end(), o.environment.begin(), o.environment.end());
  set_prompt(set, o.prompt_tag, depth, shell);
  add_identity(set, id);
  return merged_environment(set);
}

// Names of path I's ends: a single link keeps the names documented for every shell (outer, inner, tm0).
void name_link(Link& k, size_t i, bool multipath) {
  const std::string n = multipath ? std::to_string(i + 1) : "";
  k.l_outer = kLinkOuterName + n;
  k.l_inner = kLinkInnerName + n;
  k.c_ifname = multipath ? kPathIfnamePrefix + n : kCommandIfname;
}

LinkPlan claim_link(Netlink& p_nl, int level, const FileDescriptor& l, const std::string& l_end) {
  for (int j = 0; j < LinkPlan::kSiblings; ++j) {
    LinkPlan plan = plan_link(level, j);
    if (p_nl.add_veth(plan.outer_ifname, plan.outer_mac, -1, l_end, plan.l_outer_mac, l.get())) return plan;
  }
  throw Error("create link: " + std::to_string(LinkPlan::kSiblings) + " links already run side by side here");
}

void wire_link_namespace(Links& ks, const FileDescriptor& home) {
  InNetns in(ks.l, home);
  Netlink nl;
  for (Link& k : ks.paths) {
    if (!nl.add_veth(k.l_inner, k.plan.l_inner_mac, -1, k.c_ifname, k.plan.inner_mac, ks.c.get()))
      throw Error("create veth pair: inner end exists");
    nl.set_up(k.l_outer);
    nl.set_up(k.l_inner);
    bind_packet_socket(k.outer_sock, nl.ifindex(k.l_outer), k.l_outer);
    bind_packet_socket(k.inner_sock, nl.ifindex(k.l_inner), k.l_inner);
  }
}

void configure_outer_ends(Netlink& nl, const Links& ks) {
  for (const Link& k : ks.paths) {
    const LinkPlan& p = k.plan;
    nl.configure_end({p.outer_ifname, p.outer4, p.outer6, p.inner4, p.inner6, p.inner_mac}, false);
  }
}

// tm-webreplay's recorded origins: local addresses of P on the link's own outer end, so they go with it.
void add_far_addresses(Netlink& nl, const LinkPlan& plan, const std::vector<std::string>& addresses) {
  for (const std::string& a : addresses)
    if (a != plan.outer4 && a != plan.outer6)
      nl.add_address(plan.outer_ifname, a + (a.find(':') == std::string::npos ? "/32" : "/128"));
}

// Path I's own routing table: what is sent from its addresses leaves by it, whatever the main table says.
void route_by_source(Netlink& nl, const Link& k, size_t i) {
  const uint32_t table = kPathTableBase + static_cast<uint32_t>(i);
  const LinkPlan& p = k.plan;
  nl.add_route("default", p.outer4, k.c_ifname, AF_INET, table);
  nl.add_route("default", p.outer6, k.c_ifname, AF_INET6, table);
  nl.add_source_rule(p.inner4, table, kPathRulePriority + static_cast<uint32_t>(i));
  nl.add_source_rule(p.inner6, table, kPathRulePriority + static_cast<uint32_t>(i));
}

PathEndpoints endpoints(Netlink& nl, const Links& ks, size_t i) {
  const Link& k = ks.paths[i];
  return {k.plan.inner4, k.plan.inner6, endpoint_id(i, false), endpoint_id(i, true), nl.ifindex(k.c_ifname)};
}

// MPTCP in C: each path's addresses are subflow endpoints, so a connection opens a subflow on every path.
void enable_mptcp(Netlink& nl, const Links& ks) {
  MptcpPathManager pm;
  pm.set_limits(MptcpPathManager::kMaxLimit, MptcpPathManager::kMaxLimit);
  for (size_t i = 0; i < ks.paths.size(); ++i) {
    const PathEndpoints e = endpoints(nl, ks, i);
    pm.add_subflow_endpoint(e.address4, e.ifindex, e.id4);
    pm.add_subflow_endpoint(e.address6, e.ifindex, e.id6);
  }
}

// notice=: a task per path that has it, each with a path manager socket made in C (a socket stays in the
// namespace it was made in).
std::vector<std::unique_ptr<PathNoticeTask>> notice_tasks(const Links& ks, const ShellOptions& o,
                                                          const FileDescriptor& home) {
  std::vector<std::unique_ptr<PathNoticeTask>> out;
  if (o.notices.empty()) return out;
  InNetns in(ks.c, home);
  Netlink nl;
  for (const PathNotice& n : o.notices)
    out.push_back(std::make_unique<PathNoticeTask>(o.tool, n, endpoints(nl, ks, n.path),
                                                   std::make_unique<MptcpPathManager>(), *o.paths_start, o.verbose));
  return out;
}

void configure_command_end(const Links& ks, const ShellOptions& o, const FileDescriptor& home) {
  InNetns in(ks.c, home);
  Netlink nl;
  nl.set_up("lo");
  for (size_t i = 0; i < ks.paths.size(); ++i) {
    const Link& k = ks.paths[i];
    const LinkPlan& p = k.plan;
    nl.configure_end({k.c_ifname, p.inner4, p.inner6, p.outer4, p.outer6, p.outer_mac}, i == o.default_path);
    if (o.multipath) route_by_source(nl, k, i);
  }
  if (o.multipath) enable_mptcp(nl, ks);
}

void report(const ShellOptions& o, const std::string& path, const PacketQueue& up, const PacketQueue& down,
            const Ferry& ferry) {
  for (auto [name, q] : {std::pair{"uplink", &up}, std::pair{"downlink", &down}}) {
    const QueueStats& s = q->stats();
    std::cerr << o.tool << ": " << path << name << ": " << s.in_packets << " packets in, " << s.out_packets << " out, "
              << s.dropped_packets << " dropped, " << s.queued_packets << " still queued\n";
    if (const std::string extra = q->summary(); !extra.empty())
      std::cerr << o.tool << ": " << path << name << ": " << extra << "\n";
  }
  if (const uint64_t refused = ferry.counters().send_errors)
    std::cerr << o.tool << ": " << path << refused << " frames refused by the kernel on send\n";
  if (const uint64_t lost = ferry.counters().lost_on_receive())
    std::cerr << o.tool << ": " << path << lost
              << " frames lost in the kernel before the ferry read them (it fell behind)\n";
}

// The command namespace, with the command's init already waiting inside it (see run_init).
pid_t make_command_namespace(Links& ks, const CommandSpec& spec, const FileDescriptor& home, FileDescriptor& go) {
  ks.c = make_netns(home);
  InNetns in(ks.c, home);  // the init must be cloned from inside C
  configure_router_namespace();
  return start_init(spec, go);
}

// The link namespace L, and the veths that join it to the parent (one per path), named so that siblings cannot
// collide.
void make_link_namespace(Links& ks, size_t paths, bool multipath, Netlink& p_nl, int level,
                         const FileDescriptor& home) {
  ks.l = make_netns(home);
  ks.paths.resize(paths);
  {
    InNetns in(ks.l, home);
    write_sysctl("net/ipv6/conf/all/disable_ipv6", "1");  // the link namespace only carries frames
    write_sysctl("net/ipv6/conf/default/disable_ipv6", "1");
    for (size_t i = 0; i < paths; ++i) {
      name_link(ks.paths[i], i, multipath);
      ks.paths[i].outer_sock = open_packet_socket(ks.paths[i].l_outer);  // rings take milliseconds: begun now
      ks.paths[i].inner_sock = open_packet_socket(ks.paths[i].l_inner);
    }
  }
  for (Link& k : ks.paths) k.plan = claim_link(p_nl, level, ks.l, k.l_outer);
}

CommandSpec command_spec(const ShellOptions& o, const Identity& id, const Links& ks, int depth,
                         const Outside& outside) {
  CommandSpec spec;
  spec.tool = o.tool;
  spec.identity = id;
  spec.argv = o.command.empty() ? std::vector<std::string>{user_shell(spec.identity)} : o.command;
  spec.env = command_environment(o, spec.identity, ks, depth, spec.argv[0]);
  spec.resolv_conf =
      o.far_dns ? "nameserver " + ks.paths[o.default_path].plan.outer4 + "\n" : outside.resolv_conf();
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

std::vector<LinkPlan> plans(const Links& ks) {
  std::vector<LinkPlan> out;
  for (const Link& k : ks.paths) out.push_back(k.plan);
  return out;
}

// One path's queues and the ferry between its link's ends.
struct Ferried {
  std::unique_ptr<PacketQueue> up, down;
  std::unique_ptr<Ferry> ferry;
};

std::vector<Ferried> start_ferries(Links& ks, const std::vector<QueueFactory>& paths, BufferPool& pool) {
  std::vector<Ferried> out(paths.size());
  for (size_t i = 0; i < paths.size(); ++i) {
    out[i].up = paths[i](Ferry::kUplink, pool);
    out[i].down = paths[i](Ferry::kDownlink, pool);
    out[i].ferry = std::make_unique<Ferry>(std::move(ks.paths[i].outer_sock), std::move(ks.paths[i].inner_sock), pool);
  }
  return out;
}

// "path 2: " in messages about path 2 of tm-multipath; nothing for a single link.
std::string path_name(const ShellOptions& o, size_t i) {
  return o.multipath ? "path " + std::to_string(i + 1) + ": " : "";
}

std::vector<FerryLink> ferry_links(std::vector<Ferried>& ferried, bool multipath) {
  std::vector<FerryLink> out;
  for (size_t i = 0; i < ferried.size(); ++i)
    out.push_back({ferried[i].ferry.get(),
                   {ferried[i].up.get(), ferried[i].down.get()},
                   multipath ? "path " + std::to_string(i + 1) + "'s " : ""});
  return out;
}

// The live counters tm-top and --meter read. A shell that cannot publish them still runs, and says so.
// tm-multipath's paths are published summed: the shell's whole traffic each way.
std::unique_ptr<live::Publisher> publish(const ShellOptions& o, const CommandSpec& spec, int depth,
                                         const std::vector<FerryLink>& links) {
  std::string command;
  for (const std::string& a : spec.argv) command += (command.empty() ? "" : " ") + a;
  try {
    auto p = std::make_unique<live::Publisher>(live::ShellFacts{o.tool, o.prompt_tag, o.arguments, command, depth},
                                               links, monotonic_now());
    if (o.meter) p->set_meter(std::make_unique<live::Meter>(o.tool, depth, STDERR_FILENO));
    return p;
  } catch (const Error& e) {
    std::cerr << o.tool << ": no live counters (tm-top and --meter cannot see this shell): " << e.what() << "\n";
    return nullptr;
  }
}

}  // namespace

int run_shell(const ShellOptions& o, const QueueFactory& make_queue) {
  return run_shell(o, std::vector<QueueFactory>{make_queue});
}

int run_shell(const ShellOptions& o, const std::vector<QueueFactory>& paths) {
  prctl(PR_SET_TIMERSLACK, 1UL);  // wake-ups as exact as the timer allows; delays are the product
  block_signals(shell_signals());
  if (o.verbose)
    for (const auto& line : o.log_lines) std::cerr << o.tool << ": " << line << "\n";

  const int depth = inherited_depth();
  const Identity identity = command_identity();  // before our own user namespace changes what getuid() says
  Outside outside(o.tool, o.outside, identity, depth, o.verbose);  // the outermost shell enters P0 here

  FileDescriptor home = current_netns(), go;
  Netlink p_nl;
  Links ks;
  make_link_namespace(ks, paths.size(), o.multipath, p_nl, depth + 1, home);
  const CommandSpec spec = command_spec(o, identity, ks, depth, outside);
  const pid_t init = make_command_namespace(ks, spec, home, go);
  wire_link_namespace(ks, home);
  configure_outer_ends(p_nl, ks);
  add_far_addresses(p_nl, ks.paths[o.default_path].plan, o.far_addresses);
  configure_command_end(ks, o, home);
  outside.connect(plans(ks), p_nl);
  // P0 is ours: an --outside far end there accepts a subflow per path (the kernel's default is 2).
  if (o.multipath && depth == 0)
    MptcpPathManager().set_limits(MptcpPathManager::kMaxLimit, MptcpPathManager::kMaxLimit);
  outside.start_command(outer_command_spec(o, identity, ks.paths[o.default_path].plan, depth, outside));

  BufferPool pool;
  std::vector<Ferried> ferried = start_ferries(ks, paths, pool);
  if (o.capture)
    o.capture->attach(o.tool, o.command_line, o.log_lines, *ferried[0].ferry, *ferried[0].up, *ferried[0].down);
  const std::vector<FerryLink> links = ferry_links(ferried, o.multipath);
  // After the links are made: their start is set.
  const std::vector<std::unique_ptr<PathNoticeTask>> notices = notice_tasks(ks, o, home);
  std::unique_ptr<live::Publisher> live = publish(o, spec, depth, links);  // seen from the start
  write_all(go.get(), "g", "start command");
  go.reset();

  EventLoop loop(o.tool, links, init, [&] { outside.on_child_exit(); });
  if (live) loop.add_task(live.get());
  for (const auto& task : notices) loop.add_task(task.get());
  const int status = loop.run();
  if (live) live->finish(monotonic_now());
  for (size_t i = 0; o.verbose && i < ferried.size(); ++i)
    report(o, path_name(o, i), *ferried[i].up, *ferried[i].down, *ferried[i].ferry);
  // Each closing netlink or packet socket waits for an RCU grace period: close them all at once.
  int outside_status = 0;
  std::thread outside_closer([&] { outside_status = outside.finish(); });
  for (Ferried& f : ferried) f.ferry.reset();
  outside_closer.join();
  return status != 0 || outside_status == 0 ? status : 1;  // a failed outside program that counts fails the run
}

}  // namespace tracemod
