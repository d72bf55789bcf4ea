// The pcapng capture (--pcap), read back block by block with a reader written here from the format's
// description: section, interfaces, packets with their times, lengths, flags and comments; GSO frames as wire
// segments; the snap length; checksums of frames kept whole; drops in the file beside.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "capture/capture.hh"
#include "fake.hh"
#include "packet/segmenter.hh"
#include "util/error.hh"

namespace tracemod {
namespace {

uint32_t le32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
uint16_t le16(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return v;
}

struct Block {
  uint32_t type;
  std::vector<uint8_t> body;  // between the length fields
};

struct Epb {
  uint32_t iface, captured, wire, flags = 0;
  int64_t time;
  std::vector<uint8_t> data;
  std::string comment;
};

struct Pcapng {
  std::vector<Block> blocks;
  std::vector<std::string> section_comments, interface_names;
  std::vector<uint32_t> snaplens;
  std::vector<Epb> packets;
};

// Options from P to END: code -> values (as strings of bytes).
std::vector<std::pair<uint16_t, std::string>> options(const uint8_t* p, const uint8_t* end) {
  std::vector<std::pair<uint16_t, std::string>> out;
  while (p + 4 <= end) {
    const uint16_t code = le16(p), len = le16(p + 2);
    if (code == 0) break;
    out.push_back({code, std::string(reinterpret_cast<const char*>(p + 4), len)});
    p += 4 + ((len + 3u) & ~3u);
  }
  return out;
}

Pcapng read_pcapng(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<uint8_t> f((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  Pcapng r;
  size_t at = 0;
  while (at < f.size()) {
    EXPECT_LE(at + 12, f.size()) << "truncated block";
    const uint32_t type = le32(&f[at]), len = le32(&f[at + 4]);
    EXPECT_EQ(len % 4, 0u) << "block length not a multiple of 4";
    EXPECT_LE(at + len, f.size());
    if (len < 12 || at + len > f.size()) break;
    EXPECT_EQ(le32(&f[at + len - 4]), len) << "trailing length differs";
    Block b{type,
            std::vector<uint8_t>(f.begin() + static_cast<long>(at) + 8, f.begin() + static_cast<long>(at + len) - 4)};
    const uint8_t* p = b.body.data();
    const uint8_t* end = p + b.body.size();
    if (type == 0x0A0D0D0A) {
      EXPECT_EQ(le32(p), 0x1A2B3C4Du);
      for (auto& [code, v] : options(p + 16, end))
        if (code == 1) r.section_comments.push_back(v);
    } else if (type == 1) {
      EXPECT_EQ(le16(p), 1) << "link type Ethernet";
      r.snaplens.push_back(le32(p + 4));
      bool nanoseconds = false;
      for (auto& [code, v] : options(p + 8, end)) {
        if (code == 2) r.interface_names.push_back(v);
        if (code == 9) nanoseconds = v == std::string(1, '\x09');
      }
      EXPECT_TRUE(nanoseconds) << "if_tsresol 9";
    } else if (type == 6) {
      Epb e;
      e.iface = le32(p);
      e.time = static_cast<int64_t>(static_cast<uint64_t>(le32(p + 4)) << 32 | le32(p + 8));
      e.captured = le32(p + 12);
      e.wire = le32(p + 16);
      e.data.assign(p + 20, p + 20 + e.captured);
      for (auto& [code, v] : options(p + 20 + ((e.captured + 3) & ~3u), end)) {
        if (code == 2) e.flags = le32(reinterpret_cast<const uint8_t*>(v.data()));
        if (code == 1) e.comment = v;
      }
      r.packets.push_back(e);
    }
    r.blocks.push_back(std::move(b));
    at += len;
  }
  return r;
}

class CaptureTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/tm-capture-test.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string path(const std::string& name) const { return dir_ + "/" + name; }

  std::string dir_;
  BufferPool pool_;
};

TEST(CaptureNames, DropsFileSitsBeside) {
  EXPECT_EQ(LinkCapture::drops_path("run.pcapng"), "run.drops.pcapng");
  EXPECT_EQ(LinkCapture::drops_path("/a.b/run"), "/a.b/run.drops");
  EXPECT_EQ(LinkCapture::drops_path("dir/.hidden"), "dir/.hidden.drops");
  EXPECT_EQ(LinkCapture::drops_path("x.pcap"), "x.drops.pcap");
}

TEST_F(CaptureTest, BothDirectionsInOneFileStampedWithTheirReleaseTimes) {
  LinkCapture::Options o;
  o.both = path("both.pcapng");
  Packet down = fake::udp4(pool_, 30, 2000);  // a queue that delays nothing leaves release unset
  {
    LinkCapture c(o);
    c.start("tm-delay", {"command line: tm-delay 5"});
    Packet up = fake::udp4(pool_, 100, 1000);
    up.release = 5000;
    c.direction(0)->departed(up);
    c.direction(1)->departed(down);
    EXPECT_TRUE(c.finish().empty());
  }
  const Pcapng r = read_pcapng(o.both);
  EXPECT_EQ(r.interface_names, (std::vector<std::string>{"uplink", "downlink"}));
  ASSERT_EQ(r.packets.size(), 2u);
  ASSERT_FALSE(r.section_comments.empty());
  EXPECT_EQ(r.section_comments[1], "command line: tm-delay 5");
  // Times are monotonic plus one offset, written in the section header: the difference is exact.
  EXPECT_EQ(r.packets[1].time - r.packets[0].time, 2000 - 5000);
  EXPECT_EQ(r.packets[0].iface, 0u);
  EXPECT_EQ(r.packets[0].flags, 2u) << "uplink frames are outbound";
  EXPECT_EQ(r.packets[1].iface, 1u);
  EXPECT_EQ(r.packets[1].flags, 1u) << "downlink frames are inbound";
  EXPECT_EQ(r.packets[1].wire, fake::payload_offset(fake::FrameSpec{}) + 30);
  EXPECT_EQ(r.packets[1].captured, r.packets[1].wire);
  EXPECT_TRUE(std::equal(r.packets[1].data.begin(), r.packets[1].data.end(), down.frame()));
  EXPECT_EQ(read_pcapng(LinkCapture::drops_path(o.both)).packets.size(), 0u);
}

TEST_F(CaptureTest, SnapLengthKeepsTheHeaders) {
  LinkCapture::Options o;
  o.uplink = path("up.pcapng");
  {
    LinkCapture c(o);  // default: 128 bytes
    c.start("tm-delay", {});
    c.direction(0)->departed(fake::udp4(pool_, 1400));
    EXPECT_EQ(c.direction(1), nullptr) << "the downlink is not captured";
  }
  const Pcapng r = read_pcapng(o.uplink);
  EXPECT_EQ(r.snaplens, (std::vector<uint32_t>{128}));
  ASSERT_EQ(r.packets.size(), 1u);
  EXPECT_EQ(r.packets[0].captured, 128u);
  EXPECT_EQ(r.packets[0].wire, fake::payload_offset(fake::FrameSpec{}) + 1400);
}

// A GSO super-frame is written as the wire packets it stands for, each with the headers segment_gso gives it
// and its own slice of the payload (whole here: snap length 0), its L4 checksum completed.
TEST_F(CaptureTest, GsoFrameIsWrittenAsWireSegments) {
  LinkCapture::Options o;
  o.downlink = path("down.pcapng");
  o.snaplen = 0;
  Packet gso = fake::tcp_gso(pool_, false, 1448, 3 * 1448 + 100, 7000);
  gso.release = 9000;
  std::vector<Packet> expected;
  ASSERT_TRUE(segment_gso(gso, pool_, [&](Packet&& s) { expected.push_back(std::move(s)); }));
  {
    LinkCapture c(o);
    c.start("tm-link", {});
    c.direction(1)->departed(gso);
  }
  const Pcapng r = read_pcapng(o.downlink);
  ASSERT_EQ(r.packets.size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    SCOPED_TRACE("segment " + std::to_string(i));
    Packet& s = expected[i];
    const uint16_t checksum = fake::complete_partial_checksum(s);
    EXPECT_EQ(checksum, fake::full_l4_checksum(s.frame(), s.frame_size()));
    ASSERT_EQ(r.packets[i].wire, s.frame_size());
    ASSERT_EQ(r.packets[i].captured, s.frame_size());
    EXPECT_TRUE(std::equal(r.packets[i].data.begin(), r.packets[i].data.end(), s.frame()));
    EXPECT_EQ(r.packets[i].time, r.packets[0].time) << "all leave when the frame does";
  }
}

TEST_F(CaptureTest, DropsGoBesideWithAComment) {
  LinkCapture::Options o;
  o.both = path("run.pcapng");
  {
    LinkCapture c(o);
    c.start("tm-loss", {});
    c.direction(0)->dropped(fake::udp4(pool_, 50), 123456);
    c.direction(1)->departed(fake::udp4(pool_, 60));
  }
  const Pcapng passed = read_pcapng(o.both), drops = read_pcapng(path("run.drops.pcapng"));
  ASSERT_EQ(passed.packets.size(), 1u);
  EXPECT_EQ(passed.packets[0].iface, 1u);
  ASSERT_EQ(drops.packets.size(), 1u);
  EXPECT_EQ(drops.interface_names, (std::vector<std::string>{"uplink-drops", "downlink-drops"}));
  EXPECT_EQ(drops.packets[0].iface, 0u);
  EXPECT_EQ(drops.packets[0].comment, "dropped by the uplink queue");
}

TEST_F(CaptureTest, BadCombinationsAreUsageErrors) {
  LinkCapture::Options o;
  o.both = path("a");
  o.uplink = path("b");
  EXPECT_THROW(LinkCapture{o}, UsageError);
  o = {};
  o.uplink = o.downlink = path("same");
  EXPECT_THROW(LinkCapture{o}, UsageError);
  EXPECT_NE(access(path("a").c_str(), F_OK), 0) << "nothing is created for a refused command line";
}

// A file that cannot be created refuses the whole capture, and removes what it had created; an existing file
// keeps its contents.
TEST_F(CaptureTest, UnwritablePathLeavesNothingBehind) {
  {
    std::ofstream(path("old.pcapng")) << "keep";
  }
  LinkCapture::Options o;
  o.uplink = path("old.pcapng");
  o.downlink = path("missing-dir/x.pcapng");
  try {
    LinkCapture c(o);
    FAIL() << "no error";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("--downlink-pcap " + o.downlink + ": cannot open for writing"),
              std::string::npos)
        << e.what();
  }
  std::ifstream in(path("old.pcapng"));
  std::string text;
  in >> text;
  EXPECT_EQ(text, "keep");
  EXPECT_NE(access(path("old.drops.pcapng").c_str(), F_OK), 0);
}

}  // namespace
}  // namespace tracemod
