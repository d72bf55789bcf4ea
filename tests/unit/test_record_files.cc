// tm-record's files: the raw record round trip (and a recording cut short), the trace writer's rules, and
// distill rebuilding exactly the trace the recorder wrote, with its delay and loss series.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "record/distill.hh"
#include "record/raw_record.hh"
#include "record/recorder.hh"
#include "record/trace_writer.hh"
#include "record/wire.hh"
#include "util/error.hh"

namespace tracemod::record {
namespace {

constexpr Nanos kMs = kMillisecond;

// A temporary directory, removed with what is in it.
class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/tm-record-test.XXXXXX";
    path_ = mkdtemp(tmpl);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

std::string slurp(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

bool exists(const std::string& path) {
  return access(path.c_str(), F_OK) == 0;
}

TEST(RecordTrace, MillisecondsFromTheFirstArrivalWithALastLineOfAtLeastOne) {
  TempDir dir;
  TraceWriter t(dir / "a.up");
  for (Nanos at : {5000 * kMs, 5000 * kMs + 300000, 5001 * kMs, 5003 * kMs + 999999}) t.add(at);
  EXPECT_FALSE(exists(dir / "a.up"));  // only once complete
  EXPECT_TRUE(t.finish());
  EXPECT_EQ(slurp(dir / "a.up"), "0\n0\n1\n3\n");
  EXPECT_FALSE(exists(dir / "a.up.part"));

  TraceWriter one(dir / "b.up");
  one.add(7 * kMs);
  one.add(7 * kMs + 10);
  EXPECT_TRUE(one.finish());
  EXPECT_EQ(slurp(dir / "b.up"), "0\n1\n");
}

TEST(RecordTrace, NothingArrivedMeansNoTraceAndNoLeftovers) {
  TempDir dir;
  {
    TraceWriter t(dir / "empty.up");
    EXPECT_FALSE(t.finish());
  }
  {
    TraceWriter abandoned(dir / "abandoned.up");
  }
  EXPECT_FALSE(exists(dir / "empty.up"));
  EXPECT_FALSE(exists(dir / "empty.up.part"));
  EXPECT_FALSE(exists(dir / "abandoned.up.part"));
}

TEST(RecordWire, DataHeaderRoundTripAndStrangers) {
  DataHeader h;
  h.up = false;
  h.session = 0x0123456789abcdefull;
  h.seq = 42;
  h.send_ns = -5;
  uint8_t buf[kHeaderBytes + 4] = {};
  encode(h, buf);
  const auto back = decode(buf, sizeof buf);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->session, h.session);
  EXPECT_EQ(back->seq, 42u);
  EXPECT_EQ(back->send_ns, -5);
  EXPECT_FALSE(back->up);
  EXPECT_FALSE(decode(buf, kHeaderBytes - 1));
  buf[0] ^= 1;
  EXPECT_FALSE(decode(buf, sizeof buf));
  EXPECT_EQ(udp_payload(1500, false), 1472u);
  EXPECT_EQ(udp_payload(1500, true), 1452u);
}

struct Arrival {
  uint64_t seq;
  Nanos send, recv;
};

// Seq 2 and 3 go missing, 3 turns up late; 6 never comes; one-way delay 10 ms + queueing.
const std::vector<Arrival> kArrivals = {
    {0, 0, 10 * kMs},           {1, 1 * kMs, 11 * kMs},   {4, 4 * kMs, 16 * kMs},
    {3, 3 * kMs, 16 * kMs + 1}, {5, 5 * kMs, 1017 * kMs}, {7, 7 * kMs, 1020 * kMs},
};

std::string record(const TempDir& dir, Nanos duration) {
  RecorderOptions o;
  o.prefix = dir / "rec";
  o.duration = duration;
  o.tool_version = "test";
  Recorder r(o);
  for (const Arrival& a : kArrivals) r.on_arrival(a.seq, a.send, a.recv, 1500);
  return r.finish("duration");
}

TEST(RecordRaw, RoundTripOfHeaderPacketsAndFooter) {
  TempDir dir;
  const std::string summary = record(dir, 0);
  EXPECT_NE(summary.find("loss"), std::string::npos);
  std::vector<RawEntry> entries;
  read_raw(dir / "rec.up.raw", [&](const RawEntry& e) { entries.push_back(e); });
  ASSERT_EQ(entries.size(), kArrivals.size() + 2);
  EXPECT_EQ(entries[0].header().direction(), "up");
  EXPECT_EQ(entries[0].header().ip_packet_bytes(), 1500u);
  for (size_t i = 0; i < kArrivals.size(); ++i) {
    const Packet& p = entries[i + 1].packet();
    EXPECT_EQ(p.seq(), kArrivals[i].seq);
    EXPECT_EQ(p.send_ns(), kArrivals[i].send);
    EXPECT_EQ(p.recv_ns(), kArrivals[i].recv);
    EXPECT_EQ(p.size(), 1500u);
  }
  EXPECT_EQ(entries[3].packet().lost_before(), 2u);  // 4 after 1
  EXPECT_TRUE(entries[4].packet().late());           // 3
  EXPECT_EQ(entries[6].packet().lost_before(), 1u);  // 7 after 5
  EXPECT_EQ(entries.back().footer().packets(), 6u);
  EXPECT_EQ(entries.back().footer().lost(), 2u);  // 2 and 6
  EXPECT_EQ(slurp(dir / "rec.up"), "0\n1\n6\n6\n1007\n1010\n");
}

TEST(RecordRaw, ARecordingCutShortReadsUpToTheCut) {
  TempDir dir;
  record(dir, 0);
  const std::string whole = slurp(dir / "rec.up.raw");
  std::ofstream(dir / "cut.raw") << whole.substr(0, whole.size() - 3);
  uint64_t packets = 0;
  bool footer = false;
  read_raw(dir / "cut.raw", [&](const RawEntry& e) { packets += e.has_packet(), footer |= e.has_footer(); });
  EXPECT_EQ(packets, kArrivals.size());
  EXPECT_FALSE(footer);
}

TEST(RecordRaw, SomethingElseIsRefusedWithItsName) {
  TempDir dir;
  std::ofstream(dir / "junk.raw") << "hello, this is not a raw record\n";
  try {
    read_raw(dir / "junk.raw", [](const RawEntry&) {});
    FAIL() << "no error";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("junk.raw"), std::string::npos) << e.what();
  }
}

// Times a recorder cannot have written, refused before distill takes differences of them or writes a line per
// second between them (fuzz/regressions/record-raw).
TEST(RecordRaw, TimesOutOfARecordingsRangeAreRefused) {
  const auto error = [](Nanos send, Nanos recv) {
    TempDir dir;
    {
      DelimitedWriter w(dir / "t.raw");
      RawEntry e;
      e.mutable_header()->set_direction("up");
      w.write(e);
      for (const Nanos t : {Nanos{1000} * kMs, recv}) {
        RawEntry p;
        p.mutable_packet()->set_send_ns(t == recv ? send : t - 20 * kMs);
        p.mutable_packet()->set_recv_ns(t);
        w.write(p);
      }
      w.close();
    }
    try {
      read_raw(dir / "t.raw", [](const RawEntry&) {});
    } catch (const UsageError& e) {
      const std::string what = e.what();
      return what.substr(what.find(": entry ") + 2);
    }
    return std::string("(accepted)");
  };
  const Nanos day = 86400 * 1000 * kMs;
  EXPECT_EQ(error(40 * day, 40 * day + 20 * kMs), "(accepted)");
  EXPECT_EQ(error(-1, 2000 * kMs), "entry 3: a time outside 0 to 2^62 ns (sent at -1 ns, received at 2000000000 ns)");
  EXPECT_EQ(error(0, kNever), "entry 3: a time outside 0 to 2^62 ns (sent at 0 ns, received at " +
                                  std::to_string(kNever) + " ns)");
  EXPECT_EQ(error(0, 50 * day), "entry 3: received 4319999000 ms after the first arrival: a trace holds at most "
                                "4294967295 ms");
}

TEST(RecordRecorder, TheDurationCountsFromTheFirstArrival) {
  TempDir dir;
  RecorderOptions o;
  o.prefix = dir / "d";
  o.up = false;
  o.duration = 1000 * kMs;
  Recorder r(o);
  EXPECT_EQ(r.end_time(), kNever);
  EXPECT_TRUE(r.on_arrival(0, 0, 500 * kMs, 1500));
  EXPECT_EQ(r.end_time(), 1500 * kMs);
  EXPECT_TRUE(r.on_arrival(1, 0, 1499 * kMs, 1500));
  EXPECT_FALSE(r.on_arrival(2, 0, 1500 * kMs, 1500));
  r.finish("duration");
  EXPECT_EQ(slurp(dir / "d.down"), "0\n999\n");
}

TEST(RecordDistill, RebuildsTheSameTraceAndTheSeries) {
  TempDir dir;
  record(dir, 0);
  const std::string summary = distill(dir / "rec.up.raw", dir / "again");
  EXPECT_EQ(slurp(dir / "again"), slurp(dir / "rec.up"));
  EXPECT_NE(summary.find("loss 25.00% (2 of 8)"), std::string::npos) << summary;
  EXPECT_EQ(slurp(dir / "again.loss"), "0 4 1\n1 2 1\n");
  const std::string delay = slurp(dir / "again.delay");
  EXPECT_EQ(delay.substr(0, delay.find('\n')), "0.000 0.000");
  EXPECT_NE(delay.find("1007.000 1002.000"), std::string::npos) << delay;
  EXPECT_EQ(default_distill_prefix("x/rec.up.raw"), "x/rec.up");
  EXPECT_EQ(default_distill_prefix("x/rec"), "x/rec.trace");
}

TEST(RecordDistill, ARecordWithoutArrivalsIsAnError) {
  TempDir dir;
  {
    RecorderOptions o;
    o.prefix = dir / "none";
    Recorder r(o);
    r.finish("interrupted");
  }
  EXPECT_FALSE(exists(dir / "none.up"));
  EXPECT_THROW(distill(dir / "none.up.raw", dir / "x"), UsageError);
}

}  // namespace
}  // namespace tracemod::record
