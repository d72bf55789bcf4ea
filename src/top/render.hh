// tm-top's figures as text (the terminal view, --once) and as JSON (--json, the web page), from a Monitor.
//
// Text, three lines per shell, indented by nesting, within WIDTH columns (80 suffice):
//   4211 tm-link --uplink-rate 12mbit --downlink-rate 12mbit -- iperf3 -c 10.0.0.1
//        up      0.1 /   12.0 Mbit/s  q     0p     0B    20.1ms  drop     0/s
//        down   11.8 /   12.0 Mbit/s  q    14p   21kB    18.2ms  drop     3/s on
// (rate delivered / capacity offered over the last second; queue packets, wire IP bytes and the mean stay of
// the frames sent in that second; drops per second, all causes; the schedule's state).
#pragma once

#include <string>
#include <vector>

#include "live/reader.hh"

namespace tracemod::top {

// The first line of SHELL, in WIDTH columns.
std::string shell_line(const live::ShellState& shell, size_t width);
// Direction D's line of SHELL, in WIDTH columns.
std::string direction_line(const live::ShellState& shell, int d, size_t width);
// Every shell's lines; "no tracemod shell is running" if there is none.
std::string text_view(const std::vector<const live::ShellState*>& shells, size_t width);

// SHELLS as one JSON object {"shells": [...]}; with HISTORY_SECONDS > 0, each direction also holds its
// delivered and offered bit rates and mean delay in each of the last HISTORY_SECONDS seconds. tm-top(1) says
// what each field is.
std::string json_view(const std::vector<const live::ShellState*>& shells, int history_seconds);

// VALUES (>= 0; -1: no figure) as a sparkline of block characters scaled to MAX (UTF-8 if UNICODE, else ASCII).
std::string sparkline(const std::vector<double>& values, double max, bool unicode);

}  // namespace tracemod::top
