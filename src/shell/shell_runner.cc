#include "shell/shell_runner.hh"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <thread>

#include "live/page.hh"
#include "live/publisher.hh"
#include "packet/event_loop.hh"
#include "packet/series_queue.hh"
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
    // TM_PS1_PREFIX is only meaningful next to the PS1 it was set with; TM_FUSED only for the command it was set for.
    bool replaced = key == "TM_PS1_PREFIX" || key == "TM_FUSED";
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
                                             const std::string& shell, const std::string& fused) {
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
  if (!fused.empty()) set.push_back({"TM_FUSED", fused});
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

// -v's counters at exit; FERRY's too unless null (a fused level: the ferry's are the outermost level's to say).
void report(const ShellOptions& o, const std::string& path, const PacketQueue& up, const PacketQueue& down,
            const Ferry* ferry) {
  for (auto [name, q] : {std::pair{"uplink", &up}, std::pair{"downlink", &down}}) {
    const QueueStats& s = q->stats();
    std::cerr << o.tool << ": " << path << name << ": " << s.in_packets << " packets in, " << s.out_packets << " out, "
              << s.dropped_packets << " dropped, " << s.queued_packets << " still queued\n";
    if (const std::string extra = q->summary(); !extra.empty())
      std::cerr << o.tool << ": " << path << name << ": " << extra << "\n";
  }
  if (!ferry) return;
  if (const uint64_t refused = ferry->counters().send_errors)
    std::cerr << o.tool << ": " << path << refused << " frames refused by the kernel on send\n";
  if (const uint64_t lost = ferry->counters().lost_on_receive())
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

// TM_FUSED, what each fused level's process needs of the shell running its queues: its live page's descriptor
// (-1: none) and its prompt tag, level after level. Empty if nothing is fused.
constexpr char kFieldSeparator = '\x1f', kLevelSeparator = '\x1e';

std::string fused_variable(const ShellOptions& o, const std::vector<FileDescriptor>& pages) {
  std::string v;
  for (size_t i = 0; i < o.fused.size(); ++i)
    v += (i ? std::string(1, kLevelSeparator) : "") + std::to_string(pages[i].valid() ? pages[i].get() : -1) +
         kFieldSeparator + o.fused[i].options.prompt_tag;
  return v;
}

// The fused levels' pages, made before the command's init (which hands them to the levels' processes). A level
// without one still runs, and says so, as a shell that cannot publish does.
std::vector<FileDescriptor> fused_pages(const ShellOptions& o) {
  std::vector<FileDescriptor> pages;
  for (const FusedLevel& f : o.fused) try {
      pages.push_back(live::make_page());
    } catch (const Error& e) {
      std::cerr << f.options.tool << ": no live counters (tm-top and --meter cannot see this shell): " << e.what()
                << "\n";
      pages.emplace_back();
    }
  return pages;
}

// This level's part of TM_FUSED, and the levels' below it.
struct FusedEntry {
  int page = -1;
  std::string tag, rest;
};

bool is_live_page(int fd) {
  char target[256];
  const ssize_t n = readlink(("/proc/self/fd/" + std::to_string(fd)).c_str(), target, sizeof target - 1);
  return n > 0 &&
         std::string(target, static_cast<size_t>(n)) == std::string("/memfd:") + live::kMemfdName + " (deleted)";
}

FusedEntry fused_entry(const std::string& value) {
  const Error stale("TM_FUSED in the environment was not set for this shell by a tracemod shell fusing it: unset it");
  FusedEntry e;
  const size_t end = value.find(kLevelSeparator), field = value.find(kFieldSeparator);
  if (field == std::string::npos || field > end) throw stale;
  char* last = nullptr;
  const std::string page = value.substr(0, field);
  const long fd = std::strtol(page.c_str(), &last, 10);
  if (page.empty() || *last || fd < -1 || fd > INT32_MAX || (fd >= 0 && !is_live_page(static_cast<int>(fd))))
    throw stale;
  e.page = static_cast<int>(fd);
  e.tag = value.substr(field + 1, end == std::string::npos ? std::string::npos : end - field - 1);
  if (end != std::string::npos) e.rest = value.substr(end + 1);
  return e;
}

// The pages of the levels below this one, each named first in its part of REST: their processes', not ours.
std::vector<int> deeper_pages(const std::string& rest) {
  std::vector<int> fds;
  for (size_t at = 0; !rest.empty() && at != std::string::npos;) {
    const int fd = std::atoi(rest.c_str() + at);
    if (fd >= 0) fds.push_back(fd);
    at = rest.find(kLevelSeparator, at);
    if (at != std::string::npos) ++at;
  }
  return fds;
}

CommandSpec command_spec(const ShellOptions& o, const Identity& id, const Links& ks, int depth, const Outside& outside,
                         const std::vector<FileDescriptor>& pages) {
  CommandSpec spec;
  spec.tool = o.tool;
  spec.identity = id;
  spec.argv = o.command.empty() ? std::vector<std::string>{user_shell(spec.identity)} : o.command;
  spec.env = command_environment(o, spec.identity, ks, depth, spec.argv[0], fused_variable(o, pages));
  for (const FileDescriptor& page : pages)
    if (page.valid()) spec.pass_fds.push_back(page.get());
  spec.resolv_conf = o.far_dns ? "nameserver " + ks.paths[o.default_path].plan.outer4 + "\n" : outside.resolv_conf();
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

// One path's queues and the ferry between its link's ends; with fused levels, each direction is a series of their
// queues (SERIES), level L's stage being L on the downlink and N-L on the uplink (N levels fused under this one).
struct Ferried {
  std::unique_ptr<PacketQueue> up, down;
  std::unique_ptr<Ferry> ferry;
  SeriesQueue* series[2] = {};
};

// Direction D of OWN's queue and those of the shells fused under it, in the order packets meet them: the
// outermost first on the downlink, the innermost first on the uplink, as they meet them unfused.
std::unique_ptr<SeriesQueue> stacked(const ShellOptions& o, const QueueFactory& own, Ferry::Direction d,
                                     BufferPool& pool) {
  std::vector<std::unique_ptr<PacketQueue>> stages;
  stages.push_back(own(d, pool));
  for (const FusedLevel& f : o.fused) stages.push_back(f.make_queue(d, pool));
  if (d == Ferry::kUplink) std::reverse(stages.begin(), stages.end());
  return std::make_unique<SeriesQueue>(std::move(stages));
}

std::vector<Ferried> start_ferries(Links& ks, const ShellOptions& o, const std::vector<QueueFactory>& paths,
                                   BufferPool& pool) {
  std::vector<Ferried> out(paths.size());
  for (size_t i = 0; i < paths.size(); ++i) {
    if (o.fused.empty()) {
      out[i].up = paths[i](Ferry::kUplink, pool);
      out[i].down = paths[i](Ferry::kDownlink, pool);
    } else {
      auto up = stacked(o, paths[i], Ferry::kUplink, pool), down = stacked(o, paths[i], Ferry::kDownlink, pool);
      out[i].series[0] = up.get();
      out[i].series[1] = down.get();
      out[i].up = std::move(up);
      out[i].down = std::move(down);
    }
    out[i].ferry = std::make_unique<Ferry>(std::move(ks.paths[i].outer_sock), std::move(ks.paths[i].inner_sock), pool);
  }
  return out;
}

// Level L of a fused stack (0: the shell running it) as its page shows it: its own stage each way.
live::LiveSource level_source(const Ferried& f, size_t fused, size_t level) {
  SeriesQueue* const up = f.series[0];
  SeriesQueue* const down = f.series[1];
  const size_t at[2] = {fused - level, level};
  return {{&up->stage(at[0]), &down->stage(at[1])},
          [up, down, at](int d) {
            SeriesQueue* s = d == Ferry::kUplink ? up : down;
            FlowCounters c = s->stage_flow(at[d]);
            c.sojourn_max = s->take_stage_sojourn_max(at[d]);
            return c;
          },
          level == 0 ? &f.ferry->counters() : nullptr};
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
std::unique_ptr<live::Publisher> publish(const ShellOptions& o, const std::vector<std::string>& argv, int depth,
                                         std::vector<live::LiveSource> sources, FileDescriptor page = {}) {
  std::string command;
  for (const std::string& a : argv) command += (command.empty() ? "" : " ") + a;
  try {
    auto p = std::make_unique<live::Publisher>(live::ShellFacts{o.tool, o.prompt_tag, o.arguments, command, depth},
                                               std::move(sources), monotonic_now(), std::move(page));
    if (o.meter) p->set_meter(std::make_unique<live::Meter>(o.tool, depth, STDERR_FILENO));
    return p;
  } catch (const Error& e) {
    std::cerr << o.tool << ": no live counters (tm-top and --meter cannot see this shell): " << e.what() << "\n";
    return nullptr;
  }
}

// The pages of this shell and of the levels fused under it (handed PAGES, made for them), this shell's first.
std::vector<std::unique_ptr<live::Publisher>> publish_all(const ShellOptions& o, const CommandSpec& spec, int depth,
                                                          const std::vector<FerryLink>& links,
                                                          const std::vector<Ferried>& ferried,
                                                          std::vector<FileDescriptor>& pages) {
  std::vector<std::unique_ptr<live::Publisher>> out;
  if (o.fused.empty()) {
    out.push_back(publish(o, spec.argv, depth, live::ferry_sources(links)));
    return out;
  }
  out.push_back(publish(o, spec.argv, depth, {level_source(ferried[0], o.fused.size(), 0)}));
  for (size_t l = 1; l <= o.fused.size(); ++l) {
    const ShellOptions& level = o.fused[l - 1].options;
    const std::vector<std::string> argv =
        level.command.empty() ? std::vector<std::string>{user_shell(spec.identity)} : level.command;
    if (pages[l - 1].valid())
      out.push_back(publish(level, argv, depth + static_cast<int>(l), {level_source(ferried[0], o.fused.size(), l)},
                            std::move(pages[l - 1])));
  }
  return out;
}

// -v's counters at exit, of every level this shell runs: the innermost first, as they would end unfused.
void report_all(const ShellOptions& o, const std::vector<Ferried>& ferried) {
  const size_t n = o.fused.size();
  for (size_t l = n; l >= 1 && n > 0; --l) {
    const ShellOptions& level = o.fused[l - 1].options;
    const Ferried& f = ferried[0];
    if (level.verbose) report(level, "", f.series[0]->stage(n - l), f.series[1]->stage(l), nullptr);
  }
  for (size_t i = 0; o.verbose && i < ferried.size(); ++i) {
    const Ferried& f = ferried[i];
    if (n == 0)
      report(o, path_name(o, i), *f.up, *f.down, f.ferry.get());
    else
      report(o, path_name(o, i), f.series[0]->stage(n), f.series[1]->stage(0), f.ferry.get());
  }
}

// -v's start: each fused level's own lines, and that it is fused.
void say_fused(const ShellOptions& o, int depth) {
  for (size_t l = 1; l <= o.fused.size(); ++l) {
    const ShellOptions& level = o.fused[l - 1].options;
    if (o.verbose)
      std::cerr << o.tool << ": " << level.tool << " (level " << depth + 1 + static_cast<int>(l)
                << ") is fused: its queues run in this shell's ferry, with no link of its own\n";
    if (!level.verbose) continue;
    for (const auto& line : level.log_lines) std::cerr << level.tool << ": " << line << "\n";
    std::cerr << level.tool << ": fused into " << (l == 1 ? o.tool : o.fused[l - 2].options.tool)
              << " above it: its queues run in " << o.tool
              << "'s ferry (TM_NO_FUSE=1 or --no-fuse: a link of its own)\n";
  }
}

}  // namespace

bool started_fused() {
  const char* v = getenv("TM_FUSED");
  return v && *v;
}

int run_fused_shell(const ShellOptions& o) {
  const FusedEntry mine = fused_entry(getenv("TM_FUSED"));
  const int depth = inherited_depth();
  CommandSpec spec;
  spec.tool = o.tool;
  spec.argv = o.command.empty() ? std::vector<std::string>{user_shell(Identity{})} : o.command;
  std::vector<std::pair<std::string, std::string>> set = {{"TM_DEPTH", std::to_string(depth + 1)}};
  if (!mine.rest.empty()) set.push_back({"TM_FUSED", mine.rest});
  set_prompt(set, mine.tag, depth, spec.argv[0]);
  spec.env = merged_environment(set);
  spec.pass_fds = deeper_pages(mine.rest);
  if (mine.page >= 0) fcntl(mine.page, F_SETFD, FD_CLOEXEC);  // ours to hold, not the command's
  prctl(PR_SET_DUMPABLE, 1);  // tm-top, as our user, reads the page through /proc/PID/fd
  return run_child_command(spec);
}

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

  say_fused(o, depth);
  FileDescriptor home = current_netns(), go;
  Netlink p_nl;
  Links ks;
  make_link_namespace(ks, paths.size(), o.multipath, p_nl, depth + 1, home);
  std::vector<FileDescriptor> pages = fused_pages(o);
  const CommandSpec spec = command_spec(o, identity, ks, depth, outside, pages);
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
  std::vector<Ferried> ferried = start_ferries(ks, o, paths, pool);
  if (o.capture)
    o.capture->attach(o.tool, o.command_line, o.log_lines, *ferried[0].ferry, *ferried[0].up, *ferried[0].down);
  const std::vector<FerryLink> links = ferry_links(ferried, o.multipath);
  // After the links are made: their start is set.
  const std::vector<std::unique_ptr<PathNoticeTask>> notices = notice_tasks(ks, o, home);
  // Seen from the start; a fused level's page is written before its process can be asked for it.
  const std::vector<std::unique_ptr<live::Publisher>> live = publish_all(o, spec, depth, links, ferried, pages);
  write_all(go.get(), "g", "start command");
  go.reset();

  EventLoop loop(o.tool, links, init, [&] { outside.on_child_exit(); });
  for (const auto& p : live)
    if (p) loop.add_task(p.get());
  for (const auto& task : notices) loop.add_task(task.get());
  const int status = loop.run();
  for (const auto& p : live)
    if (p) p->finish(monotonic_now());
  report_all(o, ferried);
  // Each closing netlink or packet socket waits for an RCU grace period: close them all at once.
  int outside_status = 0;
  std::thread outside_closer([&] { outside_status = outside.finish(); });
  for (Ferried& f : ferried) f.ferry.reset();
  outside_closer.join();
  return status != 0 || outside_status == 0 ? status : 1;  // a failed outside program that counts fails the run
}

}  // namespace tracemod
