#include "record/raw_record.hh"

#include <fcntl.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "record/delimited.hh"
#include "util/error.hh"
#include "util/file_descriptor.hh"

namespace tracemod::record {
namespace {
constexpr size_t kBufferBytes = 64 * 1024;
constexpr uint32_t kMaxEntryBytes = 1 << 20;  // a real entry is tens of bytes
}  // namespace

RawWriter::RawWriter(const std::string& path) : path_(path) {
  file_ = std::fopen(path.c_str(), "we");
  if (!file_) throw_errno("create " + path, errno);
}

RawWriter::~RawWriter() {
  if (file_) std::fclose(file_);
}

void RawWriter::write(const RawEntry& entry) {
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
  FileDescriptor fd = FileDescriptor::open(path, O_RDONLY);
  google::protobuf::io::FileInputStream file(fd.get());
  google::protobuf::io::CodedInputStream in(&file);
  in.SetTotalBytesLimit(INT32_MAX);
  uint64_t n = 0;
  RawEntry entry;
  for (;; ++n) {
    uint32_t size = 0;
    if (!in.ReadVarint32(&size)) break;  // end of file (or a cut-off length: also the end)
    if (size > kMaxEntryBytes)
      throw UsageError(path + ": entry " + std::to_string(n + 1) + ": length " + std::to_string(size) +
                       " is not that of a tm-record raw entry");
    const auto limit = in.PushLimit(static_cast<int>(size));
    const bool parsed = entry.ParseFromCodedStream(&in);
    const bool whole = in.BytesUntilLimit() == 0;
    in.PopLimit(limit);
    if (!whole) break;  // the recorder was stopped in the middle of this entry
    if (!parsed) throw UsageError(path + ": entry " + std::to_string(n + 1) + ": not a tm-record raw entry");
    if (n == 0 && !entry.has_header()) throw UsageError(path + ": not a tm-record raw record (no header)");
    visit(entry);
  }
  if (file.GetErrno() != 0) throw_errno("read " + path, file.GetErrno());
  if (n == 0) throw UsageError(path + ": not a tm-record raw record (no header)");
  return n;
}

}  // namespace tracemod::record
