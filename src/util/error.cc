#include "util/error.hh"

#include <cerrno>
#include <cstring>

namespace tracemod {

void throw_errno(const std::string& what, int err) {
  throw Error(what + ": " + std::strerror(err));
}

long check_syscall(const std::string& what, long ret) {
  if (ret < 0) throw_errno(what, errno);
  return ret;
}

}  // namespace tracemod
