// tm-delay: its command line is described in src/shells/delay.cc, where a shell fusing it finds it too.
#include "shells/shells.hh"

int main(int argc, char** argv) {
  return tracemod::run_tool(argc, argv, *tracemod::delay_tool());
}
