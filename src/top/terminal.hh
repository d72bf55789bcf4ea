// tm-top's live view on a terminal (ncurses): every shell as a tree, refreshed every INTERVAL; the arrow keys
// (or j/k) pick a shell, s (or Enter) shows a sparkline of its last minute, q quits.
#pragma once

#include "live/reader.hh"
#include "util/clock.hh"

namespace tracemod::top {

// Runs until the user quits (q, or Ctrl-C); returns the exit status, 0.
int run_terminal(live::Monitor& monitor, Nanos interval);

}  // namespace tracemod::top
