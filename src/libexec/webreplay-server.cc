// tm-webreplay's server: started by tm-webreplay in the shell's parent namespace, not by a user
// (webserve/server_command.hh).
#include "webserve/server_command.hh"

int main(int argc, char** argv) { return tracemod::webserve::server_command(argc, argv); }
