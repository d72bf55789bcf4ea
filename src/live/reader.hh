// A reader's side of the live counters: finding every running shell's page, mapping it read-only, and
// keeping the last minute of its snapshots (tm-top, its web page). Which shell encloses which is found from
// the process tree: a shell's nearest ancestor that is a shell.
#pragma once

#include <sys/types.h>

#include <deque>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "live/page.hh"
#include "live/rates.hh"
#include "util/file_descriptor.hh"

namespace tracemod::live {

// One shell's page, mapped read-only.
class LivePage {
 public:
  // Maps PATH (a /proc/PID/fd/N); throws Error if it is not a page of the layout this reader knows.
  explicit LivePage(const std::string& path);
  ~LivePage();
  LivePage(const LivePage&) = delete;
  LivePage& operator=(const LivePage&) = delete;
  const Header& header() const { return header_; }
  ino_t inode() const { return inode_; }  // the same page seen in two processes has one inode
  bool read(Snapshot& out) const { return read_snapshot(*page_, out); }

 private:
  FileDescriptor fd_;
  const Page* page_ = nullptr;
  Header header_{};
  ino_t inode_ = 0;
};

// Every live page this process may open: pid -> /proc/PID/fd/N. Processes of other users are not visible
// (the kernel's ptrace check), except to root.
std::map<pid_t, std::string> find_live_pages();

struct ShellState {
  pid_t pid = 0, parent = 0;  // parent: the nearest enclosing shell, 0 if none is visible
  int level = 0;              // nesting among the visible shells (0: outermost)
  Header header{};
  std::deque<Snapshot> history;  // oldest first, one per refresh, the last kHistory
  Rates recent;                  // over the last kRecent (or since the shell was first seen)
  bool ended = false;            // the command has exited (the shell is finishing)
  const Snapshot& latest() const { return history.back(); }
  // Takes S, just read from the shell's page, into the history (unless it is the last one again), the recent
  // rates and ENDED. Monitor::refresh gives it each shell's snapshot; the fuzz target, pages of its own.
  void take(const Snapshot& s);
  // Direction D in each whole second of the last N, oldest first, as far as the history reaches.
  std::vector<Rates> per_second(int n) const;
};

class Monitor {
 public:
  static constexpr Nanos kHistory = 61 * 1000 * kMillisecond;
  static constexpr Nanos kRecent = 1000 * kMillisecond;

  // A page that could not be read (not written yet, another user's) is tried again after this long.
  static constexpr Nanos kRetry = 1000 * kMillisecond;

  // Finds new shells, reads every shell's snapshot, forgets the shells that are gone.
  void refresh();
  // The same with PAGES found ({pid: its page's path}), at monotonic time NOW.
  void refresh(const std::map<pid_t, std::string>& pages, Nanos now);
  // The shells in tree order: each followed by those it encloses, by pid.
  std::vector<const ShellState*> shells() const;
  // From now on shells() holds only the shell PID and those it encloses (0: every shell).
  void only(pid_t pid) { only_ = pid; }

 private:
  struct Watched {
    std::unique_ptr<LivePage> page;
    ShellState state;
  };
  void adopt(pid_t pid, const std::string& path, Nanos now);
  void link_parents();
  std::map<pid_t, Watched> watched_;
  std::map<pid_t, Nanos> refused_;  // pids whose page could not be read, and when: tried again after kRetry
  pid_t only_ = 0;
};

}  // namespace tracemod::live
