// The value parsers every tool shares (rates are tested with traces, in test_trace.cc).
#include <gtest/gtest.h>

#include "util/error.hh"
#include "util/parse.hh"

namespace tracemod {
namespace {

template <typename F>
std::string usage_error(F f) {
  try {
    f();
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

TEST(ParseDuration, UnitsAndBareNumbers) {
  EXPECT_EQ(parse_duration("200ms"), 200 * kMillisecond);
  EXPECT_EQ(parse_duration("1.5s"), 1500 * kMillisecond);
  EXPECT_EQ(parse_duration("250us"), 250000);
  EXPECT_EQ(parse_duration("7ns"), 7);
  EXPECT_EQ(parse_duration("2MIN"), 120000 * kMillisecond);
  EXPECT_EQ(parse_duration("1h"), 3600000 * kMillisecond);
  EXPECT_EQ(parse_duration("0s"), 0);
  EXPECT_EQ(parse_duration("40", kMillisecond), 40 * kMillisecond);
  EXPECT_EQ(parse_duration("0.25", kMillisecond), 250000);
  EXPECT_EQ(parse_duration("0.0000001", kMillisecond), 1);  // rounded up: never shorter than asked
  EXPECT_EQ(parse_duration("1.0000000001s"), 1000000001);
  for (const char* bad : {"", "s", "10", "-1s", "1..5s", "10 s", "10sec", "1e3ms", "5m"})
    EXPECT_NE(usage_error([&] { parse_duration(bad); }), "") << bad;
  EXPECT_EQ(usage_error([] { parse_duration("--jitter", "10x", kMillisecond); }),
            "invalid --jitter '10x': expected a duration (a unit is optional): ns, us, ms, s, min or h (e.g. 200ms or "
            "1.5s)");
  EXPECT_EQ(parse_duration("--d", "2s", 0, kMillisecond * 2000), kMillisecond * 2000);
  EXPECT_EQ(usage_error([] { parse_duration("--d", "2.001s", 0, kMillisecond * 2000); }),
            "invalid --d '2.001s': longer than the largest allowed, 2 s");
}

TEST(ParseMilliseconds, MahimahiFormAndUnits) {
  EXPECT_DOUBLE_EQ(parse_milliseconds("delay", "40"), 40);
  EXPECT_DOUBLE_EQ(parse_milliseconds("delay", "0.25"), 0.25);
  EXPECT_DOUBLE_EQ(parse_milliseconds("delay", "1.5s"), 1500);
  EXPECT_DOUBLE_EQ(parse_milliseconds("delay", "3600000"), 3600000);
  for (const char* bad : {"-5", "3600001", "abc", "", "1e2"})
    EXPECT_NE(usage_error([&] { parse_milliseconds("delay", bad); }), "") << bad;
  EXPECT_EQ(usage_error([] { parse_milliseconds("--uplink-delay", "x"); }).rfind("invalid --uplink-delay 'x': ", 0),
            0u);
}

TEST(ParseProbability, FractionsAndPercentages) {
  EXPECT_DOUBLE_EQ(parse_probability("0.01"), 0.01);
  EXPECT_DOUBLE_EQ(parse_probability("1%"), 0.01);
  EXPECT_DOUBLE_EQ(parse_probability("100%"), 1);
  EXPECT_DOUBLE_EQ(parse_probability("0"), 0);
  EXPECT_DOUBLE_EQ(parse_probability("1"), 1);
  for (const char* bad : {"", "%", "1.5", "-0.1", "101%", "nan", "0.1%%", "x"})
    EXPECT_NE(usage_error([&] { parse_probability(bad); }), "") << bad;
  EXPECT_EQ(usage_error([] { parse_probability("--uplink-loss", "2"); }),
            "invalid --uplink-loss '2': expected a probability from 0 to 1, or a percentage (e.g. 0.01 or 1%)");
}

TEST(ParseNumber, RangeAndUnitInTheError) {
  EXPECT_DOUBLE_EQ(parse_number("--x", "2.5", 0, 10), 2.5);
  EXPECT_EQ(usage_error([] { parse_number("--duration", "0", 1, 86400, "seconds"); }),
            "invalid --duration '0': expected seconds from 1 to 86400");
}

TEST(ParseSeed, WholeUnsigned64BitNumbers) {
  EXPECT_EQ(parse_seed("0"), 0u);
  EXPECT_EQ(parse_seed("18446744073709551615"), 18446744073709551615u);
  for (const char* bad : {"", "-1", "+1", "18446744073709551616", "1x", " 1"})
    EXPECT_NE(usage_error([&] { parse_seed(bad); }), "") << bad;
}

TEST(ParseRate, OptionNamedInTheError) {
  EXPECT_EQ(parse_rate("--uplink-rate", "12mbit"), 12000000u);
  EXPECT_EQ(usage_error([] { parse_rate("--uplink-rate", "12"); }).rfind("--uplink-rate: invalid rate '12': ", 0), 0u);
}

TEST(ParseWholeNumber, DigitsOnlyWithinTheRange) {
  EXPECT_EQ(parse_whole_number("--small", "64", 44, 65000, "bytes"), 64u);
  EXPECT_EQ(parse_whole_number("--small", "65000", 44, 65000, "bytes"), 65000u);
  for (const char* bad : {"", "43", "65001", "64.0", "1e2", "-1", "+5", "64 ", "x", "99999999999999999999"})
    EXPECT_NE(usage_error([&] { parse_whole_number("--small", bad, 44, 65000, "bytes"); }), "") << bad;
  EXPECT_EQ(usage_error([] { parse_whole_number("--small", "1.5", 44, 65000, "bytes"); }),
            "invalid --small '1.5': expected bytes from 44 to 65000");
}

TEST(ParseQueueSize, PacketsBytesOrBoth) {
  auto size = [](const char* text) {
    const QueueSize q = parse_queue_size(text);
    return std::make_pair(q.packets, q.bytes);
  };
  EXPECT_EQ(size("7pkts"), std::make_pair(uint64_t{7}, uint64_t{0}));
  EXPECT_EQ(size("1PACKET"), std::make_pair(uint64_t{1}, uint64_t{0}));
  EXPECT_EQ(size("150000B"), std::make_pair(uint64_t{0}, uint64_t{150000}));
  EXPECT_EQ(size("150kB"), std::make_pair(uint64_t{0}, uint64_t{150000}));
  EXPECT_EQ(size("64KiB"), std::make_pair(uint64_t{0}, uint64_t{65536}));
  EXPECT_EQ(size("2MiB"), std::make_pair(uint64_t{0}, uint64_t{2097152}));
  EXPECT_EQ(size("7pkts,150000bytes"), std::make_pair(uint64_t{7}, uint64_t{150000}));
  EXPECT_EQ(size("150000B,7pkts"), std::make_pair(uint64_t{7}, uint64_t{150000}));
  EXPECT_EQ(size("unlimited"), std::make_pair(uint64_t{0}, uint64_t{0}));
  for (const char* bad : {"", "7", "pkts", "0pkts", "1.5pkts", "7pkts,8pkts", "7pkts,", "-1B", "7 pkts", "7bit",
                          "99999999999999999999B", "7pkts;1B"})
    EXPECT_NE(usage_error([&] { parse_queue_size(bad); }), "") << bad;
  EXPECT_EQ(usage_error([] { parse_queue_size("queue", "7"); }),
            "invalid queue '7': expected packets or bytes, or both joined by a comma (e.g. 7pkts, 150000B or "
            "7pkts,150000B), or unlimited");
}

TEST(KeyValues, ItemsTrimmedAndFound) {
  const KeyValues kv("--uplink-loss", "gilbert", " p=1% ,r= 0.25", {"p", "r", "h"});
  ASSERT_TRUE(kv.has("p"));
  EXPECT_EQ(*kv.find("p"), "1%");
  EXPECT_EQ(*kv.find("r"), "0.25");
  EXPECT_EQ(kv.find("h"), nullptr);
  EXPECT_EQ(kv.name("r"), "--uplink-loss (gilbert r=)");
  EXPECT_EQ(kv.keys(), "p, r, h");
  EXPECT_FALSE(KeyValues("x", "y", "  ", {}).has("p"));
}

TEST(KeyValues, ErrorsNameTheOptionAndWhatTheListIsFor) {
  const auto error = [](const std::string& text, std::vector<std::string> keys) {
    return usage_error([&] { KeyValues("--opt", "thing", text, keys); });
  };
  EXPECT_EQ(error("a=1,b=2", {"a"}), "--opt: unknown key 'b' for thing (expected a)");
  EXPECT_EQ(error("a=1,a=2", {"a"}), "--opt: key 'a' given twice");
  EXPECT_EQ(error("a", {"a", "b"}), "--opt: 'a' is not KEY=VALUE (keys for thing: a, b)");
  EXPECT_EQ(error("a=1,", {"a"}), "--opt: '' is not KEY=VALUE (keys for thing: a)");
  EXPECT_EQ(error("=1", {"a"}), "--opt: '=1' is not KEY=VALUE (keys for thing: a)");
  EXPECT_EQ(error("a=1", {}), "--opt: thing takes no arguments (got 'a=1')");
}

}  // namespace
}  // namespace tracemod
