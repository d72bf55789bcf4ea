#include "capture/capture.hh"

#include <time.h>

#include <algorithm>
#include <cstring>
#include <utility>

#include "config.h"
#include "packet/ferry.hh"
#include "packet/segmenter.hh"
#include "util/error.hh"

namespace tracemod {
namespace {

constexpr Nanos kFlushEvery = 1000 * kMillisecond;
const char* const kDirectionNames[2] = {"uplink", "downlink"};

// The one's-complement sum a NIC completes for CHECKSUM_PARTIAL: the field at START + OFFSET holds the
// pseudo-header sum; the rest of the segment from START is added to it.
void complete_checksum(uint8_t* f, uint32_t size, uint32_t start, uint32_t offset) {
  if (start + offset + 2 > size) return;
  uint32_t sum = 0;
  for (uint32_t i = start; i + 1 < size; i += 2) sum += static_cast<uint32_t>(f[i] << 8 | f[i + 1]);
  if ((size - start) & 1) sum += static_cast<uint32_t>(f[size - 1]) << 8;
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  uint16_t c = static_cast<uint16_t>(~sum);
  if (c == 0 && offset == 6) c = 0xffff;  // UDP: zero means "no checksum"
  f[start + offset] = static_cast<uint8_t>(c >> 8);
  f[start + offset + 1] = static_cast<uint8_t>(c);
}

Nanos realtime_minus_monotonic() {
  timespec m, r;
  clock_gettime(CLOCK_MONOTONIC, &m);
  clock_gettime(CLOCK_REALTIME, &r);
  return (static_cast<Nanos>(r.tv_sec) - m.tv_sec) * 1000000000 + (r.tv_nsec - m.tv_nsec);
}

}  // namespace

void DirectionCapture::write(PcapngWriter& w, const Packet& p, Nanos t, const std::string& comment) {
  const int64_t time = t + realtime_offset_;
  const uint32_t cap = snaplen_ ? snaplen_ : LinkCapture::kMaxSnaplen;
  const virtio_net_hdr& vnet = p.vnet();
  const bool partial = vnet.flags & VIRTIO_NET_HDR_F_NEEDS_CSUM;
  const bool split = p.is_gso() && view_segments(p, [&](const SegmentView& v) {
                       const uint32_t wire = v.header_size + v.payload_size, kept = std::min(cap, wire);
                       uint8_t* d = w.begin_packet(iface_, time, kept, wire, comment.size());
                       std::memcpy(d, v.headers, std::min(kept, v.header_size));
                       if (kept > v.header_size) std::memcpy(d + v.header_size, v.payload, kept - v.header_size);
                       if (partial && kept == wire) complete_checksum(d, kept, vnet.csum_start, vnet.csum_offset);
                       w.end_packet(dir_, comment);
                     });
  if (split) return;
  const uint32_t wire = p.frame_size(), kept = std::min(cap, wire);
  uint8_t* d = w.begin_packet(iface_, time, kept, wire, comment.size());
  std::memcpy(d, p.frame(), kept);
  if (partial && kept == wire) complete_checksum(d, kept, vnet.csum_start, vnet.csum_offset);
  w.end_packet(dir_, comment);
}

std::string LinkCapture::drops_path(const std::string& path) {
  const size_t slash = path.rfind('/'), dot = path.rfind('.');
  const bool extension = dot != std::string::npos && dot > (slash == std::string::npos ? 0 : slash + 1);
  return extension ? path.substr(0, dot) + ".drops" + path.substr(dot) : path + ".drops";
}

void LinkCapture::check(const Options& o) {
  if (!o.both.empty() && (!o.uplink.empty() || !o.downlink.empty()))
    throw UsageError(std::string("--pcap and --") + (o.uplink.empty() ? "downlink" : "uplink") +
                     "-pcap both capture the " + (o.uplink.empty() ? "downlink" : "uplink") + ": give one of them");
  if (!o.uplink.empty() && o.uplink == o.downlink)
    throw UsageError("--uplink-pcap and --downlink-pcap name the same file: use --pcap FILE for both directions");
}

LinkCapture::LinkCapture(const Options& o) : snaplen_(o.snaplen) {
  check(o);
  try {
    if (!o.both.empty()) add_file("--pcap", o.both, {0, 1});
    if (!o.uplink.empty()) add_file("--uplink-pcap", o.uplink, {0});
    if (!o.downlink.empty()) add_file("--downlink-pcap", o.downlink, {1});
  } catch (const UsageError&) {
    for (File& f : files_)
      for (PcapngWriter* w : {f.passed.get(), f.drops.get()})
        if (w) w->discard();
    throw;
  }
  for (File& f : files_) {
    f.passed->start();
    f.drops->start();
  }
}

LinkCapture::~LinkCapture() = default;

void LinkCapture::add_file(const std::string& option, const std::string& path, std::vector<int> directions) {
  files_.emplace_back();
  File& f = files_.back();
  f.option = option;
  f.passed = std::make_unique<PcapngWriter>(option, path);
  f.drops = std::make_unique<PcapngWriter>(option, drops_path(path));
  for (uint32_t i = 0; i < directions.size(); ++i) {
    DirectionCapture& c = dirs_[directions[i]];
    c.passed_ = f.passed.get();
    c.drops_ = f.drops.get();
    c.iface_ = i;
    captured_[directions[i]] = true;
  }
  f.directions = std::move(directions);
}

void LinkCapture::attach(const std::string& tool, const std::string& command_line,
                         const std::vector<std::string>& facts, Ferry& ferry, PacketQueue& up, PacketQueue& down) {
  std::vector<std::string> comments = {"command line: " + command_line};
  comments.insert(comments.end(), facts.begin(), facts.end());
  start(tool, comments);
  up.set_drop_observer(direction(Ferry::kUplink));
  down.set_drop_observer(direction(Ferry::kDownlink));
  ferry.set_capture(this);
}

void LinkCapture::start(const std::string& tool, const std::vector<std::string>& facts) {
  const Nanos offset = realtime_minus_monotonic();
  std::vector<std::string> comments = facts;
  comments.push_back("timestamps: when each frame left its queue, in CLOCK_MONOTONIC ns + " + std::to_string(offset) +
                     " (CLOCK_REALTIME - CLOCK_MONOTONIC when the shell started)");
  const std::string app = tool + " (" PACKAGE_NAME ") " PACKAGE_VERSION;
  for (File& f : files_) {
    std::vector<std::string> passed = comments, drops = comments;
    passed.insert(passed.begin(), "the frames that crossed the link (drops: " + drops_path(f.passed->path()) + ")");
    drops.insert(drops.begin(), "the frames the link's queues dropped (the rest: " + f.passed->path() + ")");
    f.passed->section(app, passed);
    f.drops->section(app, drops);
    for (int d : f.directions) {
      const std::string name = kDirectionNames[d];
      const std::string what = d == 0 ? "from the command outward" : "toward the command";
      f.passed->interface(name, tool + " " + name + ": " + what, snaplen_);
      f.drops->interface(name + "-drops", tool + " " + name + ": dropped " + what, snaplen_);
    }
  }
  for (int d : {0, 1}) {
    DirectionCapture& c = dirs_[d];
    c.dir_ = d == 0 ? PcapngWriter::kOutbound : PcapngWriter::kInbound;
    c.snaplen_ = snaplen_;
    c.realtime_offset_ = offset;
    c.drop_comment_ = std::string("dropped by the ") + kDirectionNames[d] + " queue";
  }
}

Nanos LinkCapture::flush_due() const {
  for (const File& f : files_)
    if (f.passed->buffered() || f.drops->buffered()) return last_flush_ + kFlushEvery;
  return kNever;
}

void LinkCapture::flush(Nanos now) {
  for (File& f : files_) {
    f.passed->flush();
    f.drops->flush();
  }
  last_flush_ = now;
}

std::vector<std::string> LinkCapture::finish() {
  std::vector<std::string> losses;
  for (File& f : files_)
    for (PcapngWriter* w : {f.passed.get(), f.drops.get()})
      if (std::string line = w->loss_line(); !line.empty()) losses.push_back(std::move(line));
  return losses;
}

}  // namespace tracemod
