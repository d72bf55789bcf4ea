// tm-webrecord's recorder as a program of its own (libexec/webrecord-proxy): what its command line holds and
// how it starts. tm-webrecord starts it in the shell's parent namespace, its options already checked.
#pragma once

namespace tracemod::webrecord {

// `webrecord-proxy --dir DIR [--upstream-ca FILE | --insecure-upstream] [--max-body BYTES] [--verbose]`: listens
// on $TM_OUTER and $TM_OUTER6 until SIGTERM, then says what it recorded in one line and exits (1 if a record
// could not be written). What went wrong before it listens is one line on stderr, exit 1.
int proxy_command(int argc, char** argv);

}  // namespace tracemod::webrecord
