// Time is int64 nanoseconds of CLOCK_MONOTONIC. Only the event loop reads the clock; queues are told `now`.
#pragma once

#include <cstdint>
#include <limits>

namespace tracemod {

using Nanos = int64_t;
constexpr Nanos kNever = std::numeric_limits<Nanos>::max();
constexpr Nanos kMillisecond = 1000000;

// T + D for T, D >= 0, or kNever where that would pass it: a time pushed ever later (a link busy for hours per
// packet) saturates at "never" instead of wrapping into the past.
constexpr Nanos saturating_add(Nanos t, Nanos d) {
  return t > kNever - d ? kNever : t + d;
}

// NS >= 0 (a duration computed in floating point, e.g. from a distribution's tail) rounded up to whole
// nanoseconds, or kNever where it does not fit (and for NaN): never a wrapped value.
constexpr Nanos ceil_nanos(double ns) {
  const Nanos whole = ns < 0x1p63 ? static_cast<Nanos>(ns) : kNever;  // NaN fails the test too
  return whole != kNever && static_cast<double>(whole) < ns ? whole + 1 : whole;
}

Nanos monotonic_now();
// CLOCK_REALTIME minus CLOCK_MONOTONIC, read between two monotonic reads and rounded so that a time stamp moved
// with it is never earlier than the true instant; NOW gets the last monotonic read. What moves the kernel's
// time stamps (CLOCK_REALTIME) onto the monotonic clock.
Nanos realtime_offset(Nanos& now);

}  // namespace tracemod
