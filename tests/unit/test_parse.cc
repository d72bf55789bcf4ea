// The value parsers every tool shares: the grammar, line by line from tests/data/values.tsv (which tm-run's
// Python reader is checked against too), then the messages and option names of each reader.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <sstream>

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

// --- The shared grammar (tests/data/values.tsv) ---

struct Vector {
  std::string kind, input, expected;
  size_t line;
};

std::vector<Vector> read_vectors() {
  const std::string path = std::string(TM_TEST_DATA) + "/values.tsv";
  std::ifstream in(path);
  EXPECT_TRUE(in) << "cannot read " << path;
  std::vector<Vector> out;
  size_t n = 0;
  for (std::string line; std::getline(in, line);) {
    ++n;
    if (line.empty() || line[0] == '#') continue;
    std::vector<std::string> f;
    std::istringstream fields(line);
    for (std::string field; std::getline(fields, field, '\t');) f.push_back(field);
    EXPECT_EQ(f.size(), 3u) << path << ":" << n << ": expected KIND, INPUT and EXPECTED separated by tabs";
    if (f.size() == 3) out.push_back({f[0], f[1] == "<empty>" ? "" : f[1], f[2], n});
  }
  return out;
}

std::string both(const QueueSize& q) {
  return std::to_string(q.packets) + "," + std::to_string(q.bytes);
}

// TEXT as KIND reads it, written as values.tsv writes it; a decimal for the kinds that read doubles.
std::string read_as(const std::string& kind, const std::string& text, double& number) {
  const auto whole = [](uint64_t v) { return std::to_string(v); };
  if (kind == "duration") return whole(parse_duration(text));
  if (kind == "duration_ms") return whole(parse_duration(text, kMillisecond));
  if (kind == "duration_s") return whole(parse_duration(text, 1000 * kMillisecond));
  if (kind == "delay") return whole(parse_delay(text));
  if (kind == "rate") return whole(parse_rate(text));
  if (kind == "probability") return number = parse_probability(text), "number";
  if (kind == "number") {
    if (!parse_double(text, number)) throw UsageError("not a number");
    return "number";
  }
  if (kind == "whole") return whole(parse_whole_number("x", text, 0, std::numeric_limits<uint64_t>::max()));
  if (kind == "port") return whole(parse_port("x", text));
  if (kind == "bytes") return whole(parse_bytes(text, 0, kMaxQueueLimit));
  if (kind == "packets_limit") return whole(parse_queue_limit(text, LimitKind::kPackets));
  if (kind == "bytes_limit") return whole(parse_queue_limit(text, LimitKind::kBytes));
  if (kind == "queue_size") return both(parse_queue_size(text));
  ADD_FAILURE() << "unknown kind " << kind;
  return "";
}

TEST(ValueGrammar, EveryVectorOfValuesTsv) {
  const std::vector<Vector> vectors = read_vectors();
  EXPECT_GT(vectors.size(), 100u);
  for (const Vector& v : vectors) {
    SCOPED_TRACE("values.tsv:" + std::to_string(v.line) + ": " + v.kind + " '" + v.input + "'");
    double number = NAN;
    std::string got;
    try {
      got = read_as(v.kind, v.input, number);
    } catch (const OutOfRange&) {
      got = "!range";
    } catch (const UsageError&) {
      got = "!syntax";
    }
    if (got == "number" && v.expected[0] != '!') {
      const double want = std::strtod(v.expected.c_str(), nullptr);
      EXPECT_NEAR(number, want, 1e-15 * std::fabs(want));
    } else {
      EXPECT_EQ(got, v.expected);
    }
  }
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
  EXPECT_EQ(usage_error([] { parse_duration("--window", "10"); }),
            "invalid --window '10': expected a duration and a unit: ns, us, ms, s, min or h (e.g. 200ms or 1.5s)");
  EXPECT_EQ(parse_duration("--d", "2s", 0, kMillisecond * 2000), kMillisecond * 2000);
  EXPECT_EQ(usage_error([] { parse_duration("--d", "2.001s", 0, kMillisecond * 2000); }),
            "invalid --d '2.001s': longer than the largest allowed, 2 s");
  EXPECT_EQ(usage_error([] { parse_duration("--d", "99999999999999999999ns"); }),
            "invalid --d '99999999999999999999ns': more than 19 digits");
}

TEST(ParseDuration, BetweenBoundsNamedInTheirLargestUnit) {
  EXPECT_EQ(parse_duration_between("--bin", "0.001", kMillisecond, 1000, kMaxDelay), 1000);
  EXPECT_EQ(usage_error([] { parse_duration_between("--bin", "0.0009", kMillisecond, 1000, kMaxDelay); }),
            "invalid --bin '0.0009': shorter than the smallest allowed, 1 us");
  EXPECT_EQ(usage_error([] { parse_duration_between("--duration", "0.5", 1000 * kMillisecond, 1000 * kMillisecond,
                                                    86400000 * kMillisecond); }),
            "invalid --duration '0.5': shorter than the smallest allowed, 1 s");
  EXPECT_EQ(usage_error([] { parse_duration_between("--duration", "25h", 0, 1, 86400000 * kMillisecond); }),
            "invalid --duration '25h': longer than the largest allowed, 24 h");
}

// The named forms keep the class of the error: out of range stays OutOfRange, a misspelling a plain UsageError.
TEST(ParseErrors, NamedFormsKeepTheirClass) {
  EXPECT_THROW(parse_duration("--d", "1001h"), OutOfRange);
  EXPECT_THROW(parse_rate("--uplink-rate", "0mbit"), OutOfRange);
  EXPECT_THROW(parse_queue_size("queue", "0pkts"), OutOfRange);
  try {
    parse_delay("--delay", "x");
    FAIL();
  } catch (const OutOfRange&) {
    FAIL() << "a misspelling is not out of range";
  } catch (const UsageError&) {
  }
}

// tm-delay's delay: integer nanoseconds from the text, never through a double (2.007 ms was 2007001 ns).
TEST(ParseDelay, MahimahiMillisecondsExactToTheNanosecond) {
  EXPECT_EQ(parse_delay("delay", "2.007"), 2007000);
  EXPECT_EQ(format_ms(parse_delay("delay", "2.007")), "2.007");
  EXPECT_EQ(parse_delay("delay", "40"), 40 * kMillisecond);
  EXPECT_EQ(parse_delay("delay", "0.25"), 250000);
  EXPECT_EQ(parse_delay("delay", "1.5s"), 1500 * kMillisecond);
  EXPECT_EQ(parse_delay("delay", "3600000"), kMaxDelay);
  for (const char* bad : {"-5", "3600001", "abc", "", "1e2"})
    EXPECT_NE(usage_error([&] { parse_delay("delay", bad); }), "") << bad;
  EXPECT_EQ(usage_error([] { parse_delay("--uplink-delay", "x"); }),
            "invalid --uplink-delay 'x': expected a duration (a unit is optional): ns, us, ms, s, min or h (e.g. "
            "200ms or 1.5s)");
  EXPECT_EQ(usage_error([] { parse_delay("--uplink-delay", "3600001"); }),
            "invalid --uplink-delay '3600001': longer than the largest allowed, 1 h");
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

TEST(ParseErrors, AnExponentIsSaidToBeOne) {
  EXPECT_EQ(usage_error([] { parse_rate("1e30bit"); }),
            "invalid rate '1e30bit': an exponent is not allowed: expected a number and a unit: bit, kbit, mbit, gbit, "
            "kbps, mbps or gbps (e.g. 12mbit)");
  EXPECT_EQ(usage_error([] { parse_duration("--d", "2E-3s"); }),
            "invalid --d '2E-3s': an exponent is not allowed: expected a duration and a unit: ns, us, ms, s, min or h "
            "(e.g. 200ms or 1.5s)");
  EXPECT_EQ(usage_error([] { parse_bytes("--b", "1e+6", 0, 100); }),
            "invalid --b '1e+6': an exponent is not allowed: expected bytes from 0 to 100, a unit optional: B, kB, "
            "KiB, MB or MiB");
  EXPECT_EQ(usage_error([] { parse_rate("1ebit"); }).find("exponent"), std::string::npos);  // no digit after e
}

TEST(QuoteText, BytesThatAreNotPrintableAsHexCut) {
  EXPECT_EQ(quote_text("12ms"), "'12ms'");
  EXPECT_EQ(quote_text(std::string("\x1b[31m\x00\xff\n", 8)), "'\\x1b[31m\\x00\\xff\\x0a'");
  EXPECT_EQ(quote_text("abcdef", 4), "'abcd...'");
}

TEST(ParseWholeNumber, DigitsOnlyWithinTheRange) {
  EXPECT_EQ(parse_whole_number("--small", "64", 44, 65000, "bytes"), 64u);
  EXPECT_EQ(parse_whole_number("--small", "65000", 44, 65000, "bytes"), 65000u);
  for (const char* bad : {"", "43", "65001", "64.0", "1e2", "-1", "+5", "64 ", "x", "99999999999999999999"})
    EXPECT_NE(usage_error([&] { parse_whole_number("--small", bad, 44, 65000, "bytes"); }), "") << bad;
  EXPECT_EQ(usage_error([] { parse_whole_number("--small", "1.5", 44, 65000, "bytes"); }),
            "invalid --small '1.5': expected bytes from 44 to 65000");
}

TEST(ParsePort, OneTo65535NamingTheOption) {
  EXPECT_EQ(parse_port("--port", "9475"), 9475);
  EXPECT_EQ(usage_error([] { parse_port("--data-port", "70000"); }),
            "invalid --data-port '70000': expected a port from 1 to 65535");
  EXPECT_EQ(usage_error([] { parse_port("--port", "0"); }), "invalid --port '0': expected a port from 1 to 65535");
}

TEST(ParseBytes, BareOrWithAUnit) {
  EXPECT_EQ(parse_bytes("--small", "64", 1, 65000), 64u);
  EXPECT_EQ(parse_bytes("--large", "1KiB", 1, 65000), 1024u);
  EXPECT_EQ(usage_error([] { parse_bytes("--packet-size", "40", 128, 9000); }),
            "invalid --packet-size '40': expected bytes from 128 to 9000, a unit optional: B, kB, KiB, MB or MiB");
}

TEST(ParseQueueLimit, TheKeyNamesTheKind) {
  EXPECT_EQ(parse_queue_limit("--hold-packets", "1000", LimitKind::kPackets), 1000u);
  EXPECT_EQ(parse_queue_limit("--hold-bytes", "1500kB", LimitKind::kBytes), 1500000u);
  EXPECT_EQ(usage_error([] { parse_queue_limit("--hold-packets", "-3", LimitKind::kPackets); }),
            "invalid --hold-packets '-3': expected a whole number of packets (e.g. 100 or 100pkts)");
  EXPECT_EQ(usage_error([] { parse_queue_limit("--hold-bytes", "7pkts", LimitKind::kBytes); }),
            "invalid --hold-bytes '7pkts': expected a whole number of bytes (e.g. 150000, 150000B or 150kB)");
  EXPECT_EQ(usage_error([] { parse_queue_limit("--hold-bytes", "4611686018427387905", LimitKind::kBytes); }),
            "invalid --hold-bytes '4611686018427387905': a queue limit must be at most 2^62");
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
