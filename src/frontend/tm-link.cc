// tm-link: its command line is described in src/shells/link.cc, where a shell fusing it finds it too.
#include "shells/shells.hh"

int main(int argc, char** argv) {
  return tracemod::run_tool(argc, argv, *tracemod::link_tool());
}
