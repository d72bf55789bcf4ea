#include "util/file_descriptor.hh"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <iostream>

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

FileDescriptor create_for_writing(const std::string& path) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (fd < 0) throw UsageError(path + ": cannot open for writing: " + std::strerror(errno));
  return FileDescriptor(fd);
}

RecordFile::RecordFile(std::string what, std::string noun, FileDescriptor fd)
    : what_(std::move(what)), noun_(std::move(noun)), fd_(std::move(fd)) {
  buffer_.reserve(kFlushAt + 4096);
}

RecordFile::~RecordFile() {
  flush();
}

void RecordFile::appendf(const char* format, ...) {
  char text[512];
  va_list args;
  va_start(args, format);
  const int n = std::vsnprintf(text, sizeof text, format, args);
  va_end(args);
  if (n < 0) return;
  if (static_cast<size_t>(n) < sizeof text) {
    buffer_.append(text, static_cast<size_t>(n));
    return;
  }
  std::string long_text(static_cast<size_t>(n) + 1, '\0');  // rare: a long header line
  va_start(args, format);
  std::vsnprintf(long_text.data(), long_text.size(), format, args);
  va_end(args);
  buffer_.append(long_text.data(), static_cast<size_t>(n));
}

void RecordFile::end_record() {
  ends_.push_back(buffer_.size());
  if (buffer_.size() >= kFlushAt) flush();
}

void RecordFile::flush() {
  if (ends_.empty()) return;
  const size_t whole = ends_.back();  // bytes after it are a record still being assembled
  write_out(buffer_.data(), whole, ends_);
  buffer_.erase(0, whole);
  ends_.clear();
}

void RecordFile::write(const char* data, size_t size, const std::vector<size_t>& ends) {
  flush();
  write_out(data, size, ends);
}

void RecordFile::write_out(const char* data, size_t size, const std::vector<size_t>& ends) {
  if (failed()) {  // nothing more is written after a failure: only counted
    lost_records_ += ends.size();
    lost_bytes_ += size;
    return;
  }
  size_t done = 0;
  while (done < size) {
    const ssize_t w = ::write(fd_.get(), data + done, size - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return fail(w < 0 ? std::strerror(errno) : "the write made no progress", done, size, ends);
    done += static_cast<size_t>(w);
  }
  offset_ += size;
}

// The write failed after WRITTEN of SIZE bytes: the file is cut back to the last whole record in them, the rest
// counted as lost, and the failure said once, now, while the command still runs.
void RecordFile::fail(const std::string& why, size_t written, size_t size, const std::vector<size_t>& ends) {
  const auto kept_end = std::upper_bound(ends.begin(), ends.end(), written);
  const size_t kept = kept_end == ends.begin() ? 0 : *(kept_end - 1);
  why_ = why;
  if (written > kept && ::ftruncate(fd_.get(), static_cast<off_t>(offset_ + kept)) < 0)
    why_ += std::string("; the record cut at its end could not be removed: ") + std::strerror(errno);
  offset_ += kept;
  lost_records_ += static_cast<uint64_t>(ends.end() - kept_end);
  lost_bytes_ += size - kept;
  std::cerr << program_invocation_short_name << ": " << what_ << ": write failed (" << why_
            << "): nothing more is written to it; the command runs on\n";
}

std::string RecordFile::loss_line() {
  flush();
  if (!failed()) return "";
  return what_ + ": " + std::to_string(lost_records_) + " " + noun_ + " (" + std::to_string(lost_bytes_) +
         " bytes) not written (" + why_ + ")";
}

void KeepCurrent::at(Nanos now) {
  if (!file_ || !file_->pending()) {
    due_ = kNever;
  } else if (due_ == kNever) {
    due_ = now + kEvery;
  } else if (now >= due_) {
    file_->flush();
    due_ = kNever;
  }
}

}  // namespace tracemod
