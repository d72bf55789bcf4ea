// tm-loss: its command line is described in src/shells/loss.cc, where a shell fusing it finds it too.
#include "shells/shells.hh"

int main(int argc, char** argv) {
  return tracemod::run_tool(argc, argv, *tracemod::loss_tool());
}
