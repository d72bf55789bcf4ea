// tm-webreplay's recordings: the input as a HAR file, and as the one file of a recording directory (tracemod's
// or Mahimahi's RequestResponse), through load_recording; then origins, the notes, and the matcher, which must
// find every exchange it was built from when asked for its own request; and no response header a reader let
// through may hold a byte HTTP forbids in a field.
#include <filesystem>

#include "fuzz.hh"
#include "web/matcher.hh"
#include "web/recording.hh"
#include "web/wire.hh"

using namespace tracemod;

namespace {

void use(const web::Recording& recording) {
  web::origins(recording);
  web::describe_notes(recording);
  const web::Matcher matcher(recording);
  for (const web::Exchange& e : recording.exchanges) {
    FUZZ_CHECK(matcher.match(web::Asked{e.scheme, e.port, e.host, e.request.method, e.request.target}) != nullptr);
    for (const web::Header& h : e.response.headers) {
      FUZZ_CHECK(web::is_token(h.name));
      for (char c : h.value) FUZZ_CHECK(c == '\t' || (static_cast<unsigned char>(c) >= 0x20 && c != 0x7f));
    }
  }
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
