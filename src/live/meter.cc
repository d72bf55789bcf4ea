#include "live/meter.hh"

#include <sys/ioctl.h>
#include <unistd.h>

namespace tracemod::live {
namespace {

constexpr Nanos kTerminalInterval = 500 * kMillisecond, kLogInterval = 1000 * kMillisecond;

// Direction D's columns as tm-top shows them, in as few characters as they read.
std::string direction_text(const char* name, const DirectionRates& d) {
  std::string out = name;
  for (char c : columns_text(d))
    if (c != ' ' || out.back() != ' ') out += c;
  return out;
}

}  // namespace

std::string meter_line(const Rates& rates, size_t width) {
  std::string line = direction_text("up ", rates.dir[0]) + " | " + direction_text("down ", rates.dir[1]);
  if (width > 0 && line.size() > width) line.resize(width);
  return line;
}

Meter::Meter(std::string label, int depth, int fd)
    : label_(std::move(label)), depth_(depth), fd_(fd), terminal_(isatty(fd) == 1) {}

int Meter::rows() const {
  winsize w{};
  return ioctl(fd_, TIOCGWINSZ, &w) == 0 ? w.ws_row : 0;
}

void Meter::show(const Snapshot& s) {
  if (!have_last_) {
    last_ = s;
    have_last_ = true;
    return;
  }
  if (s.published - last_.published < (terminal_ ? kTerminalInterval : kLogInterval)) return;
  const std::string text = label_ + " " + meter_line(rates_between(last_, s), 0);
  last_ = s;
  draw(text);
}

// On a terminal: its line is row (height - depth); the scrolling region ends above it. Escape sequences are
// VT100's (DECSC/DECRC save and restore the cursor, DECSTBM sets the region), which every terminal speaks.
void Meter::draw(const std::string& line) {
  std::string out;
  if (!terminal_) {
    out = line + "\n";
  } else {
    winsize w{};
    if (ioctl(fd_, TIOCGWINSZ, &w) != 0 || w.ws_row <= depth_ + 2) return;
    const int row = w.ws_row - depth_;
    if (region_rows_ != w.ws_row) {  // first line, or the terminal was resized: (re)make room
      out += "\n\0337\033[1;" + std::to_string(row - 1) + "r\0338\033[1A";
      region_rows_ = w.ws_row;
    }
    out += "\0337\033[" + std::to_string(row) + ";1H\033[2K" + line.substr(0, w.ws_col) + "\0338";
  }
  if (write(fd_, out.data(), out.size()) < 0) return;  // a meter that cannot be shown is not an error
}

void Meter::close() {
  if (!terminal_ || region_rows_ == 0) return;
  const int height = rows();
  const int row = height - depth_;
  // An outer shell's meter keeps its line: give back only this one.
  const std::string region = depth_ == 0 ? "\033[r" : "\033[1;" + std::to_string(row) + "r";
  const std::string out = "\0337" + region + "\033[" + std::to_string(row) + ";1H\033[2K\0338";
  if (write(fd_, out.data(), out.size()) < 0) return;
  region_rows_ = 0;
}

}  // namespace tracemod::live
