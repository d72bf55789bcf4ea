#include "shell/mptcp.hh"

#include <arpa/inet.h>
#include <linux/mptcp.h>
#include <netlink/errno.h>
#include <netlink/genl/ctrl.h>
#include <netlink/genl/genl.h>
#include <netlink/msg.h>
#include <netlink/netlink.h>

#include "util/error.hh"
#include "util/namespaces.hh"  // write_sysctl

namespace tracemod {
namespace {

void check(const std::string& what, int nl_err) {
  if (nl_err < 0) throw Error(what + ": " + nl_geterror(nl_err));
}

struct MsgDeleter {
  void operator()(nl_msg* m) const { nlmsg_free(m); }
};
using Msg = std::unique_ptr<nl_msg, MsgDeleter>;

Msg new_message(int family, uint8_t command) {
  Msg msg(nlmsg_alloc());
  if (!msg ||
      !genlmsg_put(msg.get(), NL_AUTO_PORT, NL_AUTO_SEQ, family, 0, NLM_F_REQUEST | NLM_F_ACK, command, MPTCP_PM_VER))
    throw Error("netlink: out of memory");
  return msg;
}

// The nested MPTCP_PM_ATTR_ADDR of an endpoint: id, family, address, interface and flags.
void put_address(nl_msg* msg, const std::string& address, int ifindex, uint32_t flags, uint8_t id) {
  unsigned char bytes[16];
  const bool v6 = address.find(':') != std::string::npos;
  if (inet_pton(v6 ? AF_INET6 : AF_INET, address.c_str(), bytes) != 1) throw Error("bad address " + address);
  nlattr* nest = nla_nest_start(msg, MPTCP_PM_ATTR_ADDR | NLA_F_NESTED);
  if (!nest) throw Error("netlink: message too long");
  nla_put_u8(msg, MPTCP_PM_ADDR_ATTR_ID, id);
  nla_put_u16(msg, MPTCP_PM_ADDR_ATTR_FAMILY, v6 ? AF_INET6 : AF_INET);
  nla_put(msg, v6 ? MPTCP_PM_ADDR_ATTR_ADDR6 : MPTCP_PM_ADDR_ATTR_ADDR4, v6 ? 16 : 4, bytes);
  nla_put_s32(msg, MPTCP_PM_ADDR_ATTR_IF_IDX, ifindex);
  nla_put_u32(msg, MPTCP_PM_ADDR_ATTR_FLAGS, flags);
  nla_nest_end(msg, nest);
}

}  // namespace

void MptcpPathManager::SockDeleter::operator()(nl_sock* s) const {
  nl_socket_free(s);
}

MptcpPathManager::MptcpPathManager() : sock_(nl_socket_alloc()) {
  write_sysctl("net/mptcp/enabled", "1");
  if (!sock_) throw Error("netlink: out of memory");
  check("connect to generic netlink", genl_connect(sock_.get()));
  family_ = genl_ctrl_resolve(sock_.get(), MPTCP_PM_NAME);
  check("find the kernel's MPTCP path manager (" MPTCP_PM_NAME ")", family_);
}

MptcpPathManager::~MptcpPathManager() = default;

void MptcpPathManager::request(nl_msg* msg, const std::string& what) {
  check(what, nl_send_auto(sock_.get(), msg));
  check(what, nl_wait_for_ack(sock_.get()));
}

void MptcpPathManager::set_limits(uint32_t subflows, uint32_t add_addr_accepted) {
  Msg msg = new_message(family_, MPTCP_PM_CMD_SET_LIMITS);
  nla_put_u32(msg.get(), MPTCP_PM_ATTR_SUBFLOWS, subflows);
  nla_put_u32(msg.get(), MPTCP_PM_ATTR_RCV_ADD_ADDRS, add_addr_accepted);
  request(msg.get(), "set MPTCP limits");
}

void MptcpPathManager::add_subflow_endpoint(const std::string& address, int ifindex, uint8_t id) {
  Msg msg = new_message(family_, MPTCP_PM_CMD_ADD_ADDR);
  put_address(msg.get(), address, ifindex, MPTCP_PM_ADDR_FLAG_SUBFLOW, id);
  request(msg.get(), "add MPTCP endpoint " + address + " (id " + std::to_string(id) + ")");
}

void MptcpPathManager::remove_endpoint(uint8_t id) {
  Msg msg = new_message(family_, MPTCP_PM_CMD_DEL_ADDR);
  nlattr* nest = nla_nest_start(msg.get(), MPTCP_PM_ATTR_ADDR | NLA_F_NESTED);
  if (!nest) throw Error("netlink: message too long");
  nla_put_u8(msg.get(), MPTCP_PM_ADDR_ATTR_ID, id);
  nla_nest_end(msg.get(), nest);
  request(msg.get(), "withdraw MPTCP endpoint id " + std::to_string(id));
}

}  // namespace tracemod
