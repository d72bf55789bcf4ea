// tm-record's files: the raw record round trip (and a recording cut short), what its reader refuses (another
// format, impossible values, arrivals out of order or spanning years) and the older records it still reads, the
// trace writer's rules, and distill rebuilding exactly the trace the recorder wrote, with its delay and loss series.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "fake.hh"
#include "probe/probe.pb.h"
#include "record/distill.hh"
#include "record/raw_record.hh"
#include "record/recorder.hh"
#include "record/trace_writer.hh"
#include "record/wire.hh"
#include "util/error.hh"

namespace tracemod::record {
namespace {

constexpr Nanos kMs = kMillisecond;

using fake::TempDir;

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

// The message read_raw refuses PATH with ("" if it reads it).
std::string refusal(const std::string& path) {
  try {
    read_raw(path, [](const RawEntry&) {});
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

RawEntry header_entry(const std::string& kind = kRawRecordKind) {
  RawEntry e;
  Header* h = e.mutable_header();
  h->set_format_version(1);
  h->set_kind(kind);
  h->set_tool_version("test");
  h->set_direction("up");
  h->set_ip_packet_bytes(1500);
  return e;
}

RawEntry packet_entry(uint64_t seq, Nanos send, Nanos recv, uint32_t size = 1500) {
  RawEntry e;
  Packet* p = e.mutable_packet();
  p->set_seq(seq);
  p->set_send_ns(send);
  p->set_recv_ns(recv);
  p->set_size(size);
  return e;
}

// A record of HEADER and arrivals at RECV_MS (sent 10 ms before each) at PATH.
std::string write_raw(const std::string& path, const RawEntry& header, const std::vector<Nanos>& recv_ms) {
  DelimitedWriter w(path);
  w.write(header);
  for (size_t i = 0; i < recv_ms.size(); ++i) w.write(packet_entry(i, recv_ms[i] * kMs - 10 * kMs, recv_ms[i] * kMs));
  w.close();
  return path;
}

TEST(RecordRaw, ARecordWrittenBeforeHeadersNamedTheirFormatStillReads) {
  TempDir dir;
  const std::string old = write_raw(dir / "old.raw", header_entry(""), {100, 101, 105});
  EXPECT_EQ(refusal(old), "");
  const std::string summary = distill(old, dir / "old");
  EXPECT_EQ(summary.rfind("up: 0.01 s, 3 packets", 0), 0u) << summary;
  EXPECT_EQ(slurp(dir / "old"), "0\n1\n5\n");
  record(dir, 0);  // and what the recorder writes now names itself
  std::vector<RawEntry> entries;
  read_raw(dir / "rec.up.raw", [&](const RawEntry& e) { entries.push_back(e); });
  EXPECT_EQ(entries[0].header().kind(), "tm-record raw record");
}

TEST(RecordRaw, ATmProbeRecordIsRefusedByItsNameOrItsFields) {
  TempDir dir;
  for (const bool named : {true, false}) {
    const std::string path = dir / (named ? "named.raw" : "unnamed.raw");
    {
      DelimitedWriter w(path);
      probe::ProbeEntry h;
      probe::Header* ph = h.mutable_header();
      ph->set_format_version(1);
      if (named) ph->set_kind("tm-probe raw record");
      ph->set_target("up");  // field 3, tm-record's direction: not what gives it away
      ph->set_address("192.0.2.1");
      ph->set_method("udp");
      ph->set_small_bytes(64), ph->set_large_bytes(1400), ph->set_interval_ns(1000 * kMs);
      w.write(h);
      w.close();
    }
    const std::string why = named ? "its header says it is a 'tm-probe raw record'"
                                  : "its header holds fields unknown to a tm-record raw record";
    EXPECT_EQ(refusal(path), path + ": not a tm-record raw record (" + why + ")");
  }
}

TEST(RecordRaw, ImpossibleHeadersAreRefusedNamingTheField) {
  TempDir dir;
  RawEntry v99 = header_entry(), sideways = header_entry(), tiny = header_entry();
  v99.mutable_header()->set_format_version(99);
  sideways.mutable_header()->set_direction("sideways");
  tiny.mutable_header()->set_ip_packet_bytes(5);
  EXPECT_EQ(refusal(write_raw(dir / "v99", v99, {1})),
            dir / "v99" + ": format_version 99 of a tm-record raw record: only version 1 is known");
  EXPECT_EQ(refusal(write_raw(dir / "side", sideways, {1})),
            dir / "side" + ": the header's direction 'sideways' is neither up nor down");
  EXPECT_EQ(refusal(write_raw(dir / "tiny", tiny, {1})),
            dir / "tiny" + ": the header's packet size 5 is outside 128..9000 bytes");
}

TEST(RecordRaw, ImpossibleEntriesAreRefusedNamingTheEntry) {
  TempDir dir;
  auto with = [&](const std::string& name, const std::vector<RawEntry>& entries, bool named = true) {
    DelimitedWriter w(dir / name);
    w.write(header_entry(named ? kRawRecordKind : ""));
    for (const RawEntry& e : entries) w.write(e);
    w.close();
    const std::string why = refusal(dir / name);
    return why.empty() ? why : why.substr((dir / name).size());
  };
  EXPECT_EQ(with("neg", {packet_entry(0, 0, -10 * kMs)}),
            ": entry 2: a negative time (sent at 0 ns, received at -10000000 ns)");
  // A send time near 2^63 overflowed the one-way delays distill compares (UBSan in the record-raw fuzz target:
  // fuzz/regressions/record-raw/send-time-near-2-63).
  EXPECT_EQ(with("late", {packet_entry(0, kNever, 10 * kMs)}),
            ": entry 2: a time past 2^62 ns (sent at 9223372036854775807 ns, received at 10000000 ns)");
  EXPECT_EQ(with("size", {packet_entry(0, 0, 10 * kMs, 0)}),
            ": entry 2: size 0 is not that of an IP packet (1 to 65575 bytes)");
  EXPECT_EQ(with("again", {packet_entry(0, 0, 10 * kMs), header_entry()}), ": entry 3: a second header");
  EXPECT_EQ(with("empty", {RawEntry()}), ": entry 2: neither a packet nor a footer");
  // An older record is read strictly: an entry holding a field RawEntry does not define (a tm-probe echo's
  // "replied", field 7) is refused; a record that names its format may come from a newer recorder.
  probe::ProbeEntry echo;
  echo.mutable_echo()->set_seq(1), echo.mutable_echo()->set_size(64), echo.mutable_echo()->set_replied(true);
  RawEntry stranger;
  ASSERT_TRUE(stranger.ParseFromString(echo.SerializeAsString()));
  EXPECT_EQ(with("strict", {stranger}, false), ": entry 2: fields unknown to a tm-record raw entry");
  EXPECT_EQ(with("newer", {stranger}, true), "");
}

TEST(RecordRaw, ArrivalsOutOfOrderOrYearsApartAreRefusedBeforeDistillAllocatesAnything) {
  TempDir dir;
  constexpr Nanos kYear = 365LL * 86400 * 1000 * kMs;
  const std::string far = write_raw(dir / "far.raw", header_entry(), {10, 11, kYear / kMs});
  EXPECT_EQ(refusal(far).substr(far.size()),
            ": entry 4: received 31535999.990 s after the first arrival: a recording lasts at most 86400.000 s");
  EXPECT_THROW(distill(far, dir / "far"), UsageError);  // at once: one entry per second of a year would be 500 MB
  EXPECT_FALSE(exists(dir / "far") || exists(dir / "far.loss") || exists(dir / "far.delay"));
  const std::string back = write_raw(dir / "back.raw", header_entry(), {5000, 5001, 3999});
  EXPECT_EQ(refusal(back).substr(back.size()),
            ": entry 4: received 1.002 s before an earlier entry: arrivals are recorded in time order (to within "
            "1.000 s)");
  // Within a second is what a clock step can make the recorder write: taken at the latest time, as in the trace.
  const std::string step = write_raw(dir / "step.raw", header_entry(), {5000, 5001, 4500, 5002});
  const std::string summary = distill(step, dir / "step");
  EXPECT_EQ(summary.rfind("up: 0.00 s, 4 packets", 0), 0u) << summary;
  EXPECT_EQ(slurp(dir / "step"), "0\n1\n1\n2\n");
  EXPECT_EQ(slurp(dir / "step.loss"), "0 4 0\n");
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
