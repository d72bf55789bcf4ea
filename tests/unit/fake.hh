// Test helpers: frames built byte by byte (plain IPv4/IPv6 UDP/TCP, and TCP/UDP GSO super-frames), an
// independent Internet checksum, a PacketSink that keeps what it is handed, and scratch files.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "packet/buffer_pool.hh"
#include "packet/packet.hh"
#include "packet/packet_queue.hh"

namespace tracemod {
namespace fake {

// A file NAME holding TEXT, in a directory of this process's own that is removed at exit. Not a fixed path in
// /tmp: a run as another user (the suite runs as root) leaves a file there that this run cannot overwrite.
inline std::string scratch_file(const std::string& name, const std::string& text) {
  static const struct Dir {
    std::string path;
    Dir() {
      char tmpl[] = "/tmp/tm-unit-tests.XXXXXX";
      if (!mkdtemp(tmpl)) throw std::runtime_error("mkdtemp in /tmp failed");
      path = tmpl;
    }
    ~Dir() { std::filesystem::remove_all(path); }
  } dir;
  const std::string path = dir.path + "/" + name;
  std::ofstream(path) << text;
  return path;
}

// A temporary directory of the test's own, removed with what is in it.
// The whole of the file at PATH ("" if it cannot be read).
// COMMAND's standard output, run by the shell (its standard error goes to the test's).
inline std::string output_of(const std::string& command) {
  std::string out;
  FILE* p = popen(command.c_str(), "r");
  if (!p) return out;
  char buf[65536];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  pclose(p);
  return out;
}

// Skips the test where a client it drives is missing (scripts/install-deps installs them; a package build may
// lack them).
#define TM_NEEDS_TOOL(tool) \
  if (std::system("command -v " tool " >/dev/null 2>&1") != 0) GTEST_SKIP() << tool " is not installed"

inline std::string contents(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/tm-unit-test.XXXXXX";
    if (!mkdtemp(tmpl)) throw std::runtime_error("mkdtemp in /tmp failed");
    path_ = tmpl;
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

constexpr uint8_t kTcp = 6, kUdp = 17;
constexpr uint8_t kFin = 0x01, kSyn = 0x02, kPsh = 0x08, kAck = 0x10, kCwr = 0x80;

// Big-endian field access on raw frames.
inline uint16_t rd16(const uint8_t* p) {
  return static_cast<uint16_t>((p[0] << 8) | p[1]);
}
inline uint32_t rd32(const uint8_t* p) {
  return (static_cast<uint32_t>(p[0]) << 24) | (static_cast<uint32_t>(p[1]) << 16) |
         (static_cast<uint32_t>(p[2]) << 8) | p[3];
}
inline void wr16(uint8_t* p, uint32_t v) {
  p[0] = static_cast<uint8_t>(v >> 8);
  p[1] = static_cast<uint8_t>(v);
}
inline void wr32(uint8_t* p, uint32_t v) {
  wr16(p, v >> 16);
  wr16(p + 2, v & 0xffff);
}

// RFC 1071 ones'-complement arithmetic, written independently of segmenter.cc.
inline uint64_t add_words(const uint8_t* p, size_t n, uint64_t acc = 0) {
  for (size_t i = 0; i < n; ++i) acc += (i % 2 == 0) ? static_cast<uint64_t>(p[i]) << 8 : p[i];
  return acc;
}
inline uint16_t fold16(uint64_t acc) {
  while (acc > 0xffff) acc = (acc & 0xffff) + (acc >> 16);
  return static_cast<uint16_t>(acc);
}
inline uint16_t inet_checksum(const uint8_t* p, size_t n) {
  return static_cast<uint16_t>(~fold16(add_words(p, n)));
}

// What a frame looks like, and where its layers start (offsets into the Ethernet frame).
struct FrameSpec {
  bool v6 = false;
  uint8_t proto = kUdp;
  uint32_t payload = 100;  // L4 payload bytes
  uint16_t gso_size = 0;   // 0: a plain frame; otherwise a GSO super-frame with this MSS
  uint8_t gso_type = 0;    // 0: the natural one for v6/proto when gso_size != 0
  uint8_t tcp_flags = kAck | kPsh;
  uint32_t tcp_option_bytes = 0;  // multiple of 4 (e.g. 12 for timestamps)
  uint32_t seq = 1000;
  uint16_t ip_id = 0x1234;
  uint8_t pattern = 0;  // payload byte i is payload_byte(i, pattern)
  Nanos arrival = 0;
};

inline uint8_t payload_byte(uint32_t i, uint8_t pattern) {
  return static_cast<uint8_t>(i * 31u + (i >> 8) * 7u + pattern);
}

inline uint32_t l3_offset() {
  return kEthernetHeaderSize;
}
inline uint32_t l4_offset(const FrameSpec& s) {
  return kEthernetHeaderSize + (s.v6 ? 40 : 20);
}
inline uint32_t l4_header_size(const FrameSpec& s) {
  return s.proto == kTcp ? 20 + s.tcp_option_bytes : 8;
}
inline uint32_t payload_offset(const FrameSpec& s) {
  return l4_offset(s) + l4_header_size(s);
}

inline constexpr uint8_t kSrc4[4] = {10, 200, 3, 7}, kDst4[4] = {192, 168, 251, 42};
inline constexpr uint8_t kSrc6[16] = {0x20, 0x01, 0x0d, 0xb8, 0xab, 0xcd, 0, 0, 0, 0, 0, 0, 0x12, 0x34, 0xfe, 0x01};
inline constexpr uint8_t kDst6[16] = {0xfd, 0x74, 0x6d, 0x00, 0xff, 0xee, 0, 0, 0x99, 0x88, 0, 0, 0, 0, 0xbe, 0xef};

// The Ethernet frame bytes of SPEC (lengths as the kernel would leave them in a GSO frame: of the whole).
inline std::vector<uint8_t> frame_bytes(const FrameSpec& s) {
  const uint32_t l3 = l3_offset(), l4 = l4_offset(s), pay = payload_offset(s);
  std::vector<uint8_t> f(pay + s.payload, 0);
  const uint8_t dst_mac[6] = {0x02, 0x74, 0x6d, 0, 0, 2}, src_mac[6] = {0x02, 0x74, 0x6d, 0, 0, 1};
  std::memcpy(&f[0], dst_mac, 6);
  std::memcpy(&f[6], src_mac, 6);
  wr16(&f[12], s.v6 ? 0x86DD : 0x0800);
  const uint32_t l4_len = pay - l4 + s.payload;
  if (s.v6) {
    f[l3] = 0x60;
    wr16(&f[l3 + 4], l4_len > 0xffff ? 0 : l4_len);
    f[l3 + 6] = s.proto;
    f[l3 + 7] = 64;
    std::memcpy(&f[l3 + 8], kSrc6, 16);
    std::memcpy(&f[l3 + 24], kDst6, 16);
  } else {
    f[l3] = 0x45;
    wr16(&f[l3 + 2], 20 + l4_len > 0xffff ? 0 : 20 + l4_len);
    wr16(&f[l3 + 4], s.ip_id);
    wr16(&f[l3 + 6], 0x4000);  // DF
    f[l3 + 8] = 64;
    f[l3 + 9] = s.proto;
    std::memcpy(&f[l3 + 12], kSrc4, 4);
    std::memcpy(&f[l3 + 16], kDst4, 4);
    wr16(&f[l3 + 10], inet_checksum(&f[l3], 20));
  }
  if (s.proto == kTcp) {
    wr16(&f[l4], 40000);
    wr16(&f[l4 + 2], 443);
    wr32(&f[l4 + 4], s.seq);
    wr32(&f[l4 + 8], 0xa5a5a5a5);
    f[l4 + 12] = static_cast<uint8_t>(((20 + s.tcp_option_bytes) / 4) << 4);
    f[l4 + 13] = s.tcp_flags;
    wr16(&f[l4 + 14], 502);
    for (uint32_t i = 0; i < s.tcp_option_bytes; ++i) f[l4 + 20 + i] = static_cast<uint8_t>(i == 0 ? 1 : 0x40 + i);
  } else {
    wr16(&f[l4], 5353);
    wr16(&f[l4 + 2], 4433);
    wr16(&f[l4 + 4], l4_len > 0xffff ? 0 : l4_len);
  }
  for (uint32_t i = 0; i < s.payload; ++i) f[pay + i] = payload_byte(i, s.pattern);
  return f;
}

// A Packet from raw frame bytes and a virtio-net header.
inline Packet make_packet(BufferPool& pool, const std::vector<uint8_t>& frame, const virtio_net_hdr& h,
                          Nanos arrival = 0) {
  Packet p;
  p.size = static_cast<uint32_t>(kVnetHeaderSize + frame.size());
  p.buf = pool.get(p.size);
  std::memcpy(p.buf.data(), &h, sizeof h);
  std::memcpy(p.buf.data() + kVnetHeaderSize, frame.data(), frame.size());
  p.arrival = arrival;
  return p;
}

inline virtio_net_hdr vnet_for(const FrameSpec& s) {
  virtio_net_hdr h{};
  if (s.gso_size == 0) return h;
  h.flags = VIRTIO_NET_HDR_F_NEEDS_CSUM;
  h.gso_type = s.gso_type        ? s.gso_type
               : s.proto == kUdp ? VIRTIO_NET_HDR_GSO_UDP_L4
               : s.v6            ? VIRTIO_NET_HDR_GSO_TCPV6
                                 : VIRTIO_NET_HDR_GSO_TCPV4;
  h.gso_size = s.gso_size;
  h.hdr_len = static_cast<uint16_t>(payload_offset(s));
  h.csum_start = static_cast<uint16_t>(l4_offset(s));
  h.csum_offset = s.proto == kTcp ? 16 : 6;
  return h;
}

inline Packet make_frame(BufferPool& pool, const FrameSpec& s) {
  return make_packet(pool, frame_bytes(s), vnet_for(s), s.arrival);
}

// Shorthands.
inline Packet udp4(BufferPool& pool, uint32_t payload, Nanos arrival = 0, uint16_t ip_id = 0x1234) {
  FrameSpec s;
  s.payload = payload;
  s.arrival = arrival;
  s.ip_id = ip_id;
  return make_frame(pool, s);
}
inline Packet tcp_gso(BufferPool& pool, bool v6, uint16_t mss, uint32_t payload, Nanos arrival = 0) {
  FrameSpec s;
  s.v6 = v6;
  s.proto = kTcp;
  s.gso_size = mss;
  s.payload = payload;
  s.arrival = arrival;
  return make_frame(pool, s);
}
inline Packet udp_gso(BufferPool& pool, bool v6, uint16_t mss, uint32_t payload, Nanos arrival = 0) {
  FrameSpec s;
  s.v6 = v6;
  s.gso_size = mss;
  s.payload = payload;
  s.arrival = arrival;
  return make_frame(pool, s);
}

// The IPv4 ID of a plain or segmented IPv4 frame: tests use it as a packet's serial number.
inline uint16_t ip_id_of(const Packet& p) {
  return rd16(p.frame() + l3_offset() + 4);
}

// The full L4 checksum of an (unsegmented, non-GSO) frame, computed from scratch: pseudo-header, then the L4
// header with its checksum field taken as zero, then the payload.
inline uint16_t full_l4_checksum(const uint8_t* f, uint32_t frame_len) {
  const bool v6 = rd16(f + 12) == 0x86DD;
  const uint32_t l3 = kEthernetHeaderSize, l4 = l3 + (v6 ? 40 : (f[l3] & 0x0f) * 4u);
  const uint8_t proto = v6 ? f[l3 + 6] : f[l3 + 9];
  const uint32_t l4_len = frame_len - l4;
  std::vector<uint8_t> pseudo;
  if (v6) {
    pseudo.assign(f + l3 + 8, f + l3 + 40);
    const uint8_t tail[8] = {static_cast<uint8_t>(l4_len >> 24),
                             static_cast<uint8_t>(l4_len >> 16),
                             static_cast<uint8_t>(l4_len >> 8),
                             static_cast<uint8_t>(l4_len),
                             0,
                             0,
                             0,
                             proto};
    pseudo.insert(pseudo.end(), tail, tail + 8);
  } else {
    pseudo.assign(f + l3 + 12, f + l3 + 20);
    const uint8_t tail[4] = {0, proto, static_cast<uint8_t>(l4_len >> 8), static_cast<uint8_t>(l4_len)};
    pseudo.insert(pseudo.end(), tail, tail + 4);
  }
  std::vector<uint8_t> l4bytes(f + l4, f + frame_len);
  const uint32_t field = proto == kTcp ? 16 : 6;
  l4bytes[field] = l4bytes[field + 1] = 0;
  const uint64_t acc = add_words(l4bytes.data(), l4bytes.size(), add_words(pseudo.data(), pseudo.size()));
  return static_cast<uint16_t>(~fold16(acc));
}

// What a receiver (or NIC) does with a CHECKSUM_PARTIAL packet: sum from csum_start to the end of the frame,
// invert, store at csum_start + csum_offset. Returns the stored value.
inline uint16_t complete_partial_checksum(Packet& p) {
  const virtio_net_hdr& h = p.vnet();
  uint8_t* f = p.frame();
  const uint16_t c = inet_checksum(f + h.csum_start, p.frame_size() - h.csum_start);
  wr16(f + h.csum_start + h.csum_offset, c);
  return c;
}

// Keeps every packet a queue hands it.
class CollectSink : public PacketSink {
 public:
  void send(Packet&& p) override { got.push_back(std::move(p)); }
  std::vector<Packet> got;
};

// in == out + dropped + queued, with the numbers in the failure message.
inline ::testing::AssertionResult Conserved(const QueueStats& s) {
  if (s.in_packets == s.out_packets + s.dropped_packets + s.queued_packets) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "in=" << s.in_packets << " out=" << s.out_packets
                                       << " dropped=" << s.dropped_packets << " queued=" << s.queued_packets;
}

}  // namespace fake
}  // namespace tracemod
