// A pcapng file writer (https://www.ietf.org/archive/id/draft-ietf-opsawg-pcapng-02.html), enough for what
// tcpdump, tshark and Wireshark read: one section, Ethernet interfaces with nanosecond timestamps, and Enhanced
// Packet Blocks with direction flags and comments. Blocks are assembled in a buffer and written in large
// pieces: no system call per packet.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "util/file_descriptor.hh"

namespace tracemod {

class PcapngWriter {
 public:
  enum Direction : uint32_t { kUnknown = 0, kInbound = 1, kOutbound = 2 };  // epb_flags bits 0-1

  // Opens PATH for writing, creating it (as the calling user, mode 0666 less the umask) if it does not exist,
  // but leaves its contents until start() (so a failure to open another file can leave things as they were).
  // Throws UsageError("OPTION PATH: cannot open for writing: why").
  PcapngWriter(const std::string& option, const std::string& path);
  // Empties the file: what is written from now on is all it holds.
  void start();
  // Removes the file if this writer created it (after another could not be opened).
  void discard();
  ~PcapngWriter();  // writes what is buffered
  PcapngWriter(const PcapngWriter&) = delete;
  PcapngWriter& operator=(const PcapngWriter&) = delete;

  // The section header: APPLICATION (shb_userappl) and one comment per line of COMMENTS.
  void section(const std::string& application, const std::vector<std::string>& comments);
  // An Ethernet interface capturing SNAPLEN bytes per frame (0: no limit); interfaces are numbered from 0 in
  // the order they are declared.
  void interface(const std::string& name, const std::string& description, uint32_t snaplen);
  // A frame that was WIRE_SIZE bytes long, of which the first DATA_SIZE are recorded, at TIME ns since
  // 1970 (UTC), on interface IFACE. COMMENT may be empty.
  void packet(uint32_t iface, int64_t time, const uint8_t* data, uint32_t data_size, uint32_t wire_size, Direction dir,
              const std::string& comment = {});
  // The same, for a frame assembled in place: begin_packet() returns where its DATA_SIZE bytes go (COMMENT_SIZE:
  // the size of the comment end_packet() will be given), end_packet() completes the block.
  uint8_t* begin_packet(uint32_t iface, int64_t time, uint32_t data_size, uint32_t wire_size, size_t comment_size);
  void end_packet(Direction dir, const std::string& comment = {});

  // Writes what is buffered (called between blocks). A write that fails (a full disk) is said once, the file
  // keeps its whole blocks and nothing more is written: see RecordFile.
  void flush();
  bool buffered() const { return used_ > 0; }
  // "OPTION PATH: N pcapng blocks (B bytes) not written (why)", or "" if all were. Flushes first.
  std::string loss_line();
  const std::string& path() const { return path_; }

 private:
  void room(size_t n);
  uint8_t* grow(size_t n);
  void u32(uint32_t v);
  void option(uint16_t code, const void* value, uint16_t size);
  void option(uint16_t code, const std::string& value) {
    option(code, value.data(), static_cast<uint16_t>(value.size()));
  }
  void end_block(size_t start);

  std::string option_, path_;
  bool created_ = false;
  RecordFile file_;
  std::vector<uint8_t> buf_;  // its size is its capacity; the first used_ bytes hold blocks
  size_t used_ = 0;
  size_t block_ = 0;         // where the packet block being assembled starts
  std::vector<size_t> ends_;  // where each block in buf_ ends: a failed write keeps whole blocks only
};

}  // namespace tracemod
