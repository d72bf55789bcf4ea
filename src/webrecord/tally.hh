// What the recorder did with every connection it took, for the one line it says at exit: the exchanges
// recorded, those it could not write, and the connections it could not record, by reason.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>

namespace tracemod::webrecord {

// Why a connection was not recorded (whole): counted once, by what ended it.
enum class Unrecorded {
  kNotHttp,      // neither TLS nor an HTTP request line first, or the origin spoke first: relayed as it was
  kH2c,          // HTTP/2 without TLS: relayed as it was
  kUnreachable,  // the original destination refused or could not be reached
  kOriginTls,    // the recorder's TLS handshake with the origin failed (its certificate, its protocols)
  kClientTls,    // the client's TLS handshake with the recorder failed (it does not trust the recording's CA)
  kMalformed,    // a message the HTTP parser (Beast, nghttp2) refused
  kCutShort,     // a side closed in the middle of an exchange
  kSwitched,     // a protocol switch (101, WebSocket): the connection is ended there
  kTooLarge,     // an exchange with a body over --max-body: relayed whole, not recorded; the connection went on
  kCount,
};

class Tally {
 public:
  void recorded() { ++recorded_; }
  // An exchange whose record could not be written; WHY names the file. True for the first (said at once).
  bool unwritten(const std::string& why);
  void unrecorded(Unrecorded why) { ++unrecorded_[static_cast<size_t>(why)]; }
  bool failed() const { return unwritten_ > 0; }

  // "DIR: 42 exchanges recorded; 3 connections not recorded (2 not HTTP, relayed as they were; 1 origin
  // unreachable)", with "; N exchanges not written (the first: FILE: why)" after the first count if any were.
  std::string summary(const std::string& dir) const;

 private:
  std::atomic<uint64_t> recorded_{0}, unwritten_{0};
  std::array<std::atomic<uint64_t>, static_cast<size_t>(Unrecorded::kCount)> unrecorded_{};
  mutable std::mutex mutex_;
  std::string first_unwritten_;
};

}  // namespace tracemod::webrecord
