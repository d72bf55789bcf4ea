#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "link/trace.hh"
#include "util/error.hh"

namespace tracemod {
namespace {

constexpr Nanos ms(uint64_t v) {
  return static_cast<Nanos>(v) * kMillisecond;
}

// The message of the UsageError that parsing TEXT throws, or "" if it parses.
std::string parse_error(const std::string& text) {
  try {
    DeliveryTrace::parse(text, "t.trace");
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

std::vector<Nanos> take(OpportunitySource& s, size_t n) {
  std::vector<Nanos> out;
  for (size_t i = 0; i < n; ++i) out.push_back(s.next());
  return out;
}

// A file under the test's temporary directory, removed at the end.
struct TempFile {
  std::string path;
  explicit TempFile(const std::string& text) : path(testing::TempDir() + "tm-trace-" + std::to_string(getpid())) {
    std::ofstream(path, std::ios::binary) << text;
  }
  ~TempFile() { std::remove(path.c_str()); }
};

TEST(TraceParse, ErrorsNameFileAndLine) {
  EXPECT_EQ(parse_error("1\n\n2\n"), "t.trace:2: empty line");
  EXPECT_EQ(parse_error("1\n2\n\n"), "t.trace:3: empty line");
  EXPECT_EQ(parse_error("1\r\n2\r\n"), "t.trace:1: CRLF line ending (a Windows text file?): convert it with dos2unix");
  EXPECT_EQ(parse_error("1\n2\n3\r\n"), "t.trace:3: CRLF line ending (a Windows text file?): convert it with dos2unix");
  EXPECT_EQ(parse_error("1\n2x\n"), "t.trace:2: not an unsigned integer: '2x'");
  EXPECT_EQ(parse_error("1\n+2\n"), "t.trace:2: not an unsigned integer: '+2'");
  EXPECT_EQ(parse_error("-1\n"), "t.trace:1: not an unsigned integer: '-1'");
  EXPECT_EQ(parse_error("1\n 2\n"), "t.trace:2: not an unsigned integer: ' 2'");
  EXPECT_EQ(parse_error("1\n2 \n"), "t.trace:2: not an unsigned integer: '2 '");
  EXPECT_EQ(parse_error("1\n1.5\n"), "t.trace:2: not an unsigned integer: '1.5'");
  EXPECT_EQ(parse_error("1\na\tb\x01\n"), "t.trace:2: not an unsigned integer: 'a\\x09b\\x01'");
  EXPECT_EQ(parse_error("abcdefghijklmnopqrstuvwxyz0123456789\n"),
            "t.trace:1: not an unsigned integer: 'abcdefghijklmnopqrstuvwx...'");
  EXPECT_EQ(parse_error("1\n4294967296\n"), "t.trace:2: '4294967296' is too large: at most 4294967295 ms");
  EXPECT_EQ(parse_error("1\n99999999999999999999999\n"),
            "t.trace:2: '99999999999999999999999' is too large: at most 4294967295 ms");
  EXPECT_EQ(parse_error("1\n5\n7\n6\n"), "t.trace:4: decreasing time: 6 after 7");
  EXPECT_EQ(parse_error(""), "t.trace: empty file: no timestamps");
  EXPECT_EQ(parse_error("0\n0\n"), "t.trace:2: trace must last a nonzero time (its last value is 0 ms)");
  EXPECT_EQ(parse_error("\n"), "t.trace:1: empty line");
}

TEST(TraceParse, AcceptsWhatMahimahiAccepts) {
  EXPECT_EQ(parse_error("0\n1\n"), "");
  EXPECT_EQ(parse_error("4294967295\n"), "");
  EXPECT_EQ(parse_error("007\n"), "");  // leading zeros: still an unsigned decimal integer
  EXPECT_EQ(DeliveryTrace::parse("1\n00000000000042\n", "t").period_ms(), 42u);
  const DeliveryTrace t = DeliveryTrace::parse("1\n2\n3", "t");  // no newline after the last line
  EXPECT_EQ(t.period_ms(), 3u);
  EXPECT_EQ(t.opportunities(), 3u);
}

TEST(TraceParse, RepeatsAreSeveralOpportunitiesInOneMillisecond) {
  const DeliveryTrace t = DeliveryTrace::parse("2\n2\n2\n5\n5\n", "t");
  EXPECT_EQ(t.opportunities(), 5u);
  EXPECT_EQ(t.period_ms(), 5u);
  auto c = t.cursor(false);
  EXPECT_EQ(take(*c, 7), (std::vector<Nanos>{ms(2), ms(2), ms(2), ms(5), ms(5), ms(7), ms(7)}));
}

TEST(TraceParse, RunsKeepCountsOfAnySize) {
  std::string text;
  for (int i = 0; i < 1000; ++i) text += "3\n";
  text += "4\n";
  const DeliveryTrace t = DeliveryTrace::parse(text, "t");
  std::vector<std::pair<uint64_t, uint64_t>> runs;
  t.for_each_run([&](uint64_t at, uint64_t count) { runs.emplace_back(at, count); });
  EXPECT_EQ(runs, (std::vector<std::pair<uint64_t, uint64_t>>{{3, 1000}, {4, 1}}));
}

TEST(TraceStorage, AboutABytePerDistinctMillisecond) {
  std::string text;
  for (int i = 1; i <= 100000; ++i) text += std::to_string(i) + "\n";
  const DeliveryTrace t = DeliveryTrace::parse(text, "t");
  EXPECT_LE(t.memory_bytes(), 100000u + 200u);
}

TEST(TraceCursor, LoopsWithPeriodOfLastValue) {
  const DeliveryTrace t = DeliveryTrace::parse("0\n3\n10\n", "t");
  auto c = t.cursor(false);
  // The line "0" and the line "10" of the previous loop fall at the same time.
  EXPECT_EQ(take(*c, 7), (std::vector<Nanos>{0, ms(3), ms(10), ms(10), ms(13), ms(20), ms(20)}));
}

TEST(TraceCursor, OnceEndsAfterTheLastLine) {
  const DeliveryTrace t = DeliveryTrace::parse("1\n1\n4\n", "t");
  auto c = t.cursor(true);
  EXPECT_EQ(take(*c, 5), (std::vector<Nanos>{ms(1), ms(1), ms(4), kNever, kNever}));
  auto d = t.cursor(true);
  EXPECT_EQ(d->skip_before(ms(100)), 3u);
  EXPECT_EQ(d->next(), kNever);
}

TEST(TraceCursor, SkipBeforeCountsWhatItDiscards) {
  const DeliveryTrace t = DeliveryTrace::parse("1\n1\n4\n", "t");
  auto c = t.cursor(false);
  EXPECT_EQ(c->skip_before(ms(1)), 0u);
  EXPECT_EQ(c->skip_before(ms(1) + 1), 2u);
  EXPECT_EQ(c->next(), ms(4));
  EXPECT_EQ(c->skip_before(ms(5)), 0u);  // the next loop's 1s fall at 5: not before 5
  EXPECT_EQ(c->skip_before(ms(8)), 2u);
  EXPECT_EQ(c->next(), ms(8));
}

TEST(TraceCursor, SkipBeforeJumpsManyPeriodsExactly) {
  const DeliveryTrace t = DeliveryTrace::parse("1\n1\n4\n", "t");  // 3 per 4 ms
  const uint64_t periods = 3600ull * 1000 * 24 / 4;                // a day of them
  auto c = t.cursor(false);
  EXPECT_EQ(c->next(), ms(1));
  // Before day + 1 ms: this period's other two, then every whole period up to the day.
  const Nanos day = ms(periods * 4);
  EXPECT_EQ(c->skip_before(day + ms(1)), 2 + (periods - 1) * 3);  // the last whole period ends at `day`
  EXPECT_EQ(take(*c, 3), (std::vector<Nanos>{day + ms(1), day + ms(1), day + ms(4)}));
}

TEST(TraceCursor, EndsRatherThanOverflowNanoseconds) {
  const DeliveryTrace t = DeliveryTrace::parse("1\n1\n4\n", "t");
  auto c = t.cursor(false);
  c->skip_before(kNever);
  EXPECT_EQ(c->next(), kNever);
}

TEST(TraceCursor, SkipBeforeMatchesStepping) {
  const DeliveryTrace t = DeliveryTrace::parse("0\n2\n2\n3\n7\n7\n", "t");
  for (Nanos target : {Nanos{0}, ms(2), ms(7), ms(7) + 1, ms(14), ms(15), ms(100), ms(701) - 1}) {
    auto skipping = t.cursor(false), stepping = t.cursor(false);
    uint64_t stepped = 0;
    Nanos next = 0;
    while ((next = stepping->next()) < target) ++stepped;
    EXPECT_EQ(skipping->skip_before(target), stepped) << target;
    EXPECT_EQ(skipping->next(), next) << target;
  }
}

TEST(TraceLoad, ReadsFilesAcrossChunkBoundaries) {
  std::string text;
  uint64_t lines = 0;
  for (uint64_t v = 1; text.size() < 3 * (1u << 20); v += 3, ++lines) text += std::to_string(v) + "\n";
  const uint64_t last = 1 + 3 * (lines - 1);
  TempFile f(text);
  const DeliveryTrace t = DeliveryTrace::load(f.path);
  EXPECT_EQ(t.opportunities(), lines);
  EXPECT_EQ(t.period_ms(), last);
}

TEST(TraceLoad, ALineLongerThanAChunkIsRefusedFromAFileAsFromMemory) {
  // A megabyte of leading zeros: load() used to read the chunk's zeros as the line and ignore the rest of the
  // file, while parse() read the whole line (the trace fuzz target compares the two).
  const std::string text = "5\n" + std::string(1 << 20, '0') + "50\n60\n";
  TempFile f(text);
  const std::string why = ":2: a line of more than 1048575 bytes";
  EXPECT_EQ(parse_error(text), "t.trace" + why);
  try {
    DeliveryTrace::load(f.path);
    ADD_FAILURE() << "loaded";
  } catch (const UsageError& e) {
    EXPECT_EQ(std::string(e.what()), f.path + why);
  }
  EXPECT_EQ(parse_error("5\n" + std::string((1 << 20) - 3, '0') + "50\n"), "");  // 1048575 bytes: fine
}

TEST(TraceLoad, ErrorsCarryThePath) {
  TempFile f("1\n2\n1\n");
  EXPECT_THROW(
      {
        try {
          DeliveryTrace::load(f.path);
        } catch (const UsageError& e) {
          EXPECT_EQ(std::string(e.what()), f.path + ":3: decreasing time: 1 after 2");
          throw;
        }
      },
      UsageError);
}

TEST(TraceLoad, MissingFileAndDirectoryAreUsageErrors) {
  auto message = [](const std::string& path) -> std::string {
    try {
      DeliveryTrace::load(path);
    } catch (const UsageError& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_EQ(message("/nonexistent/t.trace"), "/nonexistent/t.trace: cannot open: No such file or directory");
  EXPECT_EQ(message("/"), "/: cannot open: Is a directory");
}

TEST(TraceLoad, CursorOutlivesTheTrace) {
  std::unique_ptr<OpportunitySource> c;
  {
    const DeliveryTrace t = DeliveryTrace::parse("5\n", "t");
    c = t.cursor(false);
  }
  EXPECT_EQ(take(*c, 2), (std::vector<Nanos>{ms(5), ms(10)}));
}

TEST(TraceConstantRate, OpportunityIAtCeilOfSerializationTimes) {
  ConstantRate r(12000000);  // 12 Mbit/s: a 1500-byte packet per ms
  EXPECT_EQ(take(r, 3), (std::vector<Nanos>{ms(1), ms(2), ms(3)}));
  EXPECT_EQ(ConstantRate::time_of(1, 7000000), 1714286);  // 12000/7e6 s = 1714285.71... ns, rounded up
  EXPECT_EQ(ConstantRate::time_of(7, 7000000), ms(12));   // exact: no drift
  EXPECT_EQ(ConstantRate::time_of(1, kMaxRate), 12);
  EXPECT_EQ(ConstantRate::time_of(1000000, 1), kNever);  // beyond int64 nanoseconds
}

TEST(TraceConstantRate, SkipBeforeIsExact) {
  for (uint64_t rate : {1ull, 7000000ull, 12000000ull, 999999937ull}) {
    for (Nanos t : {Nanos{1}, Nanos{12}, ms(1), ms(1) + 1, ms(3600 * 1000)}) {
      ConstantRate skipping(rate);
      const uint64_t skipped = skipping.skip_before(t);
      const Nanos next = skipping.next();
      EXPECT_GE(next, t) << rate << " " << t;
      EXPECT_EQ(next, ConstantRate::time_of(skipped + 1, rate)) << rate << " " << t;
      if (skipped > 0) {
        EXPECT_LT(ConstantRate::time_of(skipped, rate), t) << rate << " " << t;
      }
    }
  }
  ConstantRate r(12000000);
  EXPECT_EQ(r.skip_before(-5), 0u);
  EXPECT_EQ(r.skip_before(ms(10) + 1), 10u);
  EXPECT_EQ(r.skip_before(ms(5)), 0u);  // never backwards
  EXPECT_EQ(r.next(), ms(11));
}

TEST(TraceParseRate, UnitsInAnyCase) {
  EXPECT_EQ(parse_rate("100bit"), 100u);
  EXPECT_EQ(parse_rate("64kbit"), 64000u);
  EXPECT_EQ(parse_rate("12mbit"), 12000000u);
  EXPECT_EQ(parse_rate("12Mbit"), 12000000u);
  EXPECT_EQ(parse_rate("1GBIT"), 1000000000u);
  EXPECT_EQ(parse_rate("64kbps"), 64000u);
  EXPECT_EQ(parse_rate("12mbps"), 12000000u);
  EXPECT_EQ(parse_rate("2gbps"), 2000000000u);
  EXPECT_EQ(parse_rate("1.5mbit"), 1500000u);
  EXPECT_EQ(parse_rate("0.1kbit"), 100u);
  EXPECT_EQ(parse_rate(".5kbit"), 500u);
  EXPECT_EQ(parse_rate("1.1mbit"), 1100000u);  // exact, not 1100000.0000000002
  EXPECT_EQ(parse_rate("1.6bit"), 2u);         // to the nearest bit/s
  EXPECT_EQ(parse_rate("1000gbit"), kMaxRate);
}

TEST(TraceParseRate, ErrorsNameTheTextAndTheUnits) {
  const std::string units = "expected a number and a unit: bit, kbit, mbit, gbit, kbps, mbps or gbps (e.g. 12mbit)";
  for (const char* bad : {"12", "mbit", "12 mbit", "12mb", "-1mbit", "+1mbit", "1.2.3mbit", "", "12mbitx", "1e6bit"}) {
    try {
      parse_rate(bad);
      ADD_FAILURE() << bad;
    } catch (const UsageError& e) {
      const std::string exponent = bad == std::string("1e6bit") ? "an exponent is not allowed: " : "";
      EXPECT_EQ(std::string(e.what()), "invalid rate '" + std::string(bad) + "': " + exponent + units);
    }
  }
  EXPECT_THROW(parse_rate("0mbit"), UsageError);
  EXPECT_THROW(parse_rate("0.4bit"), UsageError);
  EXPECT_THROW(parse_rate("1000.001gbit"), UsageError);
  EXPECT_THROW(parse_rate("99999999999999999999999gbit"), UsageError);
}

}  // namespace
}  // namespace tracemod
