// SIGINT, SIGTERM and SIGHUP arrive through a signalfd that the event loops poll (blocked otherwise).
#pragma once

#include "util/file_descriptor.hh"

namespace tracemod::record {

FileDescriptor block_stop_signals();  // also ignores SIGPIPE
// Nonzero (the signal's number) if one of them is pending on FD; consumes it.
int take_signal(int fd);

}  // namespace tracemod::record
