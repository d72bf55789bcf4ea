// Seeded randomness: one independent stream per direction and per purpose, so one direction's traffic cannot
// change the other's drops, turning on one effect (duplication, say) does not change which packets another
// (the loss model) hits, and a run is reproducible from its seed.
#pragma once

#include <cstdint>
#include <random>

namespace tracemod {

class RandomStream {
 public:
  RandomStream(uint64_t seed, uint64_t stream) : gen_(mix(seed) ^ mix(stream + 0x9e3779b97f4a7c15ULL)) {}
  // Uniform in [0, 1), 53 bits; the same on every platform (mt19937_64's output is fixed by the standard).
  double uniform() { return static_cast<double>(gen_() >> 11) * 0x1.0p-53; }
  // Uniform in (0, 1), never 0 or 1: the midpoints of uniform()'s steps, for quantile functions.
  double open_uniform() { return (static_cast<double>(gen_() >> 11) + 0.5) * 0x1.0p-53; }
  // Uniform over 0 .. N-1 (N > 0).
  uint64_t below(uint64_t n) { return static_cast<uint64_t>(uniform() * static_cast<double>(n)) % n; }

 private:
  static uint64_t mix(uint64_t z) {  // splitmix64 finaliser: spreads nearby seeds apart
    z += 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  std::mt19937_64 gen_;
};

// What a stream is drawn for. kLoss is 0 so that a direction's loss stream keeps the id it always had (a
// seed drops the same packets as before); tm-link's queue disciplines use that id too.
enum class StreamPurpose : uint64_t { kLoss = 0, kDuplicate = 1, kCorrupt = 2, kJitter = 3, kOnOff = 4 };

// The stream id of PURPOSE in DIRECTION (0 uplink, 1 downlink).
constexpr uint64_t stream_id(int direction, StreamPurpose purpose) {
  return static_cast<uint64_t>(purpose) * 2 + static_cast<uint64_t>(direction);
}

// A fresh seed from the kernel, for runs that did not ask for one.
uint64_t random_seed();

}  // namespace tracemod
