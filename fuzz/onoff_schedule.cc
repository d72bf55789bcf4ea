// tm-onoff's schedule files ("TIME on" / "TIME off" lines): FileOnOff::load on the input as a file, then the
// schedule a shell would follow: whether the link is on at times across it, and when each state ends.
#include "effects/onoff_queue.hh"
#include "fuzz.hh"

using namespace tracemod;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<FileOnOff::Event> events;
  if (!fuzz::accepted([&] { events = FileOnOff::load(fuzz::write_file("fuzz.onoff", data, size)); })) return 0;
  FUZZ_CHECK(!events.empty());
  const Nanos start = 1000 * kMillisecond, end = events.back().at;
  FileOnOff s(events, "fuzz.onoff", start);
  Nanos ends = 0;
  for (int k = 0; k <= 64; ++k) {
    const Nanos t = start + end / 64 * k;
    const bool on = s.on_at(t);
    const Nanos next = s.state_ends();
    FUZZ_CHECK(next > t && next >= ends);
    ends = next;
    (void)on;
  }
  FUZZ_CHECK(s.on_at(start + end) == events.back().on && s.state_ends() == kNever);
  return 0;
}
