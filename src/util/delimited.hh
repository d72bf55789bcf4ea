// Length-delimited protobuf: a varint byte count, then the message. Raw records (tm-record's, tm-probe's) and
// the feedback connection use it.
#pragma once

#include <fcntl.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <google/protobuf/message.h>
#include <google/protobuf/message_lite.h>
#include <google/protobuf/stubs/logging.h>

#include <climits>
#include <cstdio>
#include <functional>
#include <string>

#include "util/error.hh"
#include "util/file_descriptor.hh"

namespace tracemod {

inline void append_delimited(const google::protobuf::MessageLite& message, std::string& out) {
  const size_t size = message.ByteSizeLong();
  uint8_t prefix[10];
  uint8_t* end = google::protobuf::io::CodedOutputStream::WriteVarint32ToArray(static_cast<uint32_t>(size), prefix);
  out.append(reinterpret_cast<char*>(prefix), static_cast<size_t>(end - prefix));
  const size_t at = out.size();
  out.resize(at + size);
  message.SerializeWithCachedSizesToArray(reinterpret_cast<uint8_t*>(&out[at]));
}

// UsageError("PATH: entry N: WHY"): how a reader refuses entry N of the file at PATH.
inline UsageError bad_entry(const std::string& path, uint64_t n, const std::string& why) {
  return UsageError(path + ": entry " + std::to_string(n) + ": " + why);
}

// Parses each message of the length-delimited file at PATH (a regular file: open_regular) into ENTRY and calls
// VISIT with its number (from 1).
// A message cut off at the end (its writer was killed mid-write) ends the file quietly; anything else
// malformed throws UsageError("PATH: entry N: ... a KIND"), e.g. KIND "tm-record raw entry". Returns how many
// messages were read. The protobuf library's own log lines (invalid UTF-8 in a string...) are silenced: the
// error says what is wrong, in one line.
inline uint64_t read_delimited(const std::string& path, google::protobuf::MessageLite& entry, const std::string& kind,
                               const std::function<void(uint64_t)>& visit) {
  constexpr uint32_t kMaxEntryBytes = 1 << 20;  // a real entry is tens of bytes
  FileDescriptor fd = open_regular(path);       // a FIFO would hang the read
  google::protobuf::io::FileInputStream file(fd.get());
  google::protobuf::io::CodedInputStream in(&file);
  in.SetTotalBytesLimit(INT_MAX);
  uint64_t n = 0;
  for (;; ++n) {
    uint32_t size = 0;
    if (!in.ReadVarint32(&size)) break;  // end of file (or a cut-off length: also the end)
    if (size > kMaxEntryBytes)
      throw bad_entry(path, n + 1, "length " + std::to_string(size) + " is not that of a " + kind);
    const auto limit = in.PushLimit(static_cast<int>(size));
    bool parsed = false;
    {
      const google::protobuf::LogSilencer quiet;  // thread-safe, unlike SetLogHandler
      parsed = entry.ParseFromCodedStream(&in);
    }
    const bool whole = in.BytesUntilLimit() == 0;
    in.PopLimit(limit);
    if (!whole) break;  // the writer was stopped in the middle of this entry
    if (!parsed) throw bad_entry(path, n + 1, "not a " + kind);
    visit(n + 1);
  }
  if (file.GetErrno() != 0) throw_errno("read " + path, file.GetErrno());
  return n;
}

// True if MESSAGE, or a message within it, holds fields its type does not define: what a message of another
// type, read as this one, shows.
bool has_unknown_fields(const google::protobuf::Message& message);

// Checks the header of a raw record (tm-record's, tm-probe's) read from PATH, before any of its entries are used:
// a header names its format in NAMED (its `kind` field), which must be KIND ("tm-probe raw record"). A header
// naming none was written before headers named their format: it must then hold no field its type does not
// define, and the caller checks the rest strictly (every entry has_unknown_fields-free). VERSION must be 1.
// Returns true for such an unnamed header; throws UsageError("PATH: not a KIND (...)") otherwise.
bool check_raw_header(const std::string& path, const google::protobuf::Message& header, const std::string& named,
                      uint32_t version, const std::string& kind);

// A file of length-delimited messages, written as they come and flushed about every 64 KiB (and by flush()),
// so an interrupted recording keeps all but its last moments.
class DelimitedWriter {
 public:
  explicit DelimitedWriter(const std::string& path);  // creates or truncates; throws Error
  ~DelimitedWriter();
  DelimitedWriter(const DelimitedWriter&) = delete;
  DelimitedWriter& operator=(const DelimitedWriter&) = delete;

  void write(const google::protobuf::MessageLite& entry);
  void flush();
  void close();  // flushes and closes; throws on a write error
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  FILE* file_ = nullptr;
  std::string buf_;
};

}  // namespace tracemod
