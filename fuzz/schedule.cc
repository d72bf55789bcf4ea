// tm-modulate's schedules (Noble's 5-tuples and keyed lines): Schedule::parse on the input, then what
// tm-modulate does with a schedule that parsed: each state described, a Timeline asked for the state at times
// across several periods, looping and played once, and a Bottleneck serving packets through it.
#include "modulate/schedule.hh"

#include <memory>

#include "fuzz.hh"
#include "modulate/bottleneck.hh"

using namespace tracemod;
using namespace tracemod::modulate;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::shared_ptr<const Schedule> s;
  if (!fuzz::accepted([&] {
        s = std::make_shared<const Schedule>(Schedule::parse(std::string(fuzz::text(data, size)), "fuzz.sched"));
      }))
    return 0;
  FUZZ_CHECK(!s->states().empty() && s->period() > 0 && s->period() <= kMaxDuration);
  Nanos sum = 0;
  for (size_t i = 0; i < s->states().size(); ++i) {
    const State& st = s->states()[i];
    FUZZ_CHECK(st.duration > 0 && s->begin(i) == sum);
    FUZZ_CHECK(st.byte_cost >= 0 && st.residual_cost >= 0 && st.delay >= 0);
    sum += st.duration;
    st.describe();
  }
  FUZZ_CHECK(sum == s->period());
  const Nanos start = 1000 * kMillisecond;
  for (bool once : {false, true}) {
    const Timeline line(s, start, once);
    for (int k = 0; k < 64; ++k) {
      const Nanos t = start + s->period() / 16 * k + k;
      const Timeline::Segment seg = line.at(t);
      if (seg.state == Timeline::kNone) {
        FUZZ_CHECK(once && t >= line.end());
        continue;
      }
      FUZZ_CHECK(seg.state < s->states().size() && seg.begin <= t && t < seg.end);
      FUZZ_CHECK(seg.end - seg.begin == s->states()[seg.state].duration);
    }
  }
  // 300 packets of 1500 bytes, one every 5% of a period (so across 15 periods), through the bottleneck.
  const Timeline line(s, start, false);
  Bottleneck bottleneck(line);
  for (int k = 0; k < 300; ++k) {
    const Nanos arrival = start + s->period() / 20 * k + k;
    const Service sv = bottleneck.serve(arrival, 1500, 1);
    if (sv.fate == Service::kServed)
      FUZZ_CHECK(sv.start >= arrival && sv.end >= sv.start && sv.state < s->states().size());
    else
      FUZZ_CHECK(sv.dropped >= arrival);
  }
  return 0;
}
