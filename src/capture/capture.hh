// --pcap, --uplink-pcap, --downlink-pcap: the frames that crossed the link, in pcapng, as the peer on the far
// side saw them, and beside that file (FILE.drops.pcapng) the frames a queue dropped.
//
// - A frame is stamped with the time it left its queue: the release time the queue gave it (arrival + delay
//   for tm-delay; for tm-link the delivery opportunity that carried its last byte, the departure time of its
//   link log; the arrival itself for a queue that delays nothing), not the moment the ferry then handed it
//   to the kernel (microseconds later). A dropped frame is stamped with the time of the drop.
// - Times are CLOCK_MONOTONIC shifted by one constant, CLOCK_REALTIME - CLOCK_MONOTONIC when the shell
//   started, written in the section header: wall-clock times for a reader, and link logs (milliseconds of
//   CLOCK_MONOTONIC) line up with them by subtracting it.
// - A GSO super-frame is written as the wire packets it stands for (headers made as segmenter.cc makes them),
//   so a reader sees the sequence numbers, lengths and packet count a wire would carry.
// - Only the first SNAPLEN bytes of each frame are kept (default 128: the headers). The L4 checksum of a frame
//   kept whole is completed as a NIC would; in a truncated frame it is the partial sum the kernel left.
// - ARP and neighbour discovery cross the emulated Ethernet link and are captured with the rest.
#pragma once

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "capture/pcapng.hh"
#include "packet/packet_queue.hh"

namespace tracemod {

// One direction of a capture. The ferry tells it of each frame leaving the queue; the queue, of each drop.
class DirectionCapture final : public DropObserver, public DepartureObserver {
 public:
  void departed(const Packet& p) override { write(*passed_, p, std::max(p.release, p.arrival), {}); }
  void dropped(const Packet& p, Nanos now) override { write(*drops_, p, now, drop_comment_); }

 private:
  friend class LinkCapture;
  void write(PcapngWriter& w, const Packet& p, Nanos t, const std::string& comment);

  PcapngWriter *passed_ = nullptr, *drops_ = nullptr;
  uint32_t iface_ = 0;
  PcapngWriter::Direction dir_ = PcapngWriter::kUnknown;
  uint32_t snaplen_ = 0;
  Nanos realtime_offset_ = 0;
  std::string drop_comment_;
};

class Ferry;

class LinkCapture final : public FerryObserver {
 public:
  static constexpr uint32_t kDefaultSnaplen = 128;
  static constexpr uint32_t kMaxSnaplen = 262144;  // tcpdump's "whole frame"

  struct Options {
    std::string both, uplink, downlink;  // paths as given; empty: not captured
    uint32_t snaplen = kDefaultSnaplen;  // 0: whole frames
  };
  // Throws UsageError naming the options of a bad combination (a direction captured twice).
  static void check(const Options& o);
  // Creates the files now, as the calling user, before any namespace is entered. Throws UsageError naming
  // the option for a bad combination (check) or a file that cannot be created.
  explicit LinkCapture(const Options& o);
  ~LinkCapture();
  LinkCapture(const LinkCapture&) = delete;
  LinkCapture& operator=(const LinkCapture&) = delete;

  // The drops file beside PATH: "x.pcapng" -> "x.drops.pcapng", "x" -> "x.drops".
  static std::string drops_path(const std::string& path);

  // Writes the headers (the tool; the command line and FACTS such as the seed, as comments) and shows the
  // capture the frames FERRY sends and those the queues UP and DOWN drop.
  void attach(const std::string& tool, const std::string& command_line, const std::vector<std::string>& facts,
              Ferry& ferry, PacketQueue& up, PacketQueue& down);
  // Writes the headers only: the tool, and COMMENTS (attach does this).
  void start(const std::string& tool, const std::vector<std::string>& comments);
  // Direction D's capture (0 uplink, 1 downlink), or null if it is not captured.
  DirectionCapture* direction(int d) override { return captured_[d] ? &dirs_[d] : nullptr; }
  // Buffered frames are written at least every kFlushEvery: when, or kNever if nothing waits.
  Nanos flush_due() const override;
  void flush(Nanos now) override;
  // Writes everything; returns one line per file that could not be written in full, saying what was lost
  // (empty if nothing was).
  std::vector<std::string> finish();

 private:
  struct File {
    std::string option;
    std::unique_ptr<PcapngWriter> passed, drops;
    std::vector<int> directions;
  };
  void add_file(const std::string& option, const std::string& path, std::vector<int> directions);

  std::vector<File> files_;
  DirectionCapture dirs_[2];
  bool captured_[2] = {false, false};
  uint32_t snaplen_;
  Nanos last_flush_ = 0;
};

}  // namespace tracemod
