// The live page reader (src/live/reader.cc): the input as a shell's memfd page (its first sizeof(Page) bytes),
// then as the snapshots the shell goes on to write into it (each further sizeof(Snapshot) bytes). LivePage maps
// the file as tm-top maps /proc/PID/fd/N, and refuses it or reads it; each snapshot it reads goes into a
// ShellState as Monitor::refresh takes it, and the shell is shown as tm-top shows it: the text view, the JSON of
// --json and --web (with the last minute, second by second). The header's strings are read within their arrays,
// each text line holds within its width, and the JSON is JSON.
#include <nlohmann/json.hpp>

#include "fuzz.hh"
#include "live/reader.hh"
#include "top/render.hh"

using namespace tracemod;

namespace {

constexpr size_t kWidth = 80;

// Where the shell writes its snapshots in the page (offsetof is not for a type with an atomic member).
size_t snapshot_offset() {
  static const live::Page page{};
  return static_cast<size_t>(reinterpret_cast<const char*>(&page.snapshot) - reinterpret_cast<const char*>(&page));
}

template <size_t N>
void check_terminated(const char (&text)[N]) {
  FUZZ_CHECK(strnlen(text, N) < N);
}

void check_views(const live::ShellState& shell) {
  const std::string text = top::text_view({&shell}, kWidth);
  for (size_t at = 0; at < text.size();) {
    const size_t end = text.find('\n', at);
    FUZZ_CHECK(end != std::string::npos && end - at <= kWidth);
    at = end + 1;
  }
  const std::string json = top::json_view({&shell}, 60);
  FUZZ_CHECK(nlohmann::json::accept(json));
}

void read(const uint8_t* data, size_t size) {
  const std::string path = fuzz::write_file("page", data, sizeof(live::Page));
  const live::LivePage page(path);
  const live::Header& h = page.header();
  check_terminated(h.tool);
  check_terminated(h.tag);
  check_terminated(h.arguments);
  check_terminated(h.command);
  live::ShellState shell;
  shell.pid = h.pid;
  shell.header = h;
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  for (size_t at = sizeof(live::Page); at <= size; at += sizeof(live::Snapshot)) {
    // The snapshot the page holds now, then the next one of the input written where the shell writes it.
    live::Snapshot s;
    if (page.read(s)) {
      shell.take(s);
      check_views(shell);
    }
    if (at + sizeof(live::Snapshot) > size) break;
    FUZZ_CHECK(::pwrite(fd, data + at, sizeof s, static_cast<off_t>(snapshot_offset())) ==
               static_cast<ssize_t>(sizeof s));
  }
  ::close(fd);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < sizeof(live::Page)) {  // too short: refused, as any file shorter than a page is
    const std::string path = fuzz::write_file("short", data, size);
    FUZZ_CHECK(!fuzz::accepted([&] { live::LivePage page(path); }));
    return 0;
  }
  fuzz::accepted([&] { read(data, size); });
  return 0;
}
