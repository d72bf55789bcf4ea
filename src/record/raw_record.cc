#include "record/raw_record.hh"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "util/delimited.hh"
#include "util/error.hh"

namespace tracemod::record {
namespace {
constexpr size_t kBufferBytes = 64 * 1024;
}  // namespace

RawWriter::RawWriter(const std::string& path) : path_(path) {
  file_ = std::fopen(path.c_str(), "we");
  if (!file_) throw_errno("create " + path, errno);
}

RawWriter::~RawWriter() {
  if (file_) std::fclose(file_);
}

void RawWriter::write(const google::protobuf::MessageLite& entry) {
  append_delimited(entry, buf_);
  if (buf_.size() >= kBufferBytes) flush();
}

void RawWriter::flush() {
  if (!file_ || buf_.empty()) return;
  if (std::fwrite(buf_.data(), 1, buf_.size(), file_) != buf_.size() || std::fflush(file_) != 0)
    throw_errno("write " + path_, errno);
  buf_.clear();
}

void RawWriter::close() {
  if (!file_) return;
  flush();
  FILE* f = std::exchange(file_, nullptr);
  if (std::fclose(f) != 0) throw_errno("close " + path_, errno);
}

uint64_t read_raw(const std::string& path, const std::function<void(const RawEntry&)>& visit) {
  RawEntry entry;
  const uint64_t n = read_delimited(path, entry, "tm-record raw entry", [&](uint64_t i) {
    if (i == 1 && !entry.has_header()) throw UsageError(path + ": not a tm-record raw record (no header)");
    visit(entry);
  });
  if (n == 0) throw UsageError(path + ": not a tm-record raw record (no header)");
  return n;
}

}  // namespace tracemod::record
