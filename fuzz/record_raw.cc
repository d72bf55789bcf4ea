// tm-record's raw records (length-delimited RawEntry protobuf messages): `tm-record distill` on the input as a
// file, which reads the record twice and writes the trace, the delay and the loss series beside it. The trace
// it writes must be one tm-link accepts.
#include <sys/stat.h>

#include "fuzz.hh"
#include "link/trace.hh"
#include "record/distill.hh"

using namespace tracemod;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string raw = fuzz::write_file("fuzz.up.raw", data, size);
  const std::string prefix = fuzz::scratch_dir() + "/fuzz.up";
  ::unlink(prefix.c_str());
  if (!fuzz::accepted([&] { record::distill(raw, prefix); })) return 0;
  DeliveryTrace::load(prefix);  // throws UsageError (a crash here) if the trace written is not one
  return 0;
}
