// Addresses and names of one shell's link. Level k (1 = outermost) and sibling j (shells started side by side
// in one namespace) select a /30 in 100.64.0.0/10 and a /64 in fd74:6d00::/48 that no enclosing level uses.
// Each level masquerades its command's traffic as it leaves, so inner addresses never need routes outside.
#pragma once

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

// Interface names inside the link namespace and the command namespace.
constexpr const char* kLinkOuterName = "outer";
constexpr const char* kLinkInnerName = "inner";
constexpr const char* kCommandIfname = "tm0";

}  // namespace tracemod
