// Running gnuplot, an optional dependency: looked up on PATH when a picture is asked for, fed its script on a
// pipe, never through a shell.
#pragma once

#include <string>

namespace tracemod {

// The gnuplot program found on $PATH (as execvp would), or "" if there is none.
std::string find_gnuplot();

// Runs GNUPLOT with SCRIPT on its standard input and its standard output on OUTPUT_FD. Throws Error naming
// what gnuplot said on standard error if it cannot be started or does not exit with status 0.
void run_gnuplot(const std::string& gnuplot, const std::string& script, int output_fd);

}  // namespace tracemod
