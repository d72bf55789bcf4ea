// Writes the binary seeds of fuzz/corpus with the project's own writers, so the fuzz targets start from what
// the tools really write: tm-record's raw records (record::Recorder), tm-probe's (DelimitedWriter and
// ProbeEntry, as run_probe and the prober write them: keep the header in step with run_probe's), and frames with the
// virtio-net headers the kernel gives the ferry (plain, TCP and UDP GSO, IPv4 and IPv6) for the pcap writer. Not built
// by default:
//
//   make fuzz/make-seeds && fuzz/make-seeds fuzz/corpus
//
// Deterministic but for the wall-clock start times in the records' headers.
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "packet/packet.hh"
#include "probe/probe.pb.h"
#include "probe/prober.hh"  // kRawRecordKind
#include "record/recorder.hh"
#include "util/delimited.hh"
#include "util/error.hh"

using namespace tracemod;
namespace fs = std::filesystem;

namespace {

constexpr Nanos kMs = kMillisecond;
constexpr Nanos kBoot = 5000 * kMillisecond;  // monotonic times start somewhere after boot

// A recording of N arrivals 1 ms apart (12 Mbit/s), one-way delay growing as a queue fills, with the sequence
// numbers in SKIP lost and LATE arriving after its successor. FOOTER false: the recorder was killed while it
// wrote its last entry, which is cut off.
void record_raw(const fs::path& out, int n, std::vector<int> skip, int late, bool footer) {
  const fs::path tmp = fs::temp_directory_path() / ("tm-seeds-" + std::to_string(getpid()));
  fs::create_directories(tmp);
  record::RecorderOptions o;
  o.prefix = (tmp / "rec").string();
  o.tool_version = "seed";
  o.duration = 10000 * kMs;
  {
    record::Recorder r(o);
    for (int seq = 0; seq < n; ++seq) {
      if (std::find(skip.begin(), skip.end(), seq) != skip.end() || seq == late) continue;
      const Nanos send = kBoot + seq * kMs, recv = send + 20 * kMs + (seq % 50) * kMs / 5 + 777;
      r.on_arrival(static_cast<uint64_t>(seq), send, recv, 1500);
      if (late >= 0 && seq == late + 1) r.on_arrival(static_cast<uint64_t>(late), kBoot + late * kMs, recv + 100, 1500);
    }
    r.finish("duration");
  }
  fs::copy_file(o.prefix + ".up.raw", out, fs::copy_options::overwrite_existing);
  if (!footer) fs::resize_file(out, fs::file_size(out) - 3);  // the footer cut off, as by a kill mid-write
  fs::remove_all(tmp);
}

// A probe record: a header, then TRIPLETS triplets (a small echo; on its reply two large ones back to back),
// each echo written when its reply came, every LOSE-th echo unanswered; a footer if FOOTER.
void probe_raw(const fs::path& out, int triplets, int lose, bool footer) {
  DelimitedWriter w(out.string());
  probe::ProbeEntry entry;
  probe::Header* h = entry.mutable_header();
  h->set_kind(probe::kRawRecordKind);
  h->set_format_version(1);
  h->set_tool_version("seed");
  h->set_target("192.0.2.1");
  h->set_address("192.0.2.1");
  h->set_method("udp");
  h->set_small_bytes(100);
  h->set_large_bytes(1400);
  h->set_interval_ns(250 * kMs);
  h->set_timeout_ns(2000 * kMs);
  h->set_start_unix_ns(1700000000000000000);
  w.write(entry);
  uint64_t seq = 0, replies = 0;
  for (int t = 0; t < triplets; ++t) {
    const Nanos start = kBoot + t * 250 * kMs;
    const double f = 10e6 + t * 0.1e6, vb = 1000, vr = 200;  // ns, ns per byte
    Nanos recv_small = start + static_cast<Nanos>(2 * (f + 100 * (vb + vr)));
    for (uint32_t index = 0; index < 3; ++index) {
      probe::ProbeEntry e;
      probe::Echo* echo = e.mutable_echo();
      const uint32_t size = index == 0 ? 100 : 1400;
      const Nanos send = index == 0 ? start : recv_small + 5000 + (index - 1) * 3000;
      echo->set_seq(seq);
      echo->set_triplet(static_cast<uint64_t>(t));
      echo->set_index(index);
      echo->set_size(size);
      echo->set_send_ns(send);
      echo->set_send_kernel(true);
      const bool replied = lose == 0 || (seq + 1) % static_cast<uint64_t>(lose) != 0;
      echo->set_replied(replied);
      if (replied) {
        const Nanos queued = index == 2 ? static_cast<Nanos>(1400 * vb) - 3000 : 0;
        echo->set_recv_ns(send + static_cast<Nanos>(2 * (f + size * (vb + vr))) + queued);
        ++replies;
      }
      ++seq;
      w.write(e);
      if (index == 0 && !replied) break;  // no pair without the small echo's reply
    }
  }
  if (footer) {
    probe::ProbeEntry e;
    e.mutable_footer()->set_echoes(seq);
    e.mutable_footer()->set_replies(replies);
    e.mutable_footer()->set_reason("duration");
    w.write(e);
  }
  w.close();
}

void put16(std::vector<uint8_t>& f, size_t at, uint32_t v) {
  f[at] = static_cast<uint8_t>(v >> 8);
  f[at + 1] = static_cast<uint8_t>(v);
}

// The pcap target's input: a flags byte (snap length choice), a virtio-net header, an Ethernet frame.
void frame(const fs::path& out, uint8_t flags, bool v6, uint8_t proto, uint32_t payload, uint16_t gso_size) {
  const uint32_t l3 = kEthernetHeaderSize, l4 = l3 + (v6 ? 40 : 20), head = proto == 6 ? 20 : 8;
  std::vector<uint8_t> f(l4 + head + payload, 0);
  for (int i = 0; i < 6; ++i) f[i] = static_cast<uint8_t>(2 + i), f[6 + i] = static_cast<uint8_t>(0x12 + i);
  put16(f, 12, v6 ? 0x86DD : 0x0800);
  const uint32_t l4_len = head + payload;
  if (v6) {
    f[l3] = 0x60;
    put16(f, l3 + 4, l4_len);
    f[l3 + 6] = proto;
    f[l3 + 7] = 64;
    f[l3 + 8] = 0xfd, f[l3 + 23] = 1, f[l3 + 24] = 0xfd, f[l3 + 39] = 2;
  } else {
    f[l3] = 0x45;
    put16(f, l3 + 2, 20 + l4_len);
    f[l3 + 8] = 64;
    f[l3 + 9] = proto;
    f[l3 + 12] = 100, f[l3 + 15] = 2, f[l3 + 16] = 100, f[l3 + 19] = 1;
  }
  put16(f, l4, 40000);
  put16(f, l4 + 2, 443);
  if (proto == 6) {
    f[l4 + 7] = 1;
    f[l4 + 12] = 5 << 4;
    f[l4 + 13] = 0x18;  // ACK, PSH
  } else {
    put16(f, l4 + 4, l4_len);
  }
  for (uint32_t i = 0; i < payload; ++i) f[l4 + head + i] = static_cast<uint8_t>(i * 31);
  virtio_net_hdr h{};
  h.flags = VIRTIO_NET_HDR_F_NEEDS_CSUM;
  h.csum_start = static_cast<uint16_t>(l4);
  h.csum_offset = proto == 6 ? 16 : 6;
  if (gso_size) {
    h.gso_type = proto == 17 ? VIRTIO_NET_HDR_GSO_UDP_L4 : v6 ? VIRTIO_NET_HDR_GSO_TCPV6 : VIRTIO_NET_HDR_GSO_TCPV4;
    h.gso_size = gso_size;
    h.hdr_len = static_cast<uint16_t>(l4 + head);
  }
  std::ofstream o(out, std::ios::binary);
  o.put(static_cast<char>(flags));
  o.write(reinterpret_cast<const char*>(&h), sizeof h);
  o.write(reinterpret_cast<const char*>(f.data()), static_cast<std::streamsize>(f.size()));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: fuzz/make-seeds fuzz/corpus\n";
    return 2;
  }
  const fs::path corpus = argv[1];
  try {
    for (const char* d : {"record-raw", "probe-raw", "pcap"}) fs::create_directories(corpus / d);
    record_raw(corpus / "record-raw" / "recorded.raw", 120, {17, 18, 60}, 90, true);
    record_raw(corpus / "record-raw" / "killed.raw", 40, {}, -1, false);
    probe_raw(corpus / "probe-raw" / "probed.raw", 24, 0, true);
    probe_raw(corpus / "probe-raw" / "lossy-killed.raw", 16, 7, false);
    frame(corpus / "pcap" / "udp4", 0, false, 17, 100, 0);
    frame(corpus / "pcap" / "udp4-whole", 1, false, 17, 100, 0);
    frame(corpus / "pcap" / "tcp4-gso", 0, false, 6, 4000, 1448);
    frame(corpus / "pcap" / "tcp6-gso-whole", 1, true, 6, 3000, 1200);
    frame(corpus / "pcap" / "udp6-gso", 4, true, 17, 2500, 1000);
    frame(corpus / "pcap" / "tcp4-tiny-mss", 3, false, 6, 64, 7);
  } catch (const std::exception& e) {
    std::cerr << "make-seeds: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
