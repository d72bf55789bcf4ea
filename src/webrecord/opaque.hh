// A connection the recorder does not record (not HTTP, or HTTP/2 without TLS): its bytes passed on as they
// come, both ways, so the command works as it would without the recorder.
#pragma once

namespace tracemod::webrecord {

// Copies CLIENT's bytes to ORIGIN and ORIGIN's to CLIENT until both directions have ended. An end is passed on
// as one (a half-close stays a half-close); an error on either side ends both. Blocking: the origin's direction
// runs on a thread of its own, so neither side waits for the other to read.
void relay_bytes(int client, int origin);

}  // namespace tracemod::webrecord
