#include "modulate/modulate_log.hh"

#include <cerrno>
#include <cinttypes>
#include <cstring>
#include <iostream>

#include "util/error.hh"

namespace tracemod::modulate {

ModulateLog::ModulateLog(const std::string& path) : path_(path), f_(std::fopen(path.c_str(), "we")), buffer_(1 << 20) {
  if (!f_) throw UsageError(path + ": cannot open for writing: " + std::strerror(errno));
  std::setvbuf(f_, buffer_.data(), _IOFBF, buffer_.size());
}

ModulateLog::~ModulateLog() {
  // A full disk must not pass unnoticed: the log is the experiment's record.
  const bool failed = std::ferror(f_) != 0;
  if (std::fclose(f_) != 0 || failed) std::cerr << path_ << ": write error: the modulation log is incomplete\n";
}

void ModulateLog::time(Nanos t) {
  const int64_t ns = t < 0 ? 0 : t;
  std::fprintf(f_, "%" PRId64 ".%06" PRId64, ns / 1000000, ns % 1000000);
}

void ModulateLog::header(const std::vector<std::string>& lines, Nanos base) {
  for (const std::string& l : lines) std::fprintf(f_, "# %s\n", l.c_str());
  std::fputs("# base timestamp: ", f_);
  time(base);
  std::fputc('\n', f_);
}

void ModulateLog::state(Nanos t, const char* dir, size_t index, const State& s) {
  time(t);
  std::fprintf(f_, " %s state %zu line=%zu %s\n", dir, index + 1, s.line, s.describe().c_str());
}

void ModulateLog::begin(const Passage& p) {
  time(p.arrival);
  std::fprintf(f_, " %s %" PRIu64, p.dir, p.bytes);
}

void ModulateLog::end(const Passage& p) {
  if (p.segments > 1) std::fprintf(f_, " segments=%" PRIu32, p.segments);
  std::fputc('\n', f_);
}

// "T DIR SIZE start=S end=E KEY=K".
void ModulateLog::passage(const Passage& p, Nanos start, Nanos end_of_service, const char* key, Nanos at) {
  begin(p);
  std::fputs(" start=", f_);
  time(start);
  std::fputs(" end=", f_);
  time(end_of_service);
  std::fprintf(f_, " %s=", key);
  time(at);
  end(p);
}

void ModulateLog::served(const Passage& p, Nanos start, Nanos end_of_service, Nanos release) {
  passage(p, start, end_of_service, "release", release);
}

void ModulateLog::lost(const Passage& p, Nanos start, Nanos end_of_service) {
  passage(p, start, end_of_service, "lost", end_of_service);
}

void ModulateLog::dropped(const Passage& p, Nanos at, const char* why) {
  begin(p);
  std::fputs(" dropped=", f_);
  time(at);
  std::fprintf(f_, " why=%s", why);
  end(p);
}

}  // namespace tracemod::modulate
