#include "capture/pcapng.hh"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "util/error.hh"

namespace tracemod {
namespace {

constexpr uint32_t kSectionHeader = 0x0A0D0D0A, kInterface = 1, kEnhancedPacket = 6;
constexpr uint16_t kOptEnd = 0, kOptComment = 1;
constexpr uint16_t kShbUserAppl = 4;
constexpr uint16_t kIfName = 2, kIfDescription = 3, kIfTsresol = 9;
constexpr uint16_t kEpbFlags = 2;
constexpr uint16_t kLinktypeEthernet = 1;
constexpr size_t kFlushAt = 256 * 1024;

size_t padded(size_t n) {
  return (n + 3) & ~size_t{3};
}

// PATH opened for writing, created if need be (CREATED says so), its contents left until start().
FileDescriptor open_for_writing(const std::string& option, const std::string& path, bool& created) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  created = fd >= 0;
  if (fd < 0 && errno == EEXIST) fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) throw UsageError(option + " " + path + ": cannot open for writing: " + std::strerror(errno));
  return FileDescriptor(fd);
}

}  // namespace

PcapngWriter::PcapngWriter(const std::string& option, const std::string& path)
    : option_(option),
      path_(path),
      file_(option + " " + path, "pcapng blocks", open_for_writing(option, path, created_)),
      buf_(kFlushAt * 2) {}

// A device or a pipe (EINVAL) has nothing to empty.
void PcapngWriter::start() {
  if (ftruncate(file_.fd(), 0) < 0 && errno != EINVAL)
    throw UsageError(option_ + " " + path_ + ": cannot empty it: " + std::strerror(errno));
}

void PcapngWriter::discard() {
  if (created_) unlink(path_.c_str());
  created_ = false;
}

PcapngWriter::~PcapngWriter() {
  flush();
}

// Makes room for a block of up to N bytes before it is begun, writing out what is buffered if need be, so
// that pointers into the block stay valid while it is assembled.
void PcapngWriter::room(size_t n) {
  if (used_ + n > buf_.size()) flush();
  if (used_ + n > buf_.size()) buf_.resize(used_ + n);
}

uint8_t* PcapngWriter::grow(size_t n) {
  if (used_ + n > buf_.size()) buf_.resize(used_ + n);  // only for a block larger than room() was told
  uint8_t* p = buf_.data() + used_;
  used_ += n;
  return p;
}

void PcapngWriter::u32(uint32_t v) {
  std::memcpy(grow(4), &v, 4);
}

void PcapngWriter::option(uint16_t code, const void* value, uint16_t size) {
  uint8_t* p = grow(4 + padded(size));
  std::memcpy(p, &code, 2);
  std::memcpy(p + 2, &size, 2);
  if (size) std::memcpy(p + 4, value, size);  // opt_endofopt has no value: memcpy from null is undefined
  std::memset(p + 4 + size, 0, padded(size) - size);
}

// Fills in the block's length at both ends; writes out the buffer once it holds enough.
void PcapngWriter::end_block(size_t start) {
  const uint32_t length = static_cast<uint32_t>(used_ - start + 4);
  std::memcpy(buf_.data() + start + 4, &length, 4);
  u32(length);
  ends_.push_back(used_);
  if (used_ >= kFlushAt) flush();
}

void PcapngWriter::section(const std::string& application, const std::vector<std::string>& comments) {
  size_t size = 64 + application.size();
  for (const std::string& c : comments) size += 8 + c.size();
  room(size);
  const size_t start = used_;
  uint8_t* p = grow(24);
  const uint32_t head[3] = {kSectionHeader, 0, 0x1A2B3C4D};
  const uint16_t version[2] = {1, 0};
  const int64_t section_length = -1;  // not given
  std::memcpy(p, head, 12);
  std::memcpy(p + 12, version, 4);
  std::memcpy(p + 16, &section_length, 8);
  option(kShbUserAppl, application);
  for (const std::string& c : comments) option(kOptComment, c);
  option(kOptEnd, nullptr, 0);
  end_block(start);
}

void PcapngWriter::interface(const std::string& name, const std::string& description, uint32_t snaplen) {
  room(64 + name.size() + description.size());
  const size_t start = used_;
  uint8_t* p = grow(16);
  const uint32_t head[2] = {kInterface, 0};
  const uint16_t link[2] = {kLinktypeEthernet, 0};
  std::memcpy(p, head, 8);
  std::memcpy(p + 8, link, 4);
  std::memcpy(p + 12, &snaplen, 4);
  option(kIfName, name);
  option(kIfDescription, description);
  const uint8_t nanoseconds = 9;  // timestamps in units of 10^-9 s
  option(kIfTsresol, &nanoseconds, 1);
  option(kOptEnd, nullptr, 0);
  end_block(start);
}

// A packet block is written in two pieces, header and data, then options and trailer, each with one grow():
// it is the one block written per frame.
uint8_t* PcapngWriter::begin_packet(uint32_t iface, int64_t time, uint32_t data_size, uint32_t wire_size,
                                    size_t comment_size) {
  room(48 + padded(data_size) + padded(comment_size));
  block_ = used_;
  uint8_t* p = grow(28 + padded(data_size));
  const uint64_t t = static_cast<uint64_t>(time);
  const uint32_t head[7] = {kEnhancedPacket,          0,         iface,    static_cast<uint32_t>(t >> 32),
                            static_cast<uint32_t>(t), data_size, wire_size};
  std::memcpy(p, head, sizeof head);
  std::memset(p + 28 + data_size, 0, padded(data_size) - data_size);
  return p + 28;
}

void PcapngWriter::end_packet(Direction dir, const std::string& comment) {
  const bool flags = dir != kUnknown, any = flags || !comment.empty();
  const size_t options = (flags ? 8 : 0) + (comment.empty() ? 0 : 4 + padded(comment.size())) + (any ? 4 : 0);
  uint8_t* p = grow(options + 4);
  if (flags) {
    const uint32_t o[2] = {kEpbFlags | 4u << 16, dir};  // code, length 4, value
    std::memcpy(p, o, 8);
    p += 8;
  }
  if (!comment.empty()) {
    const uint16_t head[2] = {kOptComment, static_cast<uint16_t>(comment.size())};
    std::memcpy(p, head, 4);
    std::memcpy(p + 4, comment.data(), comment.size());
    std::memset(p + 4 + comment.size(), 0, padded(comment.size()) - comment.size());
    p += 4 + padded(comment.size());
  }
  if (any) std::memset(p, 0, 4), p += 4;  // opt_endofopt
  const uint32_t length = static_cast<uint32_t>(used_ - block_);
  std::memcpy(p, &length, 4);
  std::memcpy(buf_.data() + block_ + 4, &length, 4);
  ends_.push_back(used_);
  if (used_ >= kFlushAt) flush();
}

void PcapngWriter::packet(uint32_t iface, int64_t time, const uint8_t* data, uint32_t data_size, uint32_t wire_size,
                          Direction dir, const std::string& comment) {
  std::memcpy(begin_packet(iface, time, data_size, wire_size, comment.size()), data, data_size);
  end_packet(dir, comment);
}

void PcapngWriter::flush() {
  if (used_ == 0) return;
  file_.write(reinterpret_cast<const char*>(buf_.data()), used_, ends_);
  used_ = 0;
  ends_.clear();
}

std::string PcapngWriter::loss_line() {
  flush();
  return file_.loss_line();
}

}  // namespace tracemod
