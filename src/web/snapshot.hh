// A recording handed from one process to another whole: tm-webreplay reads and checks a recording once, before
// anything starts, and its server, started later in the parent namespace, reads this instead of the file (a 68 MB
// HAR is parsed once, not twice, and the server serves exactly what the check read). Length-delimited protobuf
// (web/snapshot.proto) in a file the caller gives, usually a memfd.
#pragma once

#include "web/recording.hh"

namespace tracemod::web {

// Writes RECORDING to FD from its current offset, moving its bodies out (what is left of RECORDING is its
// origins and requests; a 68 MB HAR's bodies are not copied once more). Throws Error.
void write_snapshot(Recording& recording, int fd);

// Reads what write_snapshot wrote to FD, from its start. Throws Error if it is not whole.
Recording read_snapshot(int fd);

}  // namespace tracemod::web
