// The one owner of a kernel file descriptor: moves, never copies, closes exactly once.
#pragma once

#include <string>
#include <utility>

namespace tracemod {

class FileDescriptor {
 public:
  FileDescriptor() = default;
  explicit FileDescriptor(int fd);  // takes ownership; fd must be valid
  ~FileDescriptor();
  FileDescriptor(FileDescriptor&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  FileDescriptor& operator=(FileDescriptor&& other) noexcept;
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  void reset();

  // Opens PATH with O_CLOEXEC added to FLAGS; throws "open PATH: why".
  static FileDescriptor open(const std::string& path, int flags);

 private:
  int fd_ = -1;
};

// Writes all of DATA to FD (retrying short writes); throws on error.
void write_all(int fd, const std::string& data, const std::string& what);

// Reads a whole small file (e.g. under /proc); throws on error.
std::string read_file(const std::string& path);

}  // namespace tracemod
