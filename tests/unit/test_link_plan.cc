#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <net/if.h>

#include <cstring>
#include <set>
#include <string>

#include "shell/link_plan.hh"

namespace tracemod {
namespace {

uint32_t parse4(const std::string& s) {
  in_addr a{};
  EXPECT_EQ(inet_pton(AF_INET, s.c_str(), &a), 1) << s;
  return ntohl(a.s_addr);
}

std::string parse6(const std::string& s) {
  in6_addr a{};
  EXPECT_EQ(inet_pton(AF_INET6, s.c_str(), &a), 1) << s;
  return std::string(reinterpret_cast<const char*>(a.s6_addr), 16);
}

// "a.b.c.d/len" -> address and length.
std::pair<std::string, int> split_prefix(const std::string& s) {
  const auto slash = s.find('/');
  EXPECT_NE(slash, std::string::npos) << s;
  return {s.substr(0, slash), std::stoi(s.substr(slash + 1))};
}

TEST(LinkPlan, LevelOneSiblingZero) {
  const LinkPlan p = plan_link(1, 0);
  EXPECT_EQ(p.level, 1);
  EXPECT_EQ(p.sibling, 0);
  EXPECT_EQ(p.outer4, "100.64.0.1");
  EXPECT_EQ(p.inner4, "100.64.0.2");
  EXPECT_EQ(p.subnet4, "100.64.0.0/30");
  EXPECT_EQ(p.outer6, "fd74:6d00:0:0::1");
  EXPECT_EQ(p.inner6, "fd74:6d00:0:0::2");
  EXPECT_EQ(p.subnet6, "fd74:6d00:0:0::/64");
  EXPECT_EQ(p.outer_ifname, "tm1-0");
  EXPECT_EQ(p.outer_mac.str(), "02:74:6d:00:00:01");
  EXPECT_EQ(p.inner_mac.str(), "02:74:6d:00:00:02");
  EXPECT_EQ(p.l_outer_mac.str(), "02:74:6d:00:00:03");
  EXPECT_EQ(p.l_inner_mac.str(), "02:74:6d:00:00:04");
}

TEST(LinkPlan, LevelTwoSiblingThree) {
  const LinkPlan p = plan_link(2, 3);  // link index 1 * 64 + 3 = 67
  EXPECT_EQ(p.subnet4, "100.64.1.12/30");
  EXPECT_EQ(p.outer4, "100.64.1.13");
  EXPECT_EQ(p.inner4, "100.64.1.14");
  EXPECT_EQ(p.subnet6, "fd74:6d00:0:43::/64");
  EXPECT_EQ(p.outer6, "fd74:6d00:0:43::1");
  EXPECT_EQ(p.inner6, "fd74:6d00:0:43::2");
  EXPECT_EQ(p.outer_ifname, "tm2-3");
  EXPECT_EQ(p.outer_mac.str(), "02:74:6d:00:43:01");
}

TEST(LinkPlan, MacsAreLocallyAdministeredUnicast) {
  for (int level : {1, 17, 32})
    for (int sibling : {0, 63}) {
      const LinkPlan p = plan_link(level, sibling);
      for (const MacAddress* m : {&p.outer_mac, &p.inner_mac, &p.l_outer_mac, &p.l_inner_mac}) {
        EXPECT_EQ(m->bytes[0] & 0x01, 0) << "multicast bit set";
        EXPECT_EQ(m->bytes[0] & 0x02, 0x02) << "not locally administered";
      }
    }
}

TEST(LinkPlan, DistinctAndNonOverlappingAcrossLevelsAndSiblings) {
  std::set<uint32_t> nets4;
  std::set<std::string> nets6, macs, names;
  const uint32_t cgnat = (100u << 24) | (64u << 16);
  for (int level = 1; level <= 32; ++level)
    for (int sibling = 0; sibling < LinkPlan::kSiblings; ++sibling) {
      SCOPED_TRACE("level " + std::to_string(level) + " sibling " + std::to_string(sibling));
      const LinkPlan p = plan_link(level, sibling);
      const auto [net4_text, len4] = split_prefix(p.subnet4);
      ASSERT_EQ(len4, 30);
      const uint32_t net4 = parse4(net4_text);
      EXPECT_EQ(net4 & 3u, 0u) << "not /30 aligned";
      EXPECT_EQ(net4 & 0xffc00000u, cgnat) << "outside 100.64.0.0/10";
      EXPECT_EQ(parse4(p.outer4), net4 + 1);
      EXPECT_EQ(parse4(p.inner4), net4 + 2);
      // Aligned /30s are either equal or disjoint, so distinct networks cannot overlap.
      EXPECT_TRUE(nets4.insert(net4).second) << p.subnet4 << " reused";

      const auto [net6_text, len6] = split_prefix(p.subnet6);
      ASSERT_EQ(len6, 64);
      const std::string net6 = parse6(net6_text);
      EXPECT_EQ(net6.substr(0, 6), std::string("\xfd\x74\x6d\x00\x00\x00", 6)) << "outside fd74:6d00::/48";
      EXPECT_EQ(net6.substr(8), std::string(8, '\0')) << "host bits in the /64";
      const std::string o6 = parse6(p.outer6), i6 = parse6(p.inner6);
      EXPECT_EQ(o6.substr(0, 8), net6.substr(0, 8));
      EXPECT_EQ(i6.substr(0, 8), net6.substr(0, 8));
      EXPECT_EQ(o6.substr(8), std::string("\0\0\0\0\0\0\0\x01", 8));
      EXPECT_EQ(i6.substr(8), std::string("\0\0\0\0\0\0\0\x02", 8));
      EXPECT_TRUE(nets6.insert(net6.substr(0, 8)).second) << p.subnet6 << " reused";

      for (const MacAddress* m : {&p.outer_mac, &p.inner_mac, &p.l_outer_mac, &p.l_inner_mac})
        EXPECT_TRUE(macs.insert(m->str()).second) << m->str() << " reused";

      EXPECT_EQ(p.outer_ifname, "tm" + std::to_string(level) + "-" + std::to_string(sibling));
      EXPECT_LT(p.outer_ifname.size(), static_cast<size_t>(IFNAMSIZ));
      EXPECT_TRUE(names.insert(p.outer_ifname).second) << p.outer_ifname << " reused";
    }
  EXPECT_EQ(nets4.size(), 32u * 64);
  EXPECT_EQ(nets6.size(), 32u * 64);
  EXPECT_EQ(macs.size(), 4u * 32 * 64);
  EXPECT_EQ(names.size(), 32u * 64);
}

TEST(LinkPlan, DeepestLevelStaysInsideBothPrefixes) {
  const LinkPlan p = plan_link(LinkPlan::kMaxLevel, LinkPlan::kSiblings - 1);  // index 0xffff
  EXPECT_EQ(p.subnet4, "100.67.255.252/30");
  EXPECT_EQ(p.subnet6, "fd74:6d00:0:ffff::/64");
  EXPECT_EQ(p.outer_mac.str(), "02:74:6d:ff:ff:01");
}

}  // namespace
}  // namespace tracemod
