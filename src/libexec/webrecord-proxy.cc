// tm-webrecord's recorder: started by tm-webrecord in the shell's parent namespace, not by a user
// (webrecord/proxy_command.hh).
#include "webrecord/proxy_command.hh"

int main(int argc, char** argv) { return tracemod::webrecord::proxy_command(argc, argv); }
