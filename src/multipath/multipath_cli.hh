// tm-multipath's paths: each --path SPEC read into the queues of its two directions. A SPEC is a comma-separated
// KEY=VALUE list (util/parse's KeyValues; every value read as everywhere else):
//   trace=FILE | rate=RATE       capacity of both directions (up-trace=, down-trace=, up-rate=, down-rate= per
//                                direction); a trace is Mahimahi's, looked up as tm-link's are
//   queue=NAME[:ARG:ARG...]      the link's queue as tm-link's --uplink-queue and --uplink-queue-args, the args
//                                joined by ':' instead of ',' (up-queue=, down-queue=)
//   delay=MS                     one-way delay, each direction (up-delay=, down-delay=)
//   loss=MODEL                   random loss, each direction, as tm-loss's --uplink-loss with ':' for ','
//                                (loss=1%, loss=gilbert:p=1%:r=10%; up-loss=, down-loss=)
//   up-log=FILE, down-log=FILE   the link's log per direction (tm-link's format)
//   notice=DURATION              once either direction's trace has offered no opportunity for DURATION, the
//                                path's MPTCP endpoints are withdrawn from the command's path manager, and added
//                                back when the trace offers again (shell/path_notice.hh); never on a rate
// A direction crosses its link, then its loss, then its delay.
#pragma once

#include <string>
#include <vector>

#include "link/link_log.hh"
#include "shell/shell_runner.hh"
#include "util/file_descriptor.hh"  // NamedFile

namespace tracemod {

struct MultipathOptions {
  std::vector<std::string> specs;  // one per --path, in order
  uint64_t seed = 0;
  bool once = false;  // --once: a path's trace ending ends the run
  LinkLog::Format log_format = LinkLog::Format::kTracemod;
};

// The traces and logs SPECS name (--path's up-log=... against every path's trace=...), for check_outputs.
std::vector<NamedFile> path_files(const std::vector<std::string>& specs);
// The queue factory of each path; registers its logs in SHELL. Throws UsageError naming the --path (and key) at
// fault.
std::vector<QueueFactory> read_paths(const MultipathOptions& o, ShellOptions& shell);

}  // namespace tracemod
