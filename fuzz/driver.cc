// The main of a fuzz target in the normal build (without libFuzzer): feeds it every file named on the command
// line, and every file of every directory named, once, in sorted order. `make check` runs each target so over
// its seed corpus (fuzz/corpus/TARGET) and its regression cases (fuzz/regressions/TARGET): a deterministic
// test that every input once found to crash, hang or trip a sanitizer is still handled.
//
//   fuzz/fuzz-trace [-v] FILE|DIR...     prints "fuzz-trace: N inputs" and exits 0; an input that crashes the
//                                        target is named on standard error before the process dies.
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "fuzz.hh"

namespace {

const char* g_program = "fuzz";
const char* g_current = nullptr;  // the input being run, for the crash message

void say_current(const char* what) {
  if (!g_current) return;
  // Only async-signal-safe calls: this runs in a signal handler too.
  const char* parts[] = {g_program, ": input ", g_current, ": ", what, "\n"};
  for (const char* p : parts) {
    const ssize_t ignored = ::write(STDERR_FILENO, p, strlen(p));
    (void)ignored;
  }
}

void on_signal(int sig) {
  say_current(sig == SIGSEGV ? "SIGSEGV" : sig == SIGBUS ? "SIGBUS" : sig == SIGFPE ? "SIGFPE" : "SIGABRT");
  signal(sig, SIG_DFL);
  raise(sig);
}

void on_terminate() {
  std::string what = "uncaught exception";
  try {
    if (auto e = std::current_exception()) std::rethrow_exception(e);
  } catch (const std::exception& e) {
    what += std::string(": ") + e.what();
  } catch (...) {
  }
  say_current(what.c_str());
  std::abort();
}

std::vector<std::string> inputs(const std::vector<std::string>& args) {
  std::vector<std::string> out;
  for (const std::string& a : args) {
    if (!std::filesystem::is_directory(a)) {
      out.push_back(a);
      continue;
    }
    std::vector<std::string> files;
    for (const auto& entry : std::filesystem::directory_iterator(a))
      if (entry.is_regular_file()) files.push_back(entry.path().string());
    std::sort(files.begin(), files.end());
    out.insert(out.end(), files.begin(), files.end());
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  static const std::string program = argc > 0 ? std::filesystem::path(argv[0]).filename().string() : "fuzz";
  g_program = program.c_str();
  bool verbose = false;
  std::vector<std::string> args;
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "-v")
      verbose = true;
    else if (argv[i][0] == '-')
      continue;  // libFuzzer's flags (-runs=0, ...) mean nothing here
    else
      args.emplace_back(argv[i]);
  }
  if (args.empty()) {
    std::fprintf(stderr, "usage: %s [-v] FILE|DIR...\n", g_program);
    return 2;
  }
  std::set_terminate(on_terminate);
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGABRT}) signal(sig, on_signal);
  size_t n = 0;
  for (const std::string& path : inputs(args)) {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
      std::fprintf(stderr, "%s: cannot read %s\n", g_program, path.c_str());
      return 1;
    }
    const std::vector<uint8_t> data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (verbose) std::fprintf(stderr, "%s: %s (%zu bytes)\n", g_program, path.c_str(), data.size());
    g_current = path.c_str();
    LLVMFuzzerTestOneInput(data.data(), data.size());
    g_current = nullptr;
    ++n;
  }
  std::printf("%s: %zu inputs\n", g_program, n);
  return 0;
}
