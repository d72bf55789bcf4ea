// The value grammar (util/parse: durations, rates, sizes, queue limits, probabilities, numbers, ports, seeds,
// KEY=VALUE lists) and tm-trace's plans built on it (--steps segments, --stalls): the input, as one value, goes
// through every reader. Each must return a value within its bounds or throw UsageError; a duration read
// back from format_ms gives the same nanoseconds.
#include <cmath>

#include "fuzz.hh"
#include "link/trace_tools.hh"
#include "util/parse.hh"

using namespace tracemod;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string in(fuzz::text(data, size));
  const std::string_view v = in;
  fuzz::accepted([&] {
    double d = 0;
    if (parse_double(in, d)) FUZZ_CHECK(std::isfinite(d));
  });
  fuzz::accepted([&] {
    const uint64_t r = parse_rate("--rate", v);
    FUZZ_CHECK(r >= 1 && r <= kMaxRate);
  });
  for (Nanos bare : {Nanos{0}, kMillisecond, 1000 * kMillisecond}) {
    fuzz::accepted([&] {
      const Nanos t = parse_duration("--duration", v, bare);
      FUZZ_CHECK(t >= 0 && t <= kMaxDuration);
      FUZZ_CHECK(parse_duration(format_ms(t), kMillisecond) == t);
    });
  }
  fuzz::accepted([&] {
    const Nanos t = parse_duration_between("--bin", v, kMillisecond, 1000, kMaxDelay);
    FUZZ_CHECK(t >= 1000 && t <= kMaxDelay);
  });
  fuzz::accepted([&] {
    const Nanos t = parse_delay("delay", v);
    FUZZ_CHECK(t >= 0 && t <= kMaxDelay);
    FUZZ_CHECK(parse_delay(format_ms(t)) == t);
  });
  fuzz::accepted([&] {
    const double p = parse_probability("--loss", v);
    FUZZ_CHECK(p >= 0 && p <= 1);
  });
  fuzz::accepted([&] {
    const double x = parse_number("--x", v, -1e9, 1e9, "a number");
    FUZZ_CHECK(x >= -1e9 && x <= 1e9);
  });
  fuzz::accepted([&] { FUZZ_CHECK(parse_whole_number("--count", v, 1, 1000000) - 1 < 1000000); });
  fuzz::accepted([&] { FUZZ_CHECK(parse_port("--port", v) >= 1); });
  fuzz::accepted([&] { FUZZ_CHECK(parse_bytes("--size", v, 0, kMaxQueueLimit) <= kMaxQueueLimit); });
  for (LimitKind kind : {LimitKind::kPackets, LimitKind::kBytes})
    fuzz::accepted([&] { FUZZ_CHECK(parse_queue_limit("packets", v, kind) <= kMaxQueueLimit); });
  fuzz::accepted([&] {
    const QueueSize q = parse_queue_size("queue", v);
    FUZZ_CHECK(q.packets <= kMaxQueueLimit && q.bytes <= kMaxQueueLimit);
    describe_queue_size(q);
  });
  fuzz::accepted([&] { parse_seed(in); });
  fuzz::accepted([&] {
    const KeyValues kv("--uplink-loss", "gilbert", in, {"p", "r", "h", "k"});
    for (const char* key : {"p", "r", "h", "k"})
      if (const std::string* value = kv.find(key)) parse_probability(kv.name(key), *value);
  });
  fuzz::accepted([&] {
    const uint64_t ms = parse_duration_ms("--duration", v);
    FUZZ_CHECK(ms >= 1 && ms <= DeliveryTrace::kMaxMillis);
  });
  fuzz::accepted([&] {
    for (const RateSegment& s : parse_segments("--steps", v))
      FUZZ_CHECK(s.bits_per_second <= kMaxRate && s.ms >= 1 && s.ms <= DeliveryTrace::kMaxMillis);
  });
  fuzz::accepted([&] { parse_stalls("--stalls", v); });
  return 0;
}
