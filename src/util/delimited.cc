#include "util/delimited.hh"

#include <cerrno>
#include <utility>

namespace tracemod {
namespace {
constexpr size_t kBufferBytes = 64 * 1024;
}  // namespace

DelimitedWriter::DelimitedWriter(const std::string& path) : path_(path) {
  file_ = std::fopen(path.c_str(), "we");
  if (!file_) throw_errno("create " + path, errno);
}

DelimitedWriter::~DelimitedWriter() {
  if (file_) std::fclose(file_);
}

void DelimitedWriter::write(const google::protobuf::MessageLite& entry) {
  append_delimited(entry, buf_);
  if (buf_.size() >= kBufferBytes) flush();
}

void DelimitedWriter::flush() {
  if (!file_ || buf_.empty()) return;
  if (std::fwrite(buf_.data(), 1, buf_.size(), file_) != buf_.size() || std::fflush(file_) != 0)
    throw_errno("write " + path_, errno);
  buf_.clear();
}

void DelimitedWriter::close() {
  if (!file_) return;
  flush();
  FILE* f = std::exchange(file_, nullptr);
  if (std::fclose(f) != 0) throw_errno("close " + path_, errno);
}

}  // namespace tracemod
