#include "util/file_descriptor.hh"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
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

namespace {

const char* kind_of(mode_t mode) {
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a file";
}

[[noreturn]] void not_regular(const std::string& path, mode_t mode, const std::string& hint) {
  if (S_ISDIR(mode)) throw UsageError(path + ": cannot open: " + std::strerror(EISDIR));
  throw UsageError(path + ": not a regular file (" + (hint.empty() ? kind_of(mode) : hint) + ")");
}

}  // namespace

FileDescriptor open_regular(const std::string& path, const std::string& hint) {
  // O_NONBLOCK: a FIFO with no writer opens at once, to be refused, instead of blocking the open.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  struct stat st {};
  if (fd < 0) {
    const int err = errno;
    if (err == ENXIO && ::stat(path.c_str(), &st) == 0) not_regular(path, st.st_mode, hint);  // a socket
    throw UsageError(path + ": cannot open: " + std::strerror(err));
  }
  FileDescriptor file(fd);
  if (::fstat(fd, &st) < 0) throw UsageError(path + ": cannot open: " + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) not_regular(path, st.st_mode, hint);
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  return file;
}

LineReader::LineReader(const std::string& path)
    : name_(path),
      owned_(open_regular(path)),
      fd_(owned_.get()),
      buffer_(new char[kMaxLine + 1]),
      data_(buffer_.get()) {}

// The buffer is not zeroed: a short file touches little of it.
LineReader::LineReader(int fd, std::string name)
    : name_(std::move(name)), fd_(fd), buffer_(fd < 0 ? nullptr : new char[kMaxLine + 1]), data_(buffer_.get()) {}

LineReader LineReader::of_text(std::string_view text, std::string name) {
  LineReader r(-1, std::move(name));
  r.data_ = text.data();
  r.end_ = text.size();
  r.at_end_ = true;
  return r;
}

bool LineReader::next(std::string_view& line) {
  for (;;) {
    const size_t held = end_ - begin_;
    if (const void* nl = std::memchr(data_ + begin_, '\n', held)) {
      const size_t size = static_cast<size_t>(static_cast<const char*>(nl) - (data_ + begin_));
      return take(line, size, size + 1);
    }
    if (at_end_ || held > kMaxLine) return held > 0 && take(line, held, held);  // a full buffer: too long
    fill();
  }
}

bool LineReader::take(std::string_view& line, size_t size, size_t used) {
  ++number_;
  if (size > kMaxLine) fail("a line of more than " + std::to_string(kMaxLine) + " bytes");
  line = std::string_view(data_ + begin_, size);
  begin_ += used;
  return true;
}

// Moves the line begun to the buffer's start and reads behind it.
void LineReader::fill() {
  std::memmove(buffer_.get(), data_ + begin_, end_ - begin_);
  end_ -= begin_;
  begin_ = 0;
  for (;;) {
    const ssize_t n = ::read(fd_, buffer_.get() + end_, kMaxLine + 1 - end_);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw UsageError(name_ + ": cannot read: " + std::strerror(errno));
    at_end_ = n == 0;
    end_ += static_cast<size_t>(n);
    return;
  }
}

void LineReader::fail(const std::string& what) const {
  throw UsageError(name_ + ":" + std::to_string(number_) + ": " + what);
}

namespace {

// What tells two names of one file apart from two files: "inode DEV:INO" for a regular file, "name REALPATH" for
// one not yet made (where a dangling symbolic link points, if it is one), "" for what no output can overwrite.
std::string file_identity(const std::string& path, int links = 0) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0)
    return S_ISREG(st.st_mode) ? "inode " + std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino) : "";
  if (errno != ENOENT || links > 8) return "";
  const size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : path.substr(0, slash + 1);
  char target[PATH_MAX];
  if (const ssize_t n = ::readlink(path.c_str(), target, sizeof target); n > 0 && n < PATH_MAX) {
    const std::string to(target, static_cast<size_t>(n));
    return file_identity(to[0] == '/' ? to : dir + "/" + to, links + 1);
  }
  std::unique_ptr<char, decltype(&std::free)> real(::realpath(dir.c_str(), nullptr), &std::free);
  return real ? "name " + std::string(real.get()) + "/" + path.substr(slash + 1) : "";
}

}  // namespace

void check_outputs(const std::vector<NamedFile>& files) {
  std::vector<std::pair<std::string, const NamedFile*>> seen;  // identity, file
  for (const NamedFile& f : files)
    if (std::string id = f.output ? "" : file_identity(f.path); id.rfind("inode ", 0) == 0)
      seen.emplace_back(std::move(id), &f);
  for (const NamedFile& f : files) {
    if (!f.output) continue;
    std::string id = file_identity(f.path);
    if (id.empty()) continue;
    for (const auto& [other_id, other] : seen)
      if (other_id == id)
        throw UsageError(f.named + " '" + f.path + "' names " +
                         (other->output ? "the same file as " + other->named + ": each output needs a file of its own"
                                        : other->named + ": the output would overwrite it"));
    seen.emplace_back(std::move(id), &f);
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
  std::cerr << (speaker_.empty() ? program_invocation_short_name : speaker_.c_str()) << ": " << what_
            << ": write failed (" << why_ << "): nothing more is written to it; the command runs on\n";
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
