// The feedback connection: length-delimited Control messages (record.proto) over a non-blocking stream.
#pragma once

#include <string>

#include "record/record.pb.h"
#include "util/clock.hh"
#include "util/file_descriptor.hh"

namespace tracemod::record {

class ControlStream {
 public:
  explicit ControlStream(FileDescriptor fd) : fd_(std::move(fd)) {}

  int fd() const { return fd_.get(); }
  void send(const Control& message);  // queues and writes what the socket takes now
  bool flush();                       // writes more; true once nothing is left queued
  bool wants_write() const { return !out_.empty(); }
  // Reads what is there; false at end of stream. Throws on errors.
  bool read_some();
  // The next complete message, if one has arrived.
  bool next(Control* message);
  // Blocks until everything queued is written or TIMEOUT passes.
  void drain(int timeout_ms);
  // Writes what is queued, says end of stream, and reads until the peer's: closing with unread data would
  // send a TCP reset, which can destroy the peer's last unread messages (our stop and bye).
  void close_gracefully(int timeout_ms);
  // Blocks for the next message; throws Error(WHAT ...) on timeout or end of stream.
  Control receive(int timeout_ms, const std::string& what);

 private:
  FileDescriptor fd_;
  std::string in_, out_;
  size_t in_pos_ = 0;
};

}  // namespace tracemod::record
