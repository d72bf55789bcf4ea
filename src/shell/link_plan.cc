#include "shell/link_plan.hh"

#include <cstdio>

namespace tracemod {
namespace {

std::string ipv4(uint32_t a) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%u.%u.%u.%u", a >> 24, (a >> 16) & 255, (a >> 8) & 255, a & 255);
  return buf;
}

MacAddress mac(uint32_t index, uint8_t role) {
  // Locally administered, unicast; "tm" in bytes 1-2 makes them easy to spot in captures.
  return {{0x02, 0x74, 0x6d, static_cast<uint8_t>(index >> 8), static_cast<uint8_t>(index), role}};
}

std::string ipv6(const char* prefix, uint32_t index, const char* host) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%s%x::%s", prefix, index, host);
  return buf;
}

}  // namespace

LinkPlan plan_link(int level, int sibling) {
  LinkPlan p;
  p.level = level;
  p.sibling = sibling;
  const uint32_t index = static_cast<uint32_t>((level - 1) * LinkPlan::kSiblings + sibling);
  const uint32_t base = (100u << 24) | (64u << 16);
  p.outer4 = ipv4(base + index * 4 + 1);
  p.inner4 = ipv4(base + index * 4 + 2);
  p.subnet4 = ipv4(base + index * 4) + "/30";
  char prefix[32];
  std::snprintf(prefix, sizeof prefix, "fd74:6d00:0:%x::", index);
  p.outer6 = std::string(prefix) + "1";
  p.inner6 = std::string(prefix) + "2";
  p.subnet6 = std::string(prefix) + "/64";
  p.outer_mac = mac(index, 1);
  p.inner_mac = mac(index, 2);
  p.l_outer_mac = mac(index, 3);
  p.l_inner_mac = mac(index, 4);
  p.outer_ifname = "tm" + std::to_string(level) + "-" + std::to_string(sibling);
  return p;
}

HostLinkPlan plan_host_link(uint32_t number) {
  HostLinkPlan p;
  p.number = number;
  p.host_ifname = "tmh" + std::to_string(number);
  const uint32_t base = (100u << 24) | (100u << 16);
  p.host4 = ipv4(base + number * 4 + 1);
  p.outer4 = ipv4(base + number * 4 + 2);
  p.subnet4 = ipv4(base + number * 4) + "/30";
  p.host6 = ipv6("fd74:6d00:ffff:", number, "1");
  p.outer6 = ipv6("fd74:6d00:ffff:", number, "2");
  p.subnet6 = ipv6("fd74:6d00:ffff:", number, "") + "/64";
  // Roles 5 and 6: apart from every shell link's MACs (roles 1-4).
  p.host_mac = mac(number, 5);
  p.outer_mac = mac(number, 6);
  return p;
}

}  // namespace tracemod
