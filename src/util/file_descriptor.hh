// The one owner of a kernel file descriptor (moves, never copies, closes exactly once), and the files built on
// it: the user's files opened for reading (regular files only) and read a line at a time, the check that no
// output overwrites an input or another output, whole small files read, and the record files a shell writes for
// its whole run.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "util/clock.hh"

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

// PATH created, or emptied, for writing (mode 0666 less the umask); throws UsageError("PATH: cannot open for
// writing: why"): the path is the user's.
FileDescriptor create_for_writing(const std::string& path);

// Reads a whole small file (e.g. under /proc); throws on error.
std::string read_file(const std::string& path);

// PATH opened for reading, which must be a regular file: a FIFO blocks its reader (its open too) until something
// writes to it and a device such as /dev/zero never ends, so either would hang a tool without a word. Throws
// UsageError("PATH: cannot open: why") or ("PATH: not a regular file (a FIFO)"); HINT, if given, is said in the
// parentheses instead of what the file is.
FileDescriptor open_regular(const std::string& path, const std::string& hint = "");

// The one reader of the user's text files a line at a time (traces, schedules, distributions, link logs...):
// through one buffer of kMaxLine + 1 bytes, so a file with a gigantic line (2 GB of NULs) is refused once its
// first MiB is read, in one line, rather than read whole into memory. A last line without a newline is a line.
class LineReader {
 public:
  static constexpr size_t kMaxLine = (1 << 20) - 1;  // bytes of a line, its newline not counted

  // The regular file at PATH (open_regular), named PATH in errors.
  explicit LineReader(const std::string& path);
  // FD, which stays the caller's (standard input), named NAME.
  LineReader(int fd, std::string name);
  // TEXT, which must outlive the reader, read as a file holding it would be, named NAME.
  static LineReader of_text(std::string_view text, std::string name);

  // The next line without its newline, valid until the next call; false at the end. Throws
  // UsageError("NAME:N: a line of more than 1048575 bytes") or ("NAME: cannot read: why").
  bool next(std::string_view& line);
  uint64_t line_number() const { return number_; }  // of the line next() returned last
  const std::string& name() const { return name_; }
  // Throws UsageError("NAME:N: WHAT"), N the line next() returned last.
  [[noreturn]] void fail(const std::string& what) const;

 private:
  bool take(std::string_view& line, size_t size, size_t used);
  void fill();

  std::string name_;
  FileDescriptor owned_;
  int fd_ = -1;                     // -1: all of the text is in memory
  std::unique_ptr<char[]> buffer_;  // kMaxLine + 1 bytes, for a file
  const char* data_ = nullptr;      // the buffer, or the text
  size_t begin_ = 0, end_ = 0;      // what data_ holds that is not yet returned
  bool at_end_ = false;             // nothing more to read after end_
  uint64_t number_ = 0;
};

// A file a command line names: an input it reads or an output it writes, and how errors call it ("--uplink-log",
// "the uplink trace").
struct NamedFile {
  std::string named, path;
  bool output = false;
};

// Refuses, before any of FILES is opened, an output that is an input (it would be emptied before or while it is
// read) or another output (one of them lost): "OUTPUT 'PATH' names INPUT: the output would overwrite it", or
// "... names the same file as OUTPUT: each output needs a file of its own" (UsageError). Files are compared by
// device and inode where they exist, by the name their real directory gives them where they do not yet (two
// names of one output still to be made); what no output can overwrite (a device, a FIFO, a missing input) is let
// be.
void check_outputs(const std::vector<NamedFile>& files);

// A file a shell writes records to for the whole of its run (a link log's lines, a capture's pcapng blocks),
// honest about a write that fails. When the disk fills while the command runs, the shell must neither stop the
// command's traffic nor leave a file that looks whole but is short. So:
// - only whole records reach the file: a record the failing write cut is truncated away again, so the file
//   stays readable (every line of a log, every block of a capture whole) up to the failure;
// - the failure is said at once, in one line on stderr naming the file, and nothing more is written to it (a
//   file that went on after space came back would have a hole in its middle and read as whole);
// - the records not written are counted: loss_line() says how many and why, for the shell's exit.
class RecordFile {
 public:
  // WHAT names the file in messages ("--uplink-log up.log"), NOUN its records ("log lines"). FD is open for
  // writing at the file's start.
  RecordFile(std::string what, std::string noun, FileDescriptor fd);
  ~RecordFile();  // writes what is buffered; says nothing more (loss_line() is the report)
  RecordFile(const RecordFile&) = delete;
  RecordFile& operator=(const RecordFile&) = delete;

  // Records assembled here: append bytes, end_record() after each record; written in pieces of kFlushAt.
  void append(const char* data, size_t size) { buffer_.append(data, size); }
  void append(char c) { buffer_.push_back(c); }
  void appendf(const char* format, ...) __attribute__((format(printf, 2, 3)));
  void end_record();
  void flush();
  bool pending() const { return !ends_.empty(); }  // whole records not yet written

  // Writes the whole records in DATA, records assembled elsewhere: ENDS holds where each ends (offsets into
  // DATA, ascending, the last SIZE). Anything buffered here goes first.
  void write(const char* data, size_t size, const std::vector<size_t>& ends);

  bool failed() const { return !why_.empty(); }
  // "WHAT: N NOUN (B bytes) not written (WHY)", or "" if every record was written. Flushes first.
  std::string loss_line();
  uint64_t lost_records() const { return lost_records_; }
  uint64_t lost_bytes() const { return lost_bytes_; }
  int fd() const { return fd_.get(); }
  const std::string& what() const { return what_; }
  // Who says the failure (default: this program): a fused shell's log, written by the ferry of the shell above
  // it, is said by the tool whose option named it, as it is unfused.
  void set_speaker(std::string tool) { speaker_ = std::move(tool); }

  static constexpr size_t kFlushAt = 1 << 20;

 private:
  void write_out(const char* data, size_t size, const std::vector<size_t>& ends);
  void fail(const std::string& why, size_t written, size_t size, const std::vector<size_t>& ends);

  std::string what_, noun_, speaker_;
  FileDescriptor fd_;
  std::string buffer_;
  std::vector<size_t> ends_;  // where each record in buffer_ ends
  uint64_t offset_ = 0;       // the file's size: whole records written
  std::string why_;           // empty until a write fails
  uint64_t lost_records_ = 0, lost_bytes_ = 0;
};

// Keeps a record file current for a part that is given the time and never reads the clock (a queue): whole
// records reach the file within kEvery of their making, so a log can be read (tm-graph, tail -f) while the shell
// runs and a SIGKILL loses at most that much. Call at(now) whenever the part runs; wake it by due().
class KeepCurrent {
 public:
  static constexpr Nanos kEvery = 1000 * kMillisecond;
  explicit KeepCurrent(std::shared_ptr<RecordFile> file) : file_(std::move(file)) {}
  void at(Nanos now);
  Nanos due() const { return due_; }

 private:
  std::shared_ptr<RecordFile> file_;  // null: nothing to keep
  Nanos due_ = kNever;                // when the records now pending are written
};

}  // namespace tracemod
