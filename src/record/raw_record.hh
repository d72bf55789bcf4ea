// The raw per-packet record: length-delimited RawEntry messages (record.proto), written as packets arrive
// and flushed about once a second, so an interrupted recording keeps all but its last moments.
#pragma once

#include <cstdio>
#include <functional>
#include <string>

#include "record/record.pb.h"

namespace tracemod::record {

class RawWriter {
 public:
  explicit RawWriter(const std::string& path);  // creates or truncates; throws Error
  ~RawWriter();
  RawWriter(const RawWriter&) = delete;
  RawWriter& operator=(const RawWriter&) = delete;

  void write(const google::protobuf::MessageLite& entry);  // a RawEntry, or another tool's entry (tm-probe)
  void flush();
  void close();  // flushes and closes; throws on a write error
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  FILE* file_ = nullptr;
  std::string buf_;
};

// Calls VISIT for every entry of the raw record at PATH. A truncated last entry (the recorder was killed
// mid-write) ends the file quietly; anything else malformed throws UsageError("PATH: entry N: why").
// Returns the number of entries read.
uint64_t read_raw(const std::string& path, const std::function<void(const RawEntry&)>& visit);

}  // namespace tracemod::record
