// How the recorder tells what an intercepted connection carries, whatever its port: by the first bytes its
// client sends, peeked (left in the socket for whoever takes the connection on), or by the origin speaking
// first. Not by the port, as Mahimahi does: a TLS origin on 8443 is HTTPS, a dev server on 3000 plain HTTP, and
// SSH on 443 neither.
#pragma once

#include <string_view>

namespace tracemod::webrecord {

enum class Opening {
  kUndecided,    // classify(): the bytes so far could still become a request line or a TLS header
  kTls,          // a TLS record header, 0x16 0x03 0x00-0x04: a ClientHello
  kHttp,         // an HTTP/1.x request line: METHOD SP TARGET SP HTTP/1.x CRLF
  kH2c,          // HTTP/2's cleartext preface, PRI * HTTP/2.0
  kOther,        // anything else the client sent first
  kOriginFirst,  // the origin sent (or closed) before the client sent a byte
  kClosed,       // the client closed without sending a byte
};

// What BYTES, all that the client has sent so far, open. ENDED: no more will come (the client closed, or
// waited too long to finish a line), so what is not decided yet is kOther.
Opening classify(std::string_view bytes, bool ended);

// Waits until the client's first bytes on CLIENT decide (peeked, not read) or ORIGIN speaks first. A client
// that sent the beginning of something (a request line cut short) has kFinishWait to finish it, after which it
// is kOther: a protocol that sends a few bytes and waits for the answer is not held up for longer.
Opening wait_for_opening(int client, int origin);

constexpr int kFinishWaitMs = 500;

}  // namespace tracemod::webrecord
