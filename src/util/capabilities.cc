#include "util/capabilities.hh"

#include <sys/capability.h>

#include <cerrno>
#include <memory>

#include "util/error.hh"

namespace tracemod {
namespace {

// NET_ADMIN: links, addresses, firewall; SYS_ADMIN: namespaces and /proc mounts; NET_RAW: AF_PACKET and ping;
// NET_BIND_SERVICE: ports below 1024 (tm-webreplay's servers on 80, 443 and 53; an --outside web server).
const cap_value_t kNestingCaps[] = {CAP_NET_ADMIN, CAP_SYS_ADMIN, CAP_NET_RAW, CAP_NET_BIND_SERVICE};

struct CapFree {
  void operator()(cap_t c) const { cap_free(c); }
};
using Caps = std::unique_ptr<std::remove_pointer_t<cap_t>, CapFree>;

}  // namespace

bool have_effective_net_admin() {
  Caps caps(cap_get_proc());
  cap_flag_value_t v = CAP_CLEAR;
  return caps && cap_get_flag(caps.get(), CAP_NET_ADMIN, CAP_EFFECTIVE, &v) == 0 && v == CAP_SET;
}

void raise_ambient_nesting_caps() {
  Caps caps(cap_get_proc());
  if (!caps) throw_errno("read capabilities", errno);
  const int n = sizeof kNestingCaps / sizeof kNestingCaps[0];
  for (cap_flag_t flag : {CAP_PERMITTED, CAP_EFFECTIVE, CAP_INHERITABLE})
    check_syscall("select capabilities", cap_set_flag(caps.get(), flag, n, kNestingCaps, CAP_SET));
  check_syscall("set capabilities", cap_set_proc(caps.get()));
  for (cap_value_t c : kNestingCaps) check_syscall("raise ambient capability", cap_set_ambient(c, CAP_SET));
}

}  // namespace tracemod
