// tm-webreplay's recordings: the input as a HAR file, and as the one file of a recording directory (tracemod's
// or Mahimahi's RequestResponse), through load_recording; then origins and the matcher, which must find every
// exchange it was built from when asked for its own request.
#include <filesystem>

#include "fuzz/fuzz.hh"
#include "web/matcher.hh"
#include "web/recording.hh"

using namespace tracemod;

namespace {

void use(const web::Recording& recording) {
  web::origins(recording);
  const web::Matcher matcher(recording);
  for (const web::Exchange& e : recording.exchanges)
    FUZZ_CHECK(matcher.match(e.scheme, e.address, e.port, e.host, e.request.method, e.request.target) != nullptr);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string har = fuzz::write_file("fuzz.har", data, size);
  fuzz::accepted([&] { use(web::load_recording(har)); });
  const std::string dir = fuzz::scratch_dir() + "/recording";
  std::filesystem::create_directory(dir);
  fuzz::write_file("recording/save.AbC123", data, size);
  fuzz::accepted([&] { use(web::load_recording(dir)); });
  return 0;
}
