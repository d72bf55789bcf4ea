// The pcapng writer (--pcap) and the frames it is given: the input is a flags byte (the snap length), a
// virtio-net header as the kernel hands it to the ferry (GSO type and size, checksum start and offset) and an
// Ethernet frame, whatever they hold. The frame leaves the uplink and is dropped on the downlink of one
// capture, as a shell's queues would report it; the two files written are read back block by block: every
// block whole and its lengths agreeing, one packet per wire segment, none longer than the snap length or the
// wire, the checksum a NIC would complete kept inside the frame.
#include <sys/stat.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <vector>

#include "capture/capture.hh"
#include "fuzz.hh"

using namespace tracemod;

namespace {

constexpr uint32_t kSnaplens[8] = {LinkCapture::kDefaultSnaplen, 0, 1, 14, 54, 100, 1500, 65535};

uint32_t le32(const std::vector<uint8_t>& f, size_t at) {
  uint32_t v;
  std::memcpy(&v, &f[at], 4);
  return v;
}

// Walks a pcapng file: one section header, then interfaces and packets; returns the packets.
size_t check_file(const std::string& path, uint32_t snaplen) {
  std::ifstream in(path, std::ios::binary);
  const std::vector<uint8_t> f((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  size_t at = 0, interfaces = 0, packets = 0;
  while (at < f.size()) {
    FUZZ_CHECK(at + 12 <= f.size());
    const uint32_t type = le32(f, at), len = le32(f, at + 4);
    FUZZ_CHECK(len % 4 == 0 && len >= 12 && at + len <= f.size() && le32(f, at + len - 4) == len);
    if (at == 0) FUZZ_CHECK(type == 0x0A0D0D0A);
    if (type == 1) ++interfaces;
    if (type == 6) {
      FUZZ_CHECK(len >= 32);
      const uint32_t iface = le32(f, at + 8), captured = le32(f, at + 20), wire = le32(f, at + 24);
      FUZZ_CHECK(iface < interfaces && captured <= wire && 28 + ((captured + 3) & ~3u) + 4 <= len);
      FUZZ_CHECK(snaplen == 0 || captured <= snaplen);
      ++packets;
    }
    at += len;
  }
  return packets;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1 + kVnetHeaderSize || size - 1 > BufferPool::kMaxSize) return 0;
  const uint32_t snaplen = kSnaplens[data[0] & 7];
  BufferPool pool;
  Packet p;
  p.size = static_cast<uint32_t>(size - 1);
  p.buf = pool.get(p.size);
  std::memcpy(p.buf.data(), data + 1, p.size);
  p.arrival = p.release = 1000 * kMillisecond;
  const uint32_t segments = p.segments();

  const std::string path = fuzz::scratch_dir() + "/fuzz.pcapng";
  {
    LinkCapture::Options o;
    o.both = path;
    o.snaplen = snaplen;
    LinkCapture capture(o);
    capture.start("tm-fuzz", {"a comment"});
    capture.direction(0)->departed(p);
    capture.direction(1)->dropped(p, p.arrival + kMillisecond);
    const std::vector<std::string> errors = capture.finish();
    FUZZ_CHECK(errors.empty());
  }
  FUZZ_CHECK(check_file(path, snaplen) == segments);
  FUZZ_CHECK(check_file(LinkCapture::drops_path(path), snaplen) == segments);
  return 0;
}
