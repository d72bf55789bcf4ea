// --max-rate: a token bucket in bytes. Never reads the clock.
#pragma once

#include <algorithm>
#include <cstdint>

#include "util/clock.hh"

namespace tracemod::record {

class RateLimiter {
 public:
  // BITS_PER_SECOND 0 = no limit. The bucket holds 2 ms of the rate, at least 4 packets of PACKET_BYTES.
  RateLimiter(uint64_t bits_per_second, uint32_t packet_bytes)
      : rate_(static_cast<double>(bits_per_second) / 8e9),
        burst_(std::max(4.0 * packet_bytes, rate_ * 2e6)),
        tokens_(burst_) {}

  bool limited() const { return rate_ > 0; }
  bool allows(uint32_t bytes, Nanos now) {
    if (!limited()) return true;
    refill(now);
    return tokens_ >= bytes;
  }
  void take(uint32_t bytes) {
    if (limited()) tokens_ -= bytes;
  }
  // When BYTES will be allowed.
  Nanos ready_at(uint32_t bytes, Nanos now) const {
    if (!limited()) return now;
    const double tokens = at(now);
    return tokens >= bytes ? now : now + static_cast<Nanos>((bytes - tokens) / rate_) + 1;
  }

 private:
  double at(Nanos now) const {
    return now > last_ ? std::min(burst_, tokens_ + static_cast<double>(now - last_) * rate_) : tokens_;
  }
  void refill(Nanos now) {
    tokens_ = at(now);
    last_ = std::max(last_, now);
  }
  double rate_;  // bytes per ns
  double burst_, tokens_;
  Nanos last_ = 0;
};

}  // namespace tracemod::record
