// Delay distributions: the input's first line as a distribution spec (tm-onoff's --uplink-on/--uplink-off:
// exp:MEAN, uniform:A:B, const:X, normal:MEAN:SD, pareto:MEAN:SHAPE) and the whole input as a file of samples
// (tm-delay --distribution FILE, netem's tables), with the jitter given and without (the samples' own spread).
// A distribution that was accepted is described and sampled as the queues sample it, with and without
// correlation; its samples must be numbers (a NaN would become a delay of "never").
#include "channel/distribution.hh"

#include <cmath>

#include "fuzz.hh"

using namespace tracemod;

namespace {

void sample(const Distribution& d) {
  d.describe();
  d.mean();
  d.stddev();
  for (double u : {1e-12, 0.001, 0.25, 0.5, 0.75, 0.999, 1 - 1e-12}) FUZZ_CHECK(!std::isnan(d.quantile(u)));
  for (double rho : {0.0, 0.5}) {
    Sampler s(d, rho, RandomStream(1, 2));
    for (int i = 0; i < 50; ++i) FUZZ_CHECK(!std::isnan(s.next()));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string spec = fuzz::first_line(fuzz::text(data, size)).first;
  for (Nanos bare : {Nanos{0}, 1000 * kMillisecond})
    fuzz::accepted([&] { sample(parse_distribution("--uplink-on", spec, bare)); });
  const std::string path = fuzz::write_file("fuzz.dist", data, size);
  for (Nanos jitter : {Nanos{0}, 5 * kMillisecond})
    fuzz::accepted([&] { sample(jitter_distribution("--distribution", path, jitter)); });
  return 0;
}
