#include "util/netlink.hh"

#include <linux/fib_rules.h>
#include <linux/if.h>
#include <linux/if_addr.h>
#include <linux/neighbour.h>
#include <linux/rtnetlink.h>
#include <netlink/addr.h>
#include <netlink/cache.h>
#include <netlink/errno.h>
#include <netlink/netlink.h>
#include <netlink/route/addr.h>
#include <netlink/route/link.h>
#include <netlink/route/link/veth.h>
#include <netlink/route/neighbour.h>
#include <netlink/route/route.h>
#include <netlink/route/rule.h>
#include <sys/socket.h>

#include <cstdio>

#include "util/error.hh"

namespace tracemod {
namespace {

[[noreturn]] void fail(const std::string& what, int nl_err) {
  throw Error(what + ": " + nl_geterror(nl_err));
}

void check(const std::string& what, int nl_err) {
  if (nl_err < 0) fail(what, nl_err);
}

template <typename T, void (*Free)(T*)>
struct Freer {
  void operator()(T* p) const {
    if (p) Free(p);
  }
};
using Link = std::unique_ptr<rtnl_link, Freer<rtnl_link, rtnl_link_put>>;
using Addr = std::unique_ptr<nl_addr, Freer<nl_addr, nl_addr_put>>;
using RtAddr = std::unique_ptr<rtnl_addr, Freer<rtnl_addr, rtnl_addr_put>>;
using Route = std::unique_ptr<rtnl_route, Freer<rtnl_route, rtnl_route_put>>;
using Neigh = std::unique_ptr<rtnl_neigh, Freer<rtnl_neigh, rtnl_neigh_put>>;
using Rule = std::unique_ptr<rtnl_rule, Freer<rtnl_rule, rtnl_rule_put>>;
using Cache = std::unique_ptr<nl_cache, Freer<nl_cache, nl_cache_free>>;

Addr parse_addr(const std::string& text, int family) {
  nl_addr* a = nullptr;
  check("parse address " + text, nl_addr_parse(text.c_str(), family, &a));
  return Addr(a);
}

Addr mac_addr(const MacAddress& mac) {
  return Addr(nl_addr_build(AF_LLC, mac.bytes, sizeof mac.bytes));
}

}  // namespace

std::string MacAddress::str() const {
  char buf[18];
  std::snprintf(buf, sizeof buf, "%02x:%02x:%02x:%02x:%02x:%02x", bytes[0], bytes[1], bytes[2], bytes[3], bytes[4],
                bytes[5]);
  return buf;
}

void Netlink::SockDeleter::operator()(nl_sock* s) const {
  nl_socket_free(s);
}

Netlink::Netlink() : sock_(nl_socket_alloc()) {
  if (!sock_) throw Error("netlink: out of memory");
  check("connect to rtnetlink", nl_connect(sock_.get(), NETLINK_ROUTE));
}

Netlink::~Netlink() = default;

bool Netlink::add_veth(const std::string& name, const MacAddress& mac, int ns_fd, const std::string& peer,
                       const MacAddress& peer_mac, int peer_ns_fd) {
  Link link(rtnl_link_veth_alloc());
  if (!link) throw Error("netlink: out of memory");
  rtnl_link_set_name(link.get(), name.c_str());
  rtnl_link_set_addr(link.get(), mac_addr(mac).get());
  if (ns_fd >= 0) rtnl_link_set_ns_fd(link.get(), ns_fd);
  Link peer_link(rtnl_link_veth_get_peer(link.get()));
  rtnl_link_set_name(peer_link.get(), peer.c_str());
  rtnl_link_set_addr(peer_link.get(), mac_addr(peer_mac).get());
  rtnl_link_set_ns_fd(peer_link.get(), peer_ns_fd);
  const int err = rtnl_link_add(sock_.get(), link.get(), NLM_F_CREATE | NLM_F_EXCL);
  if (err == -NLE_EXIST) return false;
  check("create veth pair " + name + "/" + peer, err);
  return true;
}

bool Netlink::delete_link(const std::string& name) {
  Link link(rtnl_link_alloc());
  if (!link) throw Error("netlink: out of memory");
  rtnl_link_set_name(link.get(), name.c_str());
  const int err = rtnl_link_delete(sock_.get(), link.get());
  if (err == -NLE_NODEV || err == -NLE_OBJ_NOTFOUND) return false;
  check("delete interface " + name, err);
  return true;
}

int Netlink::ifindex(const std::string& name) {
  rtnl_link* raw = nullptr;
  check("find interface " + name, rtnl_link_get_kernel(sock_.get(), 0, name.c_str(), &raw));
  Link link(raw);
  return rtnl_link_get_ifindex(link.get());
}

void Netlink::set_up(const std::string& name) {
  rtnl_link* raw = nullptr;
  check("find interface " + name, rtnl_link_get_kernel(sock_.get(), 0, name.c_str(), &raw));
  Link current(raw);
  Link change(rtnl_link_alloc());
  rtnl_link_set_flags(change.get(), IFF_UP);
  check("bring up " + name, rtnl_link_change(sock_.get(), current.get(), change.get(), 0));
}

void Netlink::add_address(const std::string& name, const std::string& address) {
  RtAddr addr(rtnl_addr_alloc());
  Addr local = parse_addr(address, AF_UNSPEC);
  rtnl_addr_set_ifindex(addr.get(), ifindex(name));
  rtnl_addr_set_family(addr.get(), nl_addr_get_family(local.get()));
  check("set address " + address + " on " + name, rtnl_addr_set_local(addr.get(), local.get()));
  rtnl_addr_set_flags(addr.get(), IFA_F_NODAD);
  check("add address " + address + " to " + name, rtnl_addr_add(sock_.get(), addr.get(), NLM_F_CREATE | NLM_F_EXCL));
}

void Netlink::add_route(const std::string& destination, const std::string& gateway, const std::string& name, int family,
                        uint32_t table) {
  Route route(rtnl_route_alloc());
  Addr dst = parse_addr(destination, family);
  rtnl_route_set_family(route.get(), static_cast<uint8_t>(family));
  check("route destination " + destination, rtnl_route_set_dst(route.get(), dst.get()));
  rtnl_route_set_table(route.get(), table);
  rtnl_route_set_protocol(route.get(), RTPROT_STATIC);
  rtnl_route_set_scope(route.get(), RT_SCOPE_UNIVERSE);
  rtnl_nexthop* nh = rtnl_route_nh_alloc();  // owned by the route once added
  rtnl_route_nh_set_ifindex(nh, ifindex(name));
  rtnl_route_nh_set_gateway(nh, parse_addr(gateway, family).get());
  rtnl_route_add_nexthop(route.get(), nh);
  check("add route " + destination + " via " + gateway,
        rtnl_route_add(sock_.get(), route.get(), NLM_F_CREATE | NLM_F_EXCL));
}

void Netlink::add_source_rule(const std::string& source, uint32_t table, uint32_t priority) {
  Rule rule(rtnl_rule_alloc());
  if (!rule) throw Error("netlink: out of memory");
  Addr src = parse_addr(source, AF_UNSPEC);
  rtnl_rule_set_family(rule.get(), nl_addr_get_family(src.get()));
  check("rule source " + source, rtnl_rule_set_src(rule.get(), src.get()));
  rtnl_rule_set_table(rule.get(), table);
  rtnl_rule_set_prio(rule.get(), priority);
  rtnl_rule_set_action(rule.get(), FR_ACT_TO_TBL);
  check("add rule from " + source + " to table " + std::to_string(table),
        rtnl_rule_add(sock_.get(), rule.get(), NLM_F_CREATE | NLM_F_EXCL));
}

void Netlink::add_neighbour(const std::string& name, const std::string& address, const MacAddress& mac) {
  Neigh neigh(rtnl_neigh_alloc());
  Addr dst = parse_addr(address, AF_UNSPEC);
  rtnl_neigh_set_ifindex(neigh.get(), ifindex(name));
  rtnl_neigh_set_family(neigh.get(), nl_addr_get_family(dst.get()));
  rtnl_neigh_set_dst(neigh.get(), dst.get());
  rtnl_neigh_set_lladdr(neigh.get(), mac_addr(mac).get());
  rtnl_neigh_set_state(neigh.get(), NUD_PERMANENT);
  check("add neighbour " + address + " on " + name,
        rtnl_neigh_add(sock_.get(), neigh.get(), NLM_F_CREATE | NLM_F_REPLACE));
}

void Netlink::configure_end(const LinkEnd& e, bool default_route) {
  add_address(e.ifname, e.local4 + "/30");
  add_address(e.ifname, e.local6 + "/64");
  set_up(e.ifname);
  add_neighbour(e.ifname, e.peer4, e.peer_mac);
  add_neighbour(e.ifname, e.peer6, e.peer_mac);
  if (!default_route) return;
  add_route("default", e.peer4, e.ifname, AF_INET);
  add_route("default", e.peer6, e.ifname, AF_INET6);
}

std::optional<Netlink::DefaultRoute> Netlink::default_route(int family) {
  nl_cache* raw = nullptr;
  check("read routes", rtnl_route_alloc_cache(sock_.get(), family, 0, &raw));
  Cache routes(raw);
  nl_cache* lraw = nullptr;
  check("read links", rtnl_link_alloc_cache(sock_.get(), AF_UNSPEC, &lraw));
  Cache links(lraw);
  for (nl_object* o = nl_cache_get_first(routes.get()); o; o = nl_cache_get_next(o)) {
    auto* r = reinterpret_cast<rtnl_route*>(o);
    if (rtnl_route_get_table(r) != RT_TABLE_MAIN) continue;
    if (nl_addr_get_prefixlen(rtnl_route_get_dst(r)) != 0 || rtnl_route_get_nnexthops(r) < 1) continue;
    rtnl_nexthop* nh = rtnl_route_nexthop_n(r, 0);
    DefaultRoute out;
    if (nl_addr* gw = rtnl_route_nh_get_gateway(nh)) {
      char buf[64];
      out.gateway = nl_addr2str(gw, buf, sizeof buf);
    }
    char name[IFNAMSIZ] = {};
    rtnl_link_i2name(links.get(), rtnl_route_nh_get_ifindex(nh), name, sizeof name);
    out.ifname = name;
    return out;
  }
  return std::nullopt;
}

}  // namespace tracemod
