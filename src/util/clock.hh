// Time is int64 nanoseconds of CLOCK_MONOTONIC. Only the event loop reads the clock; queues are told `now`.
#pragma once

#include <cstdint>
#include <limits>

namespace tracemod {

using Nanos = int64_t;
constexpr Nanos kNever = std::numeric_limits<Nanos>::max();
constexpr Nanos kMillisecond = 1000000;

Nanos monotonic_now();

}  // namespace tracemod
