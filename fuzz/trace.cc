// Mahimahi delivery traces (tm-link, tm-trace, tm-modulate --trace): DeliveryTrace::parse on the input, then
// DeliveryTrace::load on the same bytes from a file (its chunked reader must agree with parse), and what the
// tools do with a trace that parsed: its runs, two cursors (looping and --once) and a skip, tm-trace's
// validate line and, for traces of at most 100 s, its window statistics.
#include "link/trace.hh"

#include <algorithm>
#include <cstring>

#include "fuzz.hh"
#include "link/trace_tools.hh"

using namespace tracemod;

namespace {

constexpr uint64_t kStatsUpToMs = 100000;  // window statistics cost a number per window: keep runs fast
constexpr int kSteps = 2000;               // opportunities walked per cursor

void walk(const DeliveryTrace& t, bool once) {
  auto c = t.cursor(once);
  Nanos last = 0;
  for (int i = 0; i < kSteps; ++i) {
    const Nanos n = c->next();
    if (n == kNever) {
      // A --once trace ends after one period; a looping one only where its times would no longer fit (2^62 ns).
      FUZZ_CHECK(once ? static_cast<uint64_t>(i) == t.opportunities()
                      : last + t.period_ms() * kMillisecond > kNever / 2);
      return;
    }
    FUZZ_CHECK(n >= last);
    last = n;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view in = fuzz::text(data, size);
  std::string parse_error, load_error;
  DeliveryTrace* parsed = nullptr;
  std::unique_ptr<DeliveryTrace> keep;
  try {
    keep = std::make_unique<DeliveryTrace>(DeliveryTrace::parse(in, "fuzz.trace"));
    parsed = keep.get();
  } catch (const UsageError& e) {
    parse_error = e.what();
  }
  const std::string path = fuzz::write_file("fuzz.trace", data, size);
  std::unique_ptr<DeliveryTrace> loaded;
  try {
    loaded = std::make_unique<DeliveryTrace>(DeliveryTrace::load(path));
  } catch (const UsageError& e) {
    load_error = e.what();
  }
  // The same verdict from memory and from a file (the path names the file in both messages).
  FUZZ_CHECK(!parsed == !loaded);
  if (!parsed) {
    FUZZ_CHECK(parse_error.substr(std::strlen("fuzz.trace")) == load_error.substr(path.size()));
    return 0;
  }
  FUZZ_CHECK(parsed->period_ms() == loaded->period_ms() && parsed->opportunities() == loaded->opportunities());

  // Runs: increasing times, at least one opportunity each, adding up to the lines; the last is the period.
  uint64_t total = 0, last_ms = 0;
  bool first = true;
  parsed->for_each_run([&](uint64_t ms, uint64_t count) {
    FUZZ_CHECK(count >= 1);
    FUZZ_CHECK(first || ms > last_ms);
    first = false;
    last_ms = ms;
    total += count;
  });
  FUZZ_CHECK(total == parsed->opportunities());
  FUZZ_CHECK(last_ms == parsed->period_ms() && parsed->period_ms() > 0);

  walk(*parsed, false);
  walk(*parsed, true);
  auto c = parsed->cursor(false);
  const Nanos skip_to = static_cast<Nanos>(size % 7 + 1) * static_cast<Nanos>(parsed->period_ms()) * kMillisecond / 3;
  c->skip_before(skip_to);
  FUZZ_CHECK(c->next() >= skip_to);

  format_validation("fuzz.trace", *parsed);
  if (parsed->period_ms() <= kStatsUpToMs) format_stats("fuzz.trace", trace_stats(*parsed, {100, 1000}));
  return 0;
}
