// The gnuplot program that draws a link log: throughput (capacity shaded, delivered as a line) above, queueing
// delay below, one point per time bin. Text only: running gnuplot is gnuplot.hh's business.
#pragma once

#include <string>
#include <vector>

#include "analysis/link_log_reader.hh"

namespace tracemod {

enum class PlotFormat { kSvg, kPng };

// Gnuplot commands, with the data inline, that write the picture to gnuplot's standard output.
// TITLE is shown verbatim (no gnuplot markup).
std::string plot_script(const LinkLogStats& stats, PlotFormat format, const std::string& title);

// Several logs in one picture (the paths of tm-multipath, say), each NAMES[i] in its own colour: capacity and
// delivered throughput above, mean queueing delay per bin below, on the logs' common clock. At least one log.
std::string plot_script(const std::vector<const LinkLogStats*>& logs, const std::vector<std::string>& names,
                        PlotFormat format, const std::string& title);

// TEXT as a double-quoted gnuplot string: backslashes and quotes escaped, control characters as spaces.
std::string gnuplot_quote(const std::string& text);

}  // namespace tracemod
