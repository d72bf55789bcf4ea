#include "util/random.hh"

#include <sys/random.h>

#include "util/error.hh"

namespace tracemod {

uint64_t random_seed() {
  uint64_t seed = 0;
  if (getrandom(&seed, sizeof seed, 0) != static_cast<ssize_t>(sizeof seed)) throw Error("getrandom failed");
  return seed;
}

}  // namespace tracemod
