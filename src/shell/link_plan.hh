// Addresses and names of one shell's link. Level k (1 = outermost) and sibling j (shells started side by side
// in one namespace) select a /30 in 100.64.0.0/10 and a /64 in fd74:6d00::/48 that no enclosing level uses.
// Each level masquerades its command's traffic as it leaves, so inner addresses never need routes outside.
#pragma once

#include <cstdint>
#include <string>

#include "util/netlink.hh"

namespace tracemod {

struct LinkPlan {
  static constexpr int kSiblings = 64;
  static constexpr int kMaxLevel = 1024;  // fd74:6d00:0:IDX::/64 with a 16-bit IDX
  int level = 1, sibling = 0;
  std::string outer4, inner4, subnet4;  // outer = the parent namespace's end, inner = the command's end
  std::string outer6, inner6, subnet6;
  MacAddress outer_mac, inner_mac, l_outer_mac, l_inner_mac;
  std::string outer_ifname;  // in the parent namespace; claimed atomically, so siblings cannot collide
};

LinkPlan plan_link(int level, int sibling);

// The kernel path's link between the host and the outermost shell's private outer namespace P0 (see
// src/shell/outside.hh). Each running shell claims its own number N: the host end is named tmhN, and its
// /30 in 100.100.0.0/16 and /64 in fd74:6d00:ffff::/48 lie outside every shell's link plan, so concurrent
// shells never collide on the host.
struct HostLinkPlan {
  static constexpr uint32_t kCount = 16384;  // /30s in 100.100.0.0/16
  uint32_t number = 0;
  std::string host_ifname;             // in the host namespace
  std::string host4, outer4, subnet4;  // host = the host's end, outer = P0's end
  std::string host6, outer6, subnet6;
  MacAddress host_mac, outer_mac;
};

HostLinkPlan plan_host_link(uint32_t number);

// P0's end of the host link.
constexpr const char* kHostLinkOuterName = "host0";

// Interface names inside the link namespace and the command namespace.
constexpr const char* kLinkOuterName = "outer";
constexpr const char* kLinkInnerName = "inner";
constexpr const char* kCommandIfname = "tm0";
// tm-multipath: path N's interface in the command namespace is pathN; its link's ends in L are outerN and innerN.
constexpr const char* kPathIfnamePrefix = "path";
// Path N's routing table in the command namespace (what its addresses send goes by it), and its rules' priority.
constexpr uint32_t kPathTableBase = 100;
constexpr uint32_t kPathRulePriority = 1000;

}  // namespace tracemod
