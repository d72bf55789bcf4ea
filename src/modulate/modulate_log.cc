#include "modulate/modulate_log.hh"

#include <cinttypes>

namespace tracemod::modulate {

ModulateLog::ModulateLog(const std::string& path)
    : path_(path), file_(std::make_shared<RecordFile>("--log " + path, "log lines", create_for_writing(path))) {}

void ModulateLog::time(Nanos t) {
  const int64_t ns = t < 0 ? 0 : t;
  file_->appendf("%" PRId64 ".%06" PRId64, ns / 1000000, ns % 1000000);
}

void ModulateLog::header(const std::vector<std::string>& lines, Nanos base) {
  for (const std::string& l : lines) {
    file_->append("# ", 2);
    file_->append(l.data(), l.size());
    file_->append('\n');
    file_->end_record();
  }
  file_->appendf("# base timestamp: ");
  time(base);
  file_->append('\n');
  file_->end_record();
}

void ModulateLog::state(Nanos t, const char* dir, size_t index, const State& s) {
  time(t);
  file_->appendf(" %s state %zu line=%zu %s\n", dir, index + 1, s.line, s.describe().c_str());
  file_->end_record();
}

void ModulateLog::begin(const Passage& p) {
  time(p.arrival);
  file_->appendf(" %s %" PRIu64, p.dir, p.bytes);
}

void ModulateLog::end(const Passage& p) {
  if (p.segments > 1) file_->appendf(" segments=%" PRIu32, p.segments);
  file_->append('\n');
  file_->end_record();
}

// "T DIR SIZE start=S end=E KEY=K".
void ModulateLog::passage(const Passage& p, Nanos start, Nanos end_of_service, const char* key, Nanos at) {
  begin(p);
  file_->appendf(" start=");
  time(start);
  file_->appendf(" end=");
  time(end_of_service);
  file_->appendf(" %s=", key);
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
  file_->appendf(" dropped=");
  time(at);
  file_->appendf(" why=%s", why);
  end(p);
}

}  // namespace tracemod::modulate
