// Link, address, route and neighbour changes through libnl-route-3, in one network namespace: the one the
// caller was in when the Netlink object was made (a netlink socket belongs to its creator's namespace).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

struct nl_sock;

namespace tracemod {

struct MacAddress {
  uint8_t bytes[6];
  std::string str() const;
};

// One end of a point-to-point veth link: its interface and addresses (in a /30 and a /64), and the other end's.
struct LinkEnd {
  std::string ifname, local4, local6, peer4, peer6;
  MacAddress peer_mac;
};

class Netlink {
 public:
  static constexpr uint32_t kMainTable = 254;  // RT_TABLE_MAIN, the routing table used without rules
  Netlink();
  ~Netlink();
  Netlink(const Netlink&) = delete;
  Netlink& operator=(const Netlink&) = delete;

  // Creates a veth pair NAME (here, or in namespace NS_FD if >= 0) <-> PEER (in namespace PEER_NS_FD).
  // Returns false if NAME already exists (the creation is atomic, so this is how names are claimed).
  bool add_veth(const std::string& name, const MacAddress& mac, int ns_fd, const std::string& peer,
                const MacAddress& peer_mac, int peer_ns_fd);
  // Deletes interface NAME (a veth pair with it); false if there is none.
  bool delete_link(const std::string& name);
  int ifindex(const std::string& name);
  void set_up(const std::string& name);
  // ADDRESS is "a.b.c.d/len" or "x::y/len"; duplicate address detection is skipped (the link is ours).
  void add_address(const std::string& name, const std::string& address);
  // DESTINATION is a prefix ("default" allowed), GATEWAY an address on NAME's link; in routing table TABLE.
  void add_route(const std::string& destination, const std::string& gateway, const std::string& name, int family,
                 uint32_t table = kMainTable);
  // A policy routing rule: packets from SOURCE (an address, as a host prefix) look up routing table TABLE, at
  // PRIORITY (before the main table's 32766).
  void add_source_rule(const std::string& source, uint32_t table, uint32_t priority);
  // A permanent neighbour entry, so the first packet needs no ARP/ND round trip across the emulated link.
  void add_neighbour(const std::string& name, const std::string& address, const MacAddress& mac);

  struct DefaultRoute {
    std::string gateway;  // empty if the route has no gateway
    std::string ifname;
  };
  std::optional<DefaultRoute> default_route(int family);

  // END's addresses, the interface up, permanent neighbour entries for the other end; with DEFAULT_ROUTE,
  // default routes (v4 and v6) through the other end.
  void configure_end(const LinkEnd& end, bool default_route);

 private:
  struct SockDeleter {
    void operator()(nl_sock* s) const;
  };
  std::unique_ptr<nl_sock, SockDeleter> sock_;
};

}  // namespace tracemod
