#include "util/clock.hh"

#include <ctime>

namespace tracemod {

Nanos monotonic_now() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<Nanos>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

}  // namespace tracemod
