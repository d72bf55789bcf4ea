// The kernel's MPTCP in the current network namespace: enabled, its in-kernel path manager's limits, and its
// endpoints, set through generic netlink (the "mptcp_pm" family, what `ip mptcp` uses). tm-multipath makes
// each path's address a `subflow` endpoint, so an MPTCP connection opens one subflow per path.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

struct nl_sock;
struct nl_msg;

namespace tracemod {

class MptcpPathManager {
 public:
  static constexpr uint32_t kMaxLimit = 8;  // the kernel's bound on both limits (MPTCP_PM_ADDR_MAX)

  // Enables MPTCP in the current network namespace (net.mptcp.enabled) and connects to its path manager.
  MptcpPathManager();
  ~MptcpPathManager();
  MptcpPathManager(const MptcpPathManager&) = delete;
  MptcpPathManager& operator=(const MptcpPathManager&) = delete;

  // How many extra subflows a connection may have, and how many addresses a peer announces it will use.
  void set_limits(uint32_t subflows, uint32_t add_addr_accepted);
  // ADDRESS (IPv4 or IPv6, no prefix length), on interface IFINDEX, as endpoint ID (1-255) new subflows start
  // from.
  void add_subflow_endpoint(const std::string& address, int ifindex, uint8_t id);
  // Withdraws endpoint ID: the path manager sends REMOVE_ADDR to each peer and closes the subflows from it.
  void remove_endpoint(uint8_t id);

 private:
  struct SockDeleter {
    void operator()(nl_sock* s) const;
  };
  void request(nl_msg* msg, const std::string& what);
  std::unique_ptr<nl_sock, SockDeleter> sock_;
  int family_ = 0;
};

}  // namespace tracemod
