// tm-webrecord's side of the recording format (docs/web-recording.md): one exchange, as it went over the wire,
// written to its own file in a recording directory, in the order the responses completed.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "web/recording.hh"

namespace tracemod::web {

// A message as received: its start line (no CRLF), its headers in order and case, and the bytes that followed
// the headers (a chunked body with its chunk framing).
struct RawMessage {
  std::string first_line;
  std::vector<Header> headers;
  std::string body;
};

struct RawExchange {
  std::string address;  // the origin's, IPv6 without brackets
  uint16_t port = 0;
  Scheme scheme = Scheme::kHttp;
  std::string host;      // the name the request was for, without a port
  std::string protocol;  // "h2" or "http/1.1"
  RawMessage request, response;
};

class RecordWriter {
 public:
  // DIR must exist. Numbering goes on after the highest save.N already there.
  explicit RecordWriter(std::string dir);

  // Writes EXCHANGE as DIR/save.N (N zero-padded to 8 digits, one more than the last tried), whole or not at
  // all: the file is written unnamed (O_TMPFILE) and linked under its name once complete, or, where the file
  // system has no O_TMPFILE, written as .save.N.tmp (which readers skip) and renamed. Thread-safe. Returns the
  // path; throws Error naming it (its number is not used again).
  std::string write(const RawExchange& exchange);

 private:
  std::string dir_;
  std::mutex mutex_;
  uint64_t last_ = 0;
};

// The RequestResponse message of EXCHANGE, serialized (web/http_record.proto).
std::string serialize(const RawExchange& exchange);

}  // namespace tracemod::web
