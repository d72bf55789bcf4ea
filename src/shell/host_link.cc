#include "shell/host_link.hh"

#include <sys/socket.h>

#include <fstream>
#include <sstream>

#include "util/error.hh"
#include "util/file_descriptor.hh"
#include "util/namespaces.hh"  // write_sysctl
#include "util/netlink.hh"

namespace tracemod {
namespace {

// Per-interface settings of the host end, which die with it: accept DNAT to 127.0.0.1 (route_localnet), and no
// IPv6 router solicitations or autoconfiguration on a link that only P0 sits behind.
void configure_host_end(const HostLinkPlan& p) {
  const std::string v4 = "net/ipv4/conf/" + p.host_ifname + "/", v6 = "net/ipv6/conf/" + p.host_ifname + "/";
  write_sysctl(v4 + "route_localnet", "1");
  write_sysctl(v6 + "accept_ra", "0");
  write_sysctl(v6 + "router_solicitations", "0");
  write_sysctl(v6 + "accept_dad", "0");
  Netlink().configure_end({p.host_ifname, p.host4, p.host6, p.outer4, p.outer6, p.outer_mac}, false);
}

// TCP and UDP to the host end's IPv4 address reach the host's services, whatever address they listen on
// (127.0.0.1 included: route_localnet); IPv6 reaches services on :: directly (IPv6 cannot route to ::1).
// What P0 sends further is masqueraded, so the network beyond sees the host.
std::string host_rules(const std::string& table, const HostLinkPlan& p, const std::string& resolver) {
  const std::string t = "inet " + table, in = "iifname \"" + p.host_ifname + "\" ";
  std::string r = "add chain " + t + " pre { type nat hook prerouting priority dstnat; policy accept; }\n";
  if (!resolver.empty())
    r += "add rule " + t + " pre " + in + "ip daddr " + kDnsForward +
         " meta l4proto { tcp, udp } th dport 53 dnat ip to " + resolver + "\n";
  r += "add rule " + t + " pre " + in + "ip daddr " + p.host4 + " meta l4proto { tcp, udp } dnat ip to 127.0.0.1\n";
  r += "add chain " + t + " post { type nat hook postrouting priority srcnat; policy accept; }\n";
  r += "add rule " + t + " post ip saddr " + p.subnet4 + " oifname != \"" + p.host_ifname + "\" masquerade\n";
  r += "add rule " + t + " post ip6 saddr " + p.subnet6 + " oifname != \"" + p.host_ifname + "\" masquerade\n";
  return r;
}

HostLinkPlan claim(Netlink& nl, int p0_fd, uint32_t start) {
  for (uint32_t i = 0; i < HostLinkPlan::kCount; ++i) {
    HostLinkPlan p = plan_host_link((start + i) % HostLinkPlan::kCount);
    if (nl.add_veth(p.host_ifname, p.host_mac, -1, kHostLinkOuterName, p.outer_mac, p0_fd)) return p;
  }
  throw Error("create host link: every tmhN name is taken");
}

std::string read_setting(const char* key) {
  try {
    std::string v = read_file(std::string("/proc/sys/") + key);
    while (!v.empty() && (v.back() == '\n' || v.back() == ' ')) v.pop_back();
    return v;
  } catch (const Error&) {
    return "";  // IPv6 disabled: nothing to forward
  }
}

// Whether the host has a default route of FAMILY, from /proc/net (cheaper than a netlink dump of all routes):
// without one there is no network beyond the host to forward to.
bool has_default_route(int family) {
  std::ifstream in(family == AF_INET ? "/proc/net/route" : "/proc/net/ipv6_route");
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream f(line);
    std::string a, b, c;
    if (family == AF_INET) {  // Iface Destination Gateway Flags RefCnt Use Metric Mask
      std::string flags, refcnt, use, metric, mask;
      if (f >> a >> b >> c >> flags >> refcnt >> use >> metric >> mask && b == "00000000" && mask == "00000000")
        return true;
    } else if (f >> a >> b && a == std::string(32, '0') && b == "00") {  // destination, its prefix length
      return true;
    }
  }
  return false;
}

struct Forwarding {
  const char* key;
  const char* name;
  int family;
};
constexpr Forwarding kForwarding[] = {{"net/ipv4/ip_forward", "net.ipv4.ip_forward", AF_INET},
                                      {"net/ipv6/conf/all/forwarding", "net.ipv6.conf.all.forwarding", AF_INET6}};

}  // namespace

// If this fails half way, what was made goes with P0 as the shell exits.
HostLink::HostLink(int p0_fd, uint32_t start, const std::string& resolver) {
  Netlink nl;
  plan_ = claim(nl, p0_fd, start);
  configure_host_end(plan_);
  const std::string table = "tracemod_host_" + std::to_string(plan_.number);
  table_ = std::make_unique<OwnedNftTable>(table, host_rules(table, plan_, resolver));
}

void HostLink::remove() {
  Netlink().delete_link(plan_.host_ifname);
}

std::string forwarding_settings_off() {
  std::string off;
  for (const Forwarding& f : kForwarding)
    if (read_setting(f.key) == "0" && has_default_route(f.family))
      off += (off.empty() ? "" : ", ") + std::string(f.name) + "=0";
  return off;
}

std::string turn_forwarding_on() {
  std::string changed;
  for (const Forwarding& f : kForwarding) {
    if (read_setting(f.key) != "0") continue;
    write_sysctl(f.key, "1");
    changed += (changed.empty() ? "" : ", ") + std::string(f.name) + "=1";
  }
  return changed;
}

}  // namespace tracemod
