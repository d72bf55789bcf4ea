#include "util/file_descriptor.hh"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

#include "util/error.hh"

namespace tracemod {

FileDescriptor::FileDescriptor(int fd) : fd_(fd) {
  if (fd_ < 0) throw Error("FileDescriptor: invalid descriptor");
}

FileDescriptor::~FileDescriptor() {
  reset();
}

FileDescriptor& FileDescriptor::operator=(FileDescriptor&& other) noexcept {
  if (this != &other) {
    reset();
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

void FileDescriptor::reset() {
  if (fd_ >= 0) ::close(fd_);  // close never retried: on Linux the fd is gone even on EINTR
  fd_ = -1;
}

FileDescriptor FileDescriptor::open(const std::string& path, int flags) {
  return FileDescriptor(static_cast<int>(check_syscall("open " + path, ::open(path.c_str(), flags | O_CLOEXEC))));
}

void write_all(int fd, const std::string& data, const std::string& what) {
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    check_syscall(what, n);
    done += static_cast<size_t>(n);
  }
}

std::string read_file(const std::string& path) {
  FileDescriptor fd = FileDescriptor::open(path, O_RDONLY);
  std::string out;
  char buf[4096];
  for (;;) {
    ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    check_syscall("read " + path, n);
    if (n == 0) return out;
    out.append(buf, static_cast<size_t>(n));
  }
}

}  // namespace tracemod
