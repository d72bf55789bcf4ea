// tm-probe's raw records (length-delimited ProbeEntry protobuf messages): `tm-probe print` and `tm-probe
// distill` on the input as a file, with --step 30s --window 150s (a few bytes of input can span 1000 hours: at
// the default 1 s step that is 3.6 million lines, seconds of work for one input) and --mean for odd-sized
// inputs. The schedule distill writes must be one tm-modulate accepts.
#include <sys/stat.h>

#include "fuzz.hh"
#include "modulate/schedule.hh"
#include "probe/distill.hh"

using namespace tracemod;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string raw = fuzz::write_file("fuzz.raw", data, size);
  const std::string out = fuzz::scratch_dir() + "/fuzz.sched";
  ::unlink(out.c_str());
  fuzz::accepted([&] { probe::print_file(raw); });
  probe::DistillConfig config;
  config.step = 30000 * kMillisecond;
  config.window = 5 * config.step;
  config.mean = size % 2 == 1;
  if (!fuzz::accepted([&] { probe::distill_file(raw, out, config); })) return 0;
  modulate::Schedule::load(out);  // throws UsageError (a crash here) if the schedule written is not one
  return 0;
}
