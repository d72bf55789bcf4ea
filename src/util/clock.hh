// Time is int64 nanoseconds of CLOCK_MONOTONIC. Only the event loop reads the clock; queues are told `now`.
#pragma once

#include <cstdint>
#include <limits>

namespace tracemod {

using Nanos = int64_t;
constexpr Nanos kNever = std::numeric_limits<Nanos>::max();
constexpr Nanos kMillisecond = 1000000;

Nanos monotonic_now();
// CLOCK_REALTIME minus CLOCK_MONOTONIC, read between two monotonic reads and rounded so that a time stamp moved
// with it is never earlier than the true instant; NOW gets the last monotonic read. What moves the kernel's
// time stamps (CLOCK_REALTIME) onto the monotonic clock.
Nanos realtime_offset(Nanos& now);

}  // namespace tracemod
