#include "top/terminal.hh"

#include <curses.h>
#include <langinfo.h>

#include <algorithm>
#include <clocale>
#include <cstring>
#include <string>
#include <vector>

#include "top/render.hh"

namespace tracemod::top {
namespace {

constexpr int kSparkSeconds = 60;

struct ViewState {
  size_t selected = 0;
  bool spark = false;
  bool unicode = false;
};

// Direction D's last minute, scaled to the larger of its highest capacity and highest rate.
std::string spark_row(const live::ShellState& s, int d, bool unicode) {
  std::vector<double> delivered;
  double max = 1;
  for (const live::Rates& r : s.per_second(kSparkSeconds)) {
    delivered.push_back(r.dir[d][live::kDelivered]);
    max = std::max({max, r.dir[d][live::kDelivered], r.dir[d][live::kOffered]});
  }
  char scale[48];
  std::snprintf(scale, sizeof scale, " max %.1f Mbit/s", max / 1e6);
  return std::string("       ") + (d == 0 ? "up   " : "down ") + sparkline(delivered, max, unicode) + scale;
}

void draw(const std::vector<const live::ShellState*>& shells, const ViewState& v) {
  erase();
  const size_t width = static_cast<size_t>(std::max(COLS, 1));
  const std::string title = "tm-top: " + std::to_string(shells.size()) + " shell" + (shells.size() == 1 ? "" : "s") +
                            "   up/down pick, s sparkline, q quit";
  mvaddnstr(0, 0, title.c_str(), COLS);
  int row = 1;
  if (shells.empty()) mvaddnstr(2, 0, "no tracemod shell is running", COLS);
  for (size_t i = 0; i < shells.size() && row < LINES; ++i) {
    const live::ShellState& s = *shells[i];
    if (i == v.selected) attron(A_REVERSE);
    mvaddnstr(row++, 0, shell_line(s, width).c_str(), COLS);
    if (i == v.selected) attroff(A_REVERSE);
    for (int d = 0; d < 2 && row < LINES; ++d) mvaddnstr(row++, 0, direction_line(s, d, width).c_str(), COLS);
    if (i != v.selected || !v.spark) continue;
    for (int d = 0; d < 2 && row < LINES; ++d) mvaddstr(row++, 0, spark_row(s, d, v.unicode).c_str());
  }
  refresh();
}

// Applies key K; false to quit.
bool on_key(int k, ViewState& v, size_t count) {
  if (k == 'q' || k == 'Q') return false;
  if ((k == KEY_UP || k == 'k') && v.selected > 0) --v.selected;
  if ((k == KEY_DOWN || k == 'j') && v.selected + 1 < count) ++v.selected;
  if (k == 's' || k == 'S' || k == '\n' || k == KEY_ENTER) v.spark = !v.spark;
  return true;
}

}  // namespace

int run_terminal(live::Monitor& monitor, Nanos interval) {
  std::setlocale(LC_ALL, "");
  ViewState v;
  v.unicode = std::strcmp(nl_langinfo(CODESET), "UTF-8") == 0;
  initscr();
  cbreak();
  noecho();
  keypad(stdscr, TRUE);
  curs_set(0);
  Nanos next = monotonic_now();
  for (;;) {
    const Nanos now = monotonic_now();
    if (now >= next) {
      monitor.refresh();
      next = now + interval;
    }
    const std::vector<const live::ShellState*> shells = monitor.shells();
    v.selected = std::min(v.selected, shells.empty() ? 0 : shells.size() - 1);
    draw(shells, v);
    timeout(static_cast<int>(std::max<Nanos>(1, (next - monotonic_now()) / kMillisecond)));
    const int k = getch();
    if (k != ERR && !on_key(k, v, shells.size())) break;
  }
  endwin();
  return 0;
}

}  // namespace tracemod::top
