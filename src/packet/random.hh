// Seeded randomness: one independent stream per direction, so one direction's traffic cannot change the
// other's drops and a run is reproducible from its seed.
#pragma once

#include <cstdint>
#include <random>

namespace tracemod {

class RandomStream {
 public:
  RandomStream(uint64_t seed, uint64_t stream) : gen_(mix(seed) ^ mix(stream + 0x9e3779b97f4a7c15ULL)) {}
  // Uniform in [0, 1), 53 bits; the same on every platform (mt19937_64's output is fixed by the standard).
  double uniform() { return static_cast<double>(gen_() >> 11) * 0x1.0p-53; }

 private:
  static uint64_t mix(uint64_t z) {  // splitmix64 finaliser: spreads nearby seeds apart
    z += 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  std::mt19937_64 gen_;
};

// A fresh seed from the kernel, for runs that did not ask for one.
uint64_t random_seed();

}  // namespace tracemod
