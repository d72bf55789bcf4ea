#include "live/reader.hh"

#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <limits>

#include "util/error.hh"

namespace tracemod::live {
namespace {

// The numeric entries of directory PATH (pids of /proc, fds of /proc/PID/fd); empty if it cannot be read.
std::vector<long> numeric_entries(const std::string& path) {
  std::vector<long> out;
  DIR* d = opendir(path.c_str());
  if (!d) return out;
  while (const dirent* e = readdir(d)) {
    char* end = nullptr;
    const long v = std::strtol(e->d_name, &end, 10);
    if (end != e->d_name && *end == '\0') out.push_back(v);
  }
  closedir(d);
  return out;
}

std::string first_line(const std::string& path) {
  std::ifstream f(path);
  std::string line;
  std::getline(f, line);
  return line;
}

// The parent of PID from /proc/PID/stat ("pid (comm) state ppid ..."; comm may hold spaces and parentheses).
pid_t parent_of(pid_t pid) {
  const std::string stat = first_line("/proc/" + std::to_string(pid) + "/stat");
  const size_t close = stat.rfind(')');
  if (close == std::string::npos || close + 4 > stat.size()) return 0;
  return static_cast<pid_t>(std::strtol(stat.c_str() + close + 4, nullptr, 10));
}

bool is_tool(pid_t pid) {
  return first_line("/proc/" + std::to_string(pid) + "/comm").rfind("tm-", 0) == 0;
}

}  // namespace

LivePage::LivePage(const std::string& path) : fd_(FileDescriptor::open(path, O_RDONLY)) {
  struct stat st {};
  if (fstat(fd_.get(), &st) != 0 || static_cast<size_t>(st.st_size) < sizeof(Page))
    throw Error(path + ": not a live counters page");
  inode_ = st.st_ino;
  void* m = mmap(nullptr, sizeof(Page), PROT_READ, MAP_SHARED, fd_.get(), 0);
  if (m == MAP_FAILED) throw_errno("mmap " + path, errno);
  page_ = static_cast<const Page*>(m);
  header_ = page_->header;
  if (std::memcmp(header_.magic, kMagic, sizeof kMagic) != 0 || header_.version != kVersion ||
      header_.size != sizeof(Page) || header_.metrics != metrics().size() ||
      header_.fingerprint != metrics_fingerprint())
    throw Error(path + ": a live counters page of another layout");
  header_.tool[sizeof header_.tool - 1] = header_.tag[sizeof header_.tag - 1] = '\0';
  header_.arguments[sizeof header_.arguments - 1] = '\0';
  header_.command[sizeof header_.command - 1] = '\0';
}

LivePage::~LivePage() {
  if (page_) munmap(const_cast<Page*>(page_), sizeof(Page));
}

std::map<pid_t, std::string> find_live_pages() {
  std::map<pid_t, std::string> found;
  const std::string want = std::string("/memfd:") + kMemfdName + " (deleted)";
  for (long pid : numeric_entries("/proc")) {
    if (!is_tool(static_cast<pid_t>(pid))) continue;
    const std::string fds = "/proc/" + std::to_string(pid) + "/fd/";
    for (long fd : numeric_entries(fds)) {
      char target[128];
      const ssize_t n = readlink((fds + std::to_string(fd)).c_str(), target, sizeof target - 1);
      if (n > 0 && std::string(target, static_cast<size_t>(n)) == want) {
        found[static_cast<pid_t>(pid)] = fds + std::to_string(fd);
        break;
      }
    }
  }
  return found;
}

std::vector<Rates> ShellState::per_second(int n) const {
  std::vector<Rates> out;
  auto at = history.rbegin();
  for (int i = 0; i < n && at != history.rend(); ++i) {
    const Nanos span = static_cast<Nanos>(i + 1) * 1000 * kMillisecond;
    if (history.back().published < std::numeric_limits<Nanos>::min() + span) break;  // no earlier time: no overflow
    const Nanos from = history.back().published - span;
    auto start = std::find_if(at, history.rend(), [&](const Snapshot& s) { return s.published <= from; });
    if (start == history.rend()) break;
    out.push_back(rates_between(*start, *at));
    at = start;
  }
  std::reverse(out.begin(), out.end());
  return out;
}

void ShellState::take(const Snapshot& s) {
  if (!history.empty() && history.back().published == s.published) return;
  history.push_back(s);
  // A page's time stamps are whatever it holds: the bounds saturate rather than overflow.
  const auto before = [&](Nanos span) {
    return s.published < std::numeric_limits<Nanos>::min() + span ? std::numeric_limits<Nanos>::min()
                                                                  : s.published - span;
  };
  while (history.front().published < before(Monitor::kHistory)) history.pop_front();
  auto from = std::find_if(history.rbegin(), history.rend(),
                           [&](const Snapshot& h) { return h.published <= before(Monitor::kRecent); });
  recent = rates_between(from == history.rend() ? history.front() : *from, s);
  ended = s.ended != 0;
}

void Monitor::adopt(pid_t pid, const std::string& path, Nanos now) {
  try {
    Watched w{std::make_unique<LivePage>(path), {}};
    for (const auto& [other, seen] : watched_)  // a child that inherited the shell's descriptor: not a shell
      if (seen.page->inode() == w.page->inode()) return;
    w.state.pid = pid;
    w.state.header = w.page->header();
    watched_.emplace(pid, std::move(w));
    refused_.erase(pid);
  } catch (const std::exception&) {
    refused_[pid] = now;  // not written yet, gone meanwhile, not ours to read: not an error for a viewer
  }
}

void Monitor::refresh() {
  refresh(find_live_pages(), monotonic_now());
}

void Monitor::refresh(const std::map<pid_t, std::string>& pages, Nanos now) {
  for (auto it = watched_.begin(); it != watched_.end();)
    it = pages.count(it->first) ? std::next(it) : watched_.erase(it);
  for (auto it = refused_.begin(); it != refused_.end();)  // a pid that comes back is another shell
    it = pages.count(it->first) ? std::next(it) : refused_.erase(it);
  for (const auto& [pid, path] : pages) {
    const auto refused = refused_.find(pid);
    if (!watched_.count(pid) && (refused == refused_.end() || now - refused->second >= kRetry)) adopt(pid, path, now);
  }
  for (auto& [pid, w] : watched_) {
    Snapshot s;
    if (w.page->read(s)) w.state.take(s);
  }
  link_parents();
}

// A shell's parent is its nearest ancestor process that is a watched shell.
void Monitor::link_parents() {
  for (auto& [pid, w] : watched_) {
    w.state.parent = 0;
    for (pid_t p = parent_of(pid); p > 1; p = parent_of(p)) {
      if (watched_.count(p)) {
        w.state.parent = p;
        break;
      }
    }
  }
  for (auto& [pid, w] : watched_) {
    w.state.level = 0;
    for (pid_t p = w.state.parent; p != 0 && w.state.level < 64; p = watched_.at(p).state.parent) ++w.state.level;
  }
}

std::vector<const ShellState*> Monitor::shells() const {
  std::vector<const ShellState*> out;
  std::function<void(pid_t)> add = [&](pid_t parent) {
    for (const auto& [pid, w] : watched_) {
      if (w.state.parent != parent || w.state.history.empty()) continue;
      out.push_back(&w.state);
      add(pid);
    }
  };
  if (only_ == 0) {
    add(0);
  } else if (auto it = watched_.find(only_); it != watched_.end() && !it->second.state.history.empty()) {
    out.push_back(&it->second.state);
    add(only_);
  }
  return out;
}

}  // namespace tracemod::live
