#include "analysis/gnuplot.hh"

#include <fcntl.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <vector>

#include "util/error.hh"
#include "util/file_descriptor.hh"

extern char** environ;

namespace tracemod {
namespace {

bool is_executable_file(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

// The last few lines gnuplot wrote on standard error, trimmed and joined (its caret lines left out).
std::string error_text(int fd) {
  std::string text;
  char buf[4096];
  ssize_t n;
  ::lseek(fd, 0, SEEK_SET);
  while (text.size() < 65536 && (n = ::read(fd, buf, sizeof buf)) > 0) text.append(buf, static_cast<size_t>(n));
  std::vector<std::string> lines;
  for (size_t start = 0; start < text.size();) {
    const size_t end = std::min(text.find('\n', start), text.size());
    const std::string line = text.substr(start, end - start);
    const size_t first = line.find_first_not_of(" \t"), last = line.find_last_not_of(" \t");
    if (first != std::string::npos && line.substr(first, last - first + 1) != "^")
      lines.push_back(line.substr(first, last - first + 1));
    start = end + 1;
  }
  std::string out;
  for (size_t i = lines.size() > 3 ? lines.size() - 3 : 0; i < lines.size(); ++i)
    out += (out.empty() ? "" : " / ") + lines[i];
  return out.empty() ? "(nothing on standard error)" : out;
}

// Writes SCRIPT to the pipe and closes it; a gnuplot that quits early (EPIPE) is judged by its exit status.
void feed(FileDescriptor pipe, const std::string& script) {
  size_t done = 0;
  while (done < script.size()) {
    const ssize_t n = ::write(pipe.get(), script.data() + done, script.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EPIPE) return;
    check_syscall("write to gnuplot", n);
    done += static_cast<size_t>(n);
  }
}

int wait_for(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) throw_errno("wait for gnuplot", errno);
  return status;
}

pid_t spawn(const std::string& gnuplot, int in, int out, int err) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in, 0);
  posix_spawn_file_actions_adddup2(&actions, out, 1);
  posix_spawn_file_actions_adddup2(&actions, err, 2);
  std::vector<char*> argv = {const_cast<char*>(gnuplot.c_str()), nullptr};
  pid_t pid = -1;
  const int rc = ::posix_spawn(&pid, gnuplot.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) throw_errno("start " + gnuplot, rc);
  return pid;
}

}  // namespace

std::string find_gnuplot() {
  const char* path = std::getenv("PATH");
  const std::string dirs = path ? path : "/usr/local/bin:/usr/bin:/bin";
  size_t start = 0;
  for (;;) {
    const size_t colon = dirs.find(':', start);
    const std::string dir = dirs.substr(start, colon == std::string::npos ? std::string::npos : colon - start);
    const std::string candidate = (dir.empty() ? "." : dir) + "/gnuplot";  // an empty entry is the cwd
    if (is_executable_file(candidate)) return candidate;
    if (colon == std::string::npos) return "";
    start = colon + 1;
  }
}

void run_gnuplot(const std::string& gnuplot, const std::string& script, int output_fd) {
  int fds[2];
  check_syscall("create a pipe to gnuplot", ::pipe2(fds, O_CLOEXEC));
  FileDescriptor read_end(fds[0]), write_end(fds[1]);
  // Its complaints go to a memory file, not a pipe: a talkative gnuplot cannot then block while we write.
  FileDescriptor errors(static_cast<int>(check_syscall("memfd_create", ::memfd_create("gnuplot-errors", MFD_CLOEXEC))));
  const pid_t pid = spawn(gnuplot, read_end.get(), output_fd, errors.get());
  read_end.reset();
  feed(std::move(write_end), script);
  const int status = wait_for(pid);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return;
  const std::string how = WIFEXITED(status) ? "exit status " + std::to_string(WEXITSTATUS(status))
                                            : "killed by signal " + std::to_string(WTERMSIG(status));
  throw Error(gnuplot + " failed (" + how + "): " + error_text(errors.get()));
}

}  // namespace tracemod
