// tm-webreplay's server as a program of its own (libexec/webreplay-server): what its command line holds and
// how it starts. tm-webreplay starts it in the shell's parent namespace with the recording's snapshot
// (web/snapshot.hh) as standard input, already read and addressed: it parses no recording again.
#pragma once

namespace tracemod::webserve {

// `webreplay-server --ca-dir DIR [--ready-fd N] [--ignore-param NAME]... [--strict] [--keep-dates]
// [--deterministic [--seed N]]`: takes the CA and serves every origin of the snapshot on standard input, and DNS
// on $TM_OUTER and $TM_OUTER6, until SIGTERM. Returns the exit status; what went wrong is one line on stderr.
int server_command(int argc, char** argv);

}  // namespace tracemod::webserve
