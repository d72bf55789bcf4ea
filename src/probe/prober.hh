// tm-probe's collection workload (Noble et al.): once an interval, an echo of S1 bytes and, on its reply, two
// echoes of S2 bytes back to back; every echo's send and reply times written to a raw record as they become
// known (probe.proto), flushed at least once a second so an interrupted run keeps nearly everything.
#pragma once

#include <string>

#include "probe/echo_socket.hh"

namespace tracemod::probe {

// What a raw record's header calls it (Header.kind).
constexpr char kRawRecordKind[] = "tm-probe raw record";

struct ProbeConfig {
  std::string target;             // as the user gave it
  SocketAddress address;  // what it resolved to (the port only for UDP)
  Method method = Method::kAuto;
  uint32_t small = 64, large = 1400;  // IP bytes
  Nanos interval = 1000 * kMillisecond;
  Nanos duration = 0;  // 0: until SIGINT, SIGTERM or SIGHUP
  Nanos timeout = 5000 * kMillisecond;
  std::string output;
  bool quiet = false;
};

// Probes until the duration ends or a signal arrives, then waits for the replies still due (a second signal
// stops at once). Returns the summary line. Throws Error (the socket, the record) or UsageError (sizes).
std::string run_probe(const ProbeConfig& config);

}  // namespace tracemod::probe
