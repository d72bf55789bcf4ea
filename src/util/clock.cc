#include "util/clock.hh"

#include <ctime>

namespace tracemod {

namespace {
Nanos nanos(const timespec& ts) {
  return static_cast<Nanos>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}
}  // namespace

Nanos monotonic_now() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return nanos(ts);
}

// The true offset lies in [r - b, r - a]. Taking r - b puts a time stamp moved with it at the latest instant it
// can stand for: a delay counted from it can come out late by b - a, never early. A preemption between the
// reads widens b - a, so the tightest of a few tries is kept.
Nanos realtime_offset(Nanos& now) {
  constexpr Nanos kTight = 2000;
  Nanos best = kNever, offset = 0;
  for (int i = 0; i < 4 && best > kTight; ++i) {
    timespec a, r, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    clock_gettime(CLOCK_REALTIME, &r);
    clock_gettime(CLOCK_MONOTONIC, &b);
    if (nanos(b) - nanos(a) >= best) continue;
    best = nanos(b) - nanos(a);
    offset = nanos(r) - nanos(b);
    now = nanos(b);
  }
  return offset;
}

}  // namespace tracemod
