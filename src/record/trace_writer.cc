#include "record/trace_writer.hh"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <utility>

#include "util/error.hh"

namespace tracemod::record {

TraceWriter::TraceWriter(std::string path) : path_(std::move(path)), part_(path_ + ".part") {
  file_ = std::fopen(part_.c_str(), "we");
  if (!file_) throw_errno("create " + part_, errno);
}

TraceWriter::~TraceWriter() {
  if (!file_) return;
  std::fclose(file_);
  ::unlink(part_.c_str());
}

void TraceWriter::put(uint64_t ms) {
  if (std::fprintf(file_, "%llu\n", static_cast<unsigned long long>(ms)) < 0) throw_errno("write " + part_, errno);
}

void TraceWriter::add(Nanos arrival) {
  if (lines_ == 0) origin_ = arrival;
  const uint64_t ms = arrival > origin_ ? static_cast<uint64_t>((arrival - origin_) / kMillisecond) : 0;
  if (lines_ > 0) put(held_);
  held_ = std::max(held_, ms);
  ++lines_;
}

bool TraceWriter::finish() {
  if (!file_) return false;
  if (lines_ == 0) {
    std::fclose(std::exchange(file_, nullptr));
    ::unlink(part_.c_str());
    return false;
  }
  put(std::max<uint64_t>(held_, 1));  // Mahimahi's period is the last line: it must not be 0
  FILE* f = std::exchange(file_, nullptr);
  if (std::fclose(f) != 0) throw_errno("write " + part_, errno);
  if (::rename(part_.c_str(), path_.c_str()) != 0) throw_errno("rename " + part_ + " to " + path_, errno);
  return true;
}

}  // namespace tracemod::record
