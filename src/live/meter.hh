// --meter: a shell's one-line live status, Mahimahi's meters without another window. On a terminal it stays
// on a line of its own at the bottom (the outermost shell's lowest, each nested one above it), kept out of the
// scrolling region so the command's output scrolls above it, redrawn twice a second; elsewhere (stderr is a
// file or a pipe) it is a line per second on stderr.
#pragma once

#include <string>

#include "live/page.hh"
#include "live/rates.hh"

namespace tracemod::live {

// "up 11.8 / 12.0 Mbit/s q 14p 21kB 18.2ms drop 3/s | down ...": tm-top's columns of RATES, each run of
// spaces one, in at most WIDTH columns (0: no limit).
std::string meter_line(const Rates& rates, size_t width);

class Meter {
 public:
  // LABEL starts each line ("tm-link"); DEPTH is the shell's (0: outermost); FD is where to draw.
  Meter(std::string label, int depth, int fd);
  // Given every published snapshot: draws when its interval has passed since the last line.
  void show(const Snapshot& s);
  // Gives the terminal its scrolling region back and clears the meter's line.
  void close();

 private:
  void draw(const std::string& line);
  int rows() const;

  std::string label_;
  int depth_, fd_;
  bool terminal_;
  int region_rows_ = 0;  // the terminal's height when the scrolling region was last set; 0: not set
  Snapshot last_{};
  bool have_last_ = false;
};

}  // namespace tracemod::live
