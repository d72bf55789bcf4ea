// tm-probe distill on records made by the model itself: exact recovery of F, Vb and Vr, Noble's correction of
// negative solutions (never cascading), the sliding window, L = 1 - sqrt(b/a), and the files it reads and writes
// (a schedule tm-modulate reads back), and what its reader refuses: another format, impossible values, a record
// spanning years.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <fstream>
#include <sstream>

#include "modulate/schedule.hh"
#include "probe/distill.hh"
#include "probe/probe.pb.h"
#include "probe/prober.hh"
#include "record/record.pb.h"
#include "util/delimited.hh"
#include "util/error.hh"

namespace tracemod::probe {
namespace {

constexpr Nanos kMs = kMillisecond, kUs = 1000;
constexpr uint32_t kS1 = 64, kS2 = 1400;

struct Path {
  Nanos delay = 20 * kMs;
  double vb = 4000, vr = 1000;  // ns per byte
};

// The echoes of triplet N sent at T through PATH, as the model says they come back: the pair leaves 50 us after
// the small echo's reply, 8 us apart, and the second of it queues S2*Vb behind the first. EXTRA[i] is added to
// echo i's round trip (conditions that changed within the triplet).
std::vector<EchoRecord> triplet(uint64_t n, Nanos t, const Path& p, std::array<Nanos, 3> extra = {0, 0, 0}) {
  auto rtt = [&](uint32_t s) { return static_cast<Nanos>(std::llround(2 * (p.delay + s * (p.vb + p.vr)))); };
  std::vector<EchoRecord> e(3);
  e[0] = {3 * n, n, 0, kS1, t, t + rtt(kS1) + extra[0], true, true};
  const Nanos pair = e[0].recv + 50 * kUs, gap = 8 * kUs;
  e[1] = {3 * n + 1, n, 1, kS2, pair, pair + rtt(kS2) + extra[1], true, true};
  const Nanos queued = static_cast<Nanos>(std::llround(kS2 * p.vb));
  e[2] = {3 * n + 2, n, 2, kS2, pair + gap, pair + rtt(kS2) + queued + extra[2], true, true};
  return e;
}

std::vector<EchoRecord> steady(int count, const Path& p, Nanos interval = 1000 * kMs, Nanos t0 = 5000 * kMs) {
  std::vector<EchoRecord> all;
  for (int i = 0; i < count; ++i) {
    auto t = triplet(static_cast<uint64_t>(i), t0 + i * interval, p);
    all.insert(all.end(), t.begin(), t.end());
  }
  return all;
}

TEST(ProbeDistill, RecoversTheModelsParametersExactly) {
  const Path p;
  const Distilled d = distill(steady(30, p), DistillConfig{});
  ASSERT_EQ(d.tuples.size(), 30u);
  EXPECT_EQ(d.complete, 30u);
  EXPECT_EQ(d.corrected, 0u);
  for (const Tuple& t : d.tuples) {
    EXPECT_EQ(t.duration, 1000 * kMs);
    EXPECT_NEAR(static_cast<double>(t.delay), 20 * kMs, 1);
    EXPECT_NEAR(t.byte_cost, 4000, 1e-3);
    EXPECT_NEAR(t.residual_cost, 1000, 1e-3);
    EXPECT_EQ(t.loss, 0);
  }
}

TEST(ProbeDistill, LossIsOneMinusTheRootOfTheShareAnswered) {
  Path p;
  std::vector<EchoRecord> all = steady(25, p, 400 * kMs);  // 75 echoes, all answered
  for (uint64_t n = 25; n < 50; ++n) {                     // 25 more triplets whose small echo went unanswered: no pair
    const Nanos t = 5000 * kMs + static_cast<Nanos>(n) * 400 * kMs;
    all.push_back({3 * n, n, 0, kS1, t, 0, false, true});
  }
  DistillConfig c;
  c.window = c.step = 100000 * kMs;  // one window over everything: a = 100, b = 75
  const Distilled d = distill(all, c);
  ASSERT_EQ(d.tuples.size(), 1u);
  EXPECT_DOUBLE_EQ(d.tuples[0].loss, 1 - std::sqrt(0.75));
  EXPECT_EQ(d.triplets, 50u);
  EXPECT_EQ(d.complete, 25u);
}

// One window per triplet, so each tuple shows one triplet's estimate.
DistillConfig per_triplet() {
  DistillConfig c;
  c.window = c.step = 1000 * kMs;
  return c;
}

TEST(ProbeDistill, ANegativeSolutionTakesThePreviousCostsAndMovesF) {
  const Path p;
  std::vector<EchoRecord> all = steady(3, p);
  // The small echo of triplet 3 waited 6 ms more (media access): t2 - t1 < 0, so V < 0.
  auto bad = triplet(3, 5000 * kMs + 3000 * kMs, p, {6 * kMs, 0, 0});
  all.insert(all.end(), bad.begin(), bad.end());
  const Distilled d = distill(all, per_triplet());
  ASSERT_EQ(d.tuples.size(), 4u);
  EXPECT_EQ(d.corrected, 1u);
  const Tuple& t = d.tuples[3];
  EXPECT_NEAR(t.byte_cost, p.vb, 1e-3);  // the previous triplet's
  EXPECT_NEAR(t.residual_cost, p.vr, 1e-3);
  // The mean of the round trips' differences (6, 0, 0 ms), halved for one way: F + 1 ms.
  EXPECT_NEAR(static_cast<double>(t.delay), 21 * kMs, 2);
}

TEST(ProbeDistill, CorrectionsDoNotCascade) {
  const Path p;
  std::vector<EchoRecord> all = steady(2, p);
  for (uint64_t n = 2; n < 4; ++n) {
    auto bad = triplet(n, 5000 * kMs + static_cast<Nanos>(n) * 1000 * kMs, p, {6 * kMs, 0, 0});
    all.insert(all.end(), bad.begin(), bad.end());
  }
  const Distilled d = distill(all, per_triplet());
  EXPECT_EQ(d.corrected, 2u);
  // Both corrected from the last valid triplet: F + 1 ms each, not F + 2 ms for the second, as a correction
  // added to the one before would give.
  EXPECT_NEAR(static_cast<double>(d.tuples[2].delay), 21 * kMs, 2);
  EXPECT_NEAR(static_cast<double>(d.tuples[3].delay), 21 * kMs, 2);
}

TEST(ProbeDistill, TheCorrectionTakesTheLatestValidTripletsCosts) {
  Path p1, p2;
  p2.vb = 2000, p2.vr = 500;
  std::vector<EchoRecord> all = triplet(0, 5000 * kMs, p1);
  for (const auto& t : {triplet(1, 6000 * kMs, p2), triplet(2, 7000 * kMs, p2, {6 * kMs, 0, 0})})
    all.insert(all.end(), t.begin(), t.end());
  const Distilled d = distill(all, per_triplet());
  ASSERT_EQ(d.corrected, 1u);
  EXPECT_NEAR(d.tuples[2].byte_cost, 2000, 1e-3);
  EXPECT_NEAR(d.tuples[2].residual_cost, 500, 1e-3);
}

TEST(ProbeDistill, NothingToCorrectFromBeforeTheFirstValidTriplet) {
  const Path p;
  std::vector<EchoRecord> all = triplet(0, 5000 * kMs, p, {6 * kMs, 0, 0});
  auto good = steady(2, p, 1000 * kMs, 6000 * kMs);
  for (EchoRecord& e : good) e.triplet += 1, e.seq += 3;
  all.insert(all.end(), good.begin(), good.end());
  const Distilled d = distill(all, per_triplet());
  EXPECT_EQ(d.unusable, 1u);
  EXPECT_EQ(d.corrected, 0u);
  ASSERT_EQ(d.tuples.size(), 3u);
  EXPECT_NEAR(static_cast<double>(d.tuples[0].delay), 20 * kMs, 1);  // the first window takes the next one's
}

TEST(ProbeDistill, TheWindowAveragesTheEstimatesAroundEachStep) {
  Path slow, fast;
  slow.delay = 10 * kMs;
  fast.delay = 30 * kMs;
  std::vector<EchoRecord> all;
  for (uint64_t n = 0; n < 20; ++n) {
    auto t = triplet(n, 5000 * kMs + static_cast<Nanos>(n) * 1000 * kMs, n < 10 ? slow : fast);
    all.insert(all.end(), t.begin(), t.end());
  }
  DistillConfig mean;
  mean.mean = true;
  const Distilled d = distill(all, DistillConfig{}), m = distill(all, mean);  // 5 s window, 1 s step
  ASSERT_EQ(d.tuples.size(), 20u);
  EXPECT_NEAR(static_cast<double>(d.tuples[3].delay), 10 * kMs, 1);
  EXPECT_NEAR(static_cast<double>(d.tuples[16].delay), 30 * kMs, 1);
  // Step 9's window, [7 s, 12 s) from the first echo, holds triplets 7..11: three at 10 ms, two at 30 ms.
  EXPECT_NEAR(static_cast<double>(d.tuples[9].delay), 10 * kMs, 1);  // their median
  EXPECT_NEAR(static_cast<double>(m.tuples[9].delay), (3 * 10 + 2 * 30) * kMs / 5.0, 1);
  // A 4 s window at step 9, [7.5 s, 11.5 s), holds 10, 10, 30, 30 ms: the median of an even count is the mean
  // of the middle two.
  DistillConfig four;
  four.window = 4000 * kMs;
  EXPECT_NEAR(static_cast<double>(distill(all, four).tuples[9].delay), 20 * kMs, 1);
}

TEST(ProbeDistill, TheMedianIgnoresATripletALateWakeUpDistorted) {
  const Path p;
  std::vector<EchoRecord> all = steady(5, p);
  // Triplet 2's small echo came back 0.4 ms late: still a valid solution, but F + 0.2 ms and Vr 30% low.
  auto late = triplet(2, 7000 * kMs, p, {400 * kUs, 0, 0});
  std::copy(late.begin(), late.end(), all.begin() + 6);
  DistillConfig one, mean;
  one.window = mean.window = 100000 * kMs;
  one.step = mean.step = 100000 * kMs;
  mean.mean = true;
  const Tuple robust = distill(all, one).tuples.at(0), dragged = distill(all, mean).tuples.at(0);
  EXPECT_NEAR(robust.residual_cost, p.vr, 1e-3);
  EXPECT_NEAR(static_cast<double>(robust.delay), 20 * kMs, 1);
  EXPECT_LT(dragged.residual_cost, p.vr - 10);
}

TEST(ProbeDistill, AWindowWithoutACompleteTripletKeepsTheOneBefore) {
  const Path p;
  std::vector<EchoRecord> all = steady(3, p);
  auto late = triplet(9, 5000 * kMs + 9000 * kMs, p);  // nothing between 3 s and 9 s
  all.insert(all.end(), late.begin(), late.end());
  const Distilled d = distill(all, per_triplet());
  ASSERT_EQ(d.tuples.size(), 10u);
  EXPECT_EQ(d.empty_windows, 6u);
  EXPECT_NEAR(static_cast<double>(d.tuples[5].delay), 20 * kMs, 1);
  EXPECT_NEAR(d.tuples[5].byte_cost, 4000, 1e-3);
}

TEST(ProbeDistill, NoCompleteTripletIsAnError) {
  std::vector<EchoRecord> all = triplet(0, 0, Path{});
  all[2].replied = false;
  EXPECT_THROW(distill(all, DistillConfig{}), UsageError);
}

// One schedule line per step: echoes spanning more than 1000 hours (tm-modulate's longest schedule) or more than
// kMaxWindows steps are refused before a window is made (fuzz/regressions/probe-raw: years of 1 s windows ran out
// of memory).
TEST(ProbeDistill, EchoesSpanningMoreThanAScheduleHoldsAreAnError) {
  const Path p;
  std::vector<EchoRecord> all = triplet(0, 5000 * kMs, p);
  const auto later = triplet(1, 5000 * kMs + kMaxDuration - 2000 * kMs, p);
  all.insert(all.end(), later.begin(), later.end());
  DistillConfig hours;
  hours.step = hours.window = 3600 * 1000 * kMs;
  EXPECT_EQ(distill(all, hours).tuples.size(), 1000u);  // 999:59:58 of echoes: 1000 hourly lines
  all.back().send += 3000 * kMs, all.back().recv += 3000 * kMs;
  EXPECT_THROW(distill(all, hours), UsageError);            // a second past 1000 h
  EXPECT_THROW(distill(all, DistillConfig{}), UsageError);  // 3.6 million 1 s steps: under 1000 h, but too many
}

std::string temp_path(const char* name) {
  return std::string("/tmp/tm-probe-test-") + std::to_string(getpid()) + "-" + name;
}

// What a prober writes first (KIND "": as it did before headers named their format).
ProbeEntry header_entry(const std::string& kind = kRawRecordKind) {
  ProbeEntry h;
  h.mutable_header()->set_format_version(1);
  h.mutable_header()->set_kind(kind);
  h.mutable_header()->set_target("192.0.2.1");
  h.mutable_header()->set_method("udp");
  h.mutable_header()->set_small_bytes(kS1);
  h.mutable_header()->set_large_bytes(kS2);
  h.mutable_header()->set_interval_ns(1000 * kMs);
  h.mutable_header()->set_timeout_ns(5000 * kMs);
  return h;
}

void write_record(const std::string& path, const std::vector<EchoRecord>& echoes,
                  const ProbeEntry& header = header_entry()) {
  DelimitedWriter w(path);
  w.write(header);
  for (const EchoRecord& e : echoes) {
    ProbeEntry entry;
    Echo* x = entry.mutable_echo();
    x->set_seq(e.seq), x->set_triplet(e.triplet), x->set_index(e.index), x->set_size(e.size);
    x->set_send_ns(e.send), x->set_replied(e.replied), x->set_recv_ns(e.recv), x->set_send_kernel(e.kernel_send);
    w.write(entry);
  }
  w.close();
}

TEST(ProbeDistill, TheScheduleItWritesIsOneTmModulateReads) {
  const std::string raw = temp_path("a.raw"), sched = temp_path("a.sched");
  write_record(raw, steady(8, Path{}));
  const std::string summary = distill_file(raw, sched, DistillConfig{});
  EXPECT_NE(summary.find("8 windows"), std::string::npos) << summary;
  EXPECT_NE(summary.find("8 triplets (8 complete, 0 corrected, 0 unusable)"), std::string::npos) << summary;
  EXPECT_NE(summary.find("bandwidth 1/Vb (kbit/s): mean 2000.0"), std::string::npos) << summary;
  const modulate::Schedule s = modulate::Schedule::load(sched);
  ASSERT_EQ(s.states().size(), 8u);
  EXPECT_EQ(s.states()[0].duration, 1000 * kMs);
  EXPECT_EQ(s.states()[0].delay, 20 * kMs);
  EXPECT_DOUBLE_EQ(s.states()[0].byte_cost, 4000);
  EXPECT_DOUBLE_EQ(s.states()[0].residual_cost, 1000);
  EXPECT_EQ(s.states()[0].loss, "0.000000");
  std::ifstream in(sched);
  std::string first;
  std::getline(in, first);
  EXPECT_EQ(first, "# tm-probe distill: a replay schedule for tm-modulate, Noble's tuples d F Vb Vr L");
  std::stringstream printed(print_file(raw));
  std::string line;
  std::getline(printed, line);
  EXPECT_EQ(line.rfind("# target 192.0.2.1 () by udp, S1 64, S2 1400, interval 1 s", 0), 0u) << line;
  std::getline(printed, line);
  std::getline(printed, line);
  EXPECT_EQ(line, "0 0 0 64 5000.000000 5040.640000 kernel");
  unlink(raw.c_str());
  unlink(sched.c_str());
}

// The message reading PATH fails with, through print_file ("" if it reads it).
std::string refusal(const std::string& path) {
  try {
    print_file(path);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

TEST(ProbeRecord, ARecordWrittenBeforeHeadersNamedTheirFormatStillReads) {
  const std::string raw = temp_path("old.raw");
  write_record(raw, steady(3, Path{}), header_entry(""));
  EXPECT_EQ(refusal(raw), "");
  EXPECT_NE(distill_file(raw, temp_path("old.sched"), DistillConfig{}).find("3 windows"), std::string::npos);
  unlink(raw.c_str());
  unlink(temp_path("old.sched").c_str());
}

TEST(ProbeRecord, ATmRecordRecordIsRefusedByItsNameOrItsFields) {
  for (const bool named : {true, false}) {
    const std::string raw = temp_path(named ? "named.raw" : "unnamed.raw");
    {
      DelimitedWriter w(raw);
      record::RawEntry h;
      h.mutable_header()->set_format_version(1);
      if (named) h.mutable_header()->set_kind("tm-record raw record");
      h.mutable_header()->set_direction("up");
      h.mutable_header()->set_ip_packet_bytes(1500);
      w.write(h);
      w.close();
    }
    const std::string why = named ? "its header says it is a 'tm-record raw record'"
                                  : "its header holds fields unknown to a tm-probe raw record";
    EXPECT_EQ(refusal(raw), raw + ": not a tm-probe raw record (" + why + ")");
    unlink(raw.c_str());
  }
}

TEST(ProbeRecord, ImpossibleValuesAreRefusedNamingTheFieldOrEntry) {
  const std::string raw = temp_path("bad.raw");
  ProbeEntry v2 = header_entry(), method = header_entry(), sizes = header_entry();
  v2.mutable_header()->set_format_version(2);
  method.mutable_header()->set_method("carrier-pigeon");
  sizes.mutable_header()->set_small_bytes(kS2);
  std::vector<EchoRecord> index = steady(2, Path{}), negative = steady(2, Path{});
  index[4].index = 3;
  negative[5].send = -1;
  const std::vector<std::pair<std::string, std::string>> cases = {
      {refusal((write_record(raw, steady(2, Path{}), v2), raw)),
       ": format_version 2 of a tm-probe raw record: only version 1 is known"},
      {refusal((write_record(raw, steady(2, Path{}), method), raw)),
       ": the header's method 'carrier-pigeon' is none of icmp-ping-socket, icmp-raw-socket and udp"},
      {refusal((write_record(raw, steady(2, Path{}), sizes), raw)),
       ": the header's sizes 1400 and 1400 are not S1 < S2 <= 65000"},
      {refusal((write_record(raw, index), raw)), ": entry 6: echo index 3 is not 0, 1 or 2"},
      {refusal((write_record(raw, negative), raw)),
       ": entry 7: a negative time (sent at -1 ns, answered at 6100290000 ns)"},
  };
  for (const auto& [got, want] : cases) EXPECT_EQ(got, raw + want);
  unlink(raw.c_str());
}

TEST(ProbeRecord, EchoesYearsApartAreRefusedBeforeAnyWindowIsMade) {
  const std::string raw = temp_path("far.raw");
  std::vector<EchoRecord> echoes = steady(3, Path{});
  echoes.back().send = 3 * 365LL * 86400 * 1000 * kMs;  // 95 million windows of 1 s: gigabytes
  write_record(raw, echoes);
  try {
    distill_file(raw, temp_path("far.sched"), DistillConfig{});
    ADD_FAILURE() << "distilled";
  } catch (const UsageError& e) {
    EXPECT_EQ(std::string(e.what()).substr(raw.size()),
              ": the echoes span 94607995000 ms (sent from 5000 to 94608000000 ms of CLOCK_MONOTONIC): 94607996 "
              "windows of 1000 ms, more than 4000000 (a longer --step makes fewer)");
  }
  unlink(raw.c_str());
}

TEST(ProbeRecord, ACorruptHeaderIsOneLineOfOurOwn) {
  const std::string raw = temp_path("utf8.raw");
  std::ofstream(raw) << std::string("\x06\x0a\x04\x1a\x02\xff\xfe", 7);  // a header whose target is not UTF-8
  testing::internal::CaptureStderr();
  const std::string why = refusal(raw);
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");  // no "[libprotobuf ERROR ...]" line before ours
  EXPECT_EQ(why, raw + ": entry 1: not a tm-probe raw entry");
  unlink(raw.c_str());
}

TEST(ProbeDistill, ABadRecordNamesItself) {
  const std::string raw = temp_path("bad.raw");
  {
    std::ofstream out(raw);
    out << "not a record at all, just text";
  }
  try {
    distill_file(raw, temp_path("bad.sched"), DistillConfig{});
    ADD_FAILURE() << "distilled text";
  } catch (const UsageError& e) {
    EXPECT_EQ(std::string(e.what()).rfind(raw + ": ", 0), 0u) << e.what();
  }
  unlink(raw.c_str());
  // A time a monotonic clock cannot show: differences of it would overflow.
  std::vector<EchoRecord> echoes = steady(3, Path{});
  echoes[4].recv = -1;
  write_record(raw, echoes);
  try {
    distill_file(raw, temp_path("bad.sched"), DistillConfig{});
    ADD_FAILURE() << "distilled a negative time";
  } catch (const UsageError& e) {
    EXPECT_EQ(std::string(e.what()), raw + ": entry 6: a negative time (sent at " +
                                         std::to_string(echoes[4].send) + " ns, answered at -1 ns)");
  }
  unlink(raw.c_str());
  EXPECT_EQ(default_schedule_path("walk.raw"), "walk.sched");
  EXPECT_EQ(default_schedule_path("walk"), "walk.sched");
}

}  // namespace
}  // namespace tracemod::probe
