// tm-graph's reading of link logs: both dialects, bins, the summary's arithmetic and every input error.
#include <gtest/gtest.h>

#include "analysis/link_log_reader.hh"
#include "analysis/plot_script.hh"

namespace tracemod {
namespace {

LinkLogStats read(const std::string& text, Nanos bin = 500 * kMillisecond) {
  LineReader in = LineReader::of_text(text, "log");
  return read_link_log(in, bin);
}

// The message read_link_log throws for TEXT, or "" if it reads.
std::string error_of(const std::string& text, Nanos bin = 500 * kMillisecond) {
  try {
    read(text, bin);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

const char* const kMahimahiHeader =
    "# mahimahi mm-link (Uplink) [/tmp/trace] > /tmp/log\n"
    "# command line: mm-link /tmp/trace /tmp/trace --uplink-log=/tmp/log\n"
    "# queue: infinite\n"
    "# init timestamp: 10\n"
    "# base timestamp: 12\n"
    "# mahimahi config: [link]\n";

TEST(LinkLogRead, MahimahiDialect) {
  const LinkLogStats s = read(std::string(kMahimahiHeader) +
                              "14 # 1504\n"
                              "14 + 1504\n"
                              "15 # 1504\n"
                              "15 - 1504 1\n"
                              "20 + 100\n"
                              "20 d 1 100\n"
                              "512 # 1504\n");
  EXPECT_EQ(s.first(), 2 * kMillisecond);  // relative to the base timestamp
  EXPECT_EQ(s.last(), 500 * kMillisecond);
  EXPECT_EQ(s.events(), 7u);
  EXPECT_EQ(s.totals().capacity_bytes, 3u * 1504);
  EXPECT_EQ(s.totals().arrival_bytes, 1604u);
  EXPECT_EQ(s.totals().departure_bytes, 1504u);
  EXPECT_EQ(s.totals().departures, 1u);
  EXPECT_EQ(s.totals().drop_packets, 1u);
  EXPECT_EQ(s.totals().drop_bytes, 100u);
  EXPECT_EQ(s.delays().count(), 1u);
  EXPECT_DOUBLE_EQ(s.delay_ms(0.95), 1.0);
}

TEST(LinkLogRead, TracemodDialect) {
  const LinkLogStats s = read(
      "# command line: tm-link up down --uplink-log=log\n"
      "# version: 0.1.0\n"
      "# queue: droptail packets=100\n"
      "# seed: 7\n"
      "# base timestamp: 123000.250\n"
      "123000.500 + 1500\n"
      "123000.750 # 1500\n"
      "123000.750 - 1500 0.250\n"
      "123001.000 d 2 3000\n"
      "123001.250 # 1500\n");
  EXPECT_EQ(s.first(), 250000);  // ns: 0.25 ms after the base
  EXPECT_EQ(s.last(), 1000000);
  EXPECT_EQ(s.totals().capacity_bytes, 3000u);
  EXPECT_EQ(s.totals().drop_packets, 2u);
  EXPECT_EQ(s.totals().drop_bytes, 3000u);
  EXPECT_EQ(s.totals().max_delay, 250000);
  EXPECT_DOUBLE_EQ(s.delay_ms(0.5), 0.25);
}

TEST(LinkLogRead, BlanksAndLongDecimals) {
  const LinkLogStats s = read("# base timestamp:\t0\n0\t#  1500\n1.0000009 - 1500   0.0015\n");
  EXPECT_EQ(s.last(), 1000000);  // digits beyond the nanosecond are dropped
  EXPECT_EQ(s.totals().max_delay, 1500);
  EXPECT_DOUBLE_EQ(s.delay_ms(0.5), 0.002);  // 1.5 us rounds to 2 us in the histogram
}

TEST(LinkLogBins, EventsFallIntoBinsFromTheBase) {
  const LinkLogStats s = read(
      "# base timestamp: 100\n"
      "100 # 1000\n"
      "109.999 # 1000\n"
      "110 # 1000\n"
      "125 - 500 3\n"
      "127 - 500 7\n",
      10 * kMillisecond);
  ASSERT_EQ(s.bins().size(), 3u);
  EXPECT_EQ(s.first_bin(), 0);
  EXPECT_EQ(s.bins()[0].capacity_bytes, 2000u);
  EXPECT_EQ(s.bins()[1].capacity_bytes, 1000u);
  EXPECT_EQ(s.bins()[1].departures, 0u);
  EXPECT_EQ(s.bins()[2].departures, 2u);
  EXPECT_EQ(s.bins()[2].departure_bytes, 1000u);
  EXPECT_EQ(s.bins()[2].max_delay, 7 * kMillisecond);
  EXPECT_EQ(s.bins()[2].delay_sum, 10 * kMillisecond);
}

TEST(LinkLogBins, TheSumOfDelaysStopsAtNeverRatherThanWrap) {
  // Two departures delayed by the largest time a line may hold, 9e12 ms: their sum overflowed int64
  // (undefined behaviour, found by the link-log fuzz target: fuzz/regressions/link-log/delay-sum-overflow).
  const LinkLogStats s = read("# base timestamp: 0\n1 - 1500 9000000000000\n2 - 1500 9000000000000\n");
  EXPECT_EQ(s.totals().delay_sum, kNever);
  EXPECT_EQ(s.bins()[0].delay_sum, kNever);
  EXPECT_EQ(s.totals().max_delay, 9000000000000 * kMillisecond);
}

TEST(LinkLogBins, LinesOutOfOrderGrowTheBinsBackwards) {
  const LinkLogStats s = read("# base timestamp: 0\n25 # 1500\n3 + 1500\n0 + 1\n", 10 * kMillisecond);
  ASSERT_EQ(s.bins().size(), 3u);
  EXPECT_EQ(s.first_bin(), 0);
  EXPECT_EQ(s.bins()[0].arrival_bytes, 1501u);
  EXPECT_EQ(s.bins()[2].capacity_bytes, 1500u);
  EXPECT_EQ(s.first(), 0);
  EXPECT_EQ(s.last(), 25 * kMillisecond);
}

TEST(LinkLogBins, TimesBeforeTheBaseGoToNegativeBins) {
  const LinkLogStats s = read("# base timestamp: 100\n95 + 10\n100 # 10\n", 10 * kMillisecond);
  EXPECT_EQ(s.first_bin(), -1);
  EXPECT_EQ(s.bins().size(), 2u);
  EXPECT_EQ(s.first(), -5 * kMillisecond);
}

TEST(LinkLogSummary, RatesOverFirstToLastEvent) {
  // 750000 bytes of capacity and 375000 delivered over exactly one second.
  const LinkLogStats s = read(
      "# base timestamp: 1000\n"
      "1000 # 250000\n"
      "1500 # 250000\n"
      "1500 - 250000 10\n"
      "2000 # 250000\n"
      "2000 - 125000 30\n"
      "2000 + 1500\n"
      "2000 d 1 1500\n");
  EXPECT_DOUBLE_EQ(s.capacity_mbps(), 6.0);
  EXPECT_DOUBLE_EQ(s.throughput_mbps(), 3.0);
  EXPECT_EQ(format_summary(s),
            "Average capacity: 6.00 Mbits/s\n"
            "Average throughput: 3.00 Mbits/s (50.0% utilization)\n"
            "95th percentile per-packet queueing delay: 30.000 ms\n"
            "50th percentile per-packet queueing delay: 30.000 ms\n"
            "99th percentile per-packet queueing delay: 30.000 ms\n"
            "Drops: 1 packets, 1500 bytes\n");
}

TEST(LinkLogSummary, PercentilesTakeMahimahisRank) {
  // Delays 1..100 ms: the q-th percentile is the sorted delay at 0-based index floor(q * 100).
  std::string log = "# base timestamp: 0\n";
  for (int d = 100; d >= 1; --d) log += std::to_string(1000 + d) + " - 1500 " + std::to_string(d) + "\n";
  const LinkLogStats s = read(log);
  EXPECT_DOUBLE_EQ(s.delay_ms(0.50), 51.0);
  EXPECT_DOUBLE_EQ(s.delay_ms(0.95), 96.0);
  EXPECT_DOUBLE_EQ(s.delay_ms(0.99), 100.0);
  EXPECT_DOUBLE_EQ(s.delay_ms(0.0), 1.0);
  EXPECT_DOUBLE_EQ(s.delay_ms(1.0), 100.0);  // rank capped at the last
}

TEST(LinkLogSummary, NoDeparturesAndNoCapacity) {
  const LinkLogStats s = read("# base timestamp: 0\n0 + 1500\n1000 + 1500\n1000 d 1 1500\n");
  EXPECT_EQ(format_summary(s),
            "Average capacity: 0.00 Mbits/s\n"
            "Average throughput: 0.00 Mbits/s (no delivery opportunities)\n"
            "95th percentile per-packet queueing delay: none (no packet departed)\n"
            "50th percentile per-packet queueing delay: none (no packet departed)\n"
            "99th percentile per-packet queueing delay: none (no packet departed)\n"
            "Drops: 1 packets, 1500 bytes\n");
}

TEST(LinkLogHistogram, ExactAtMicrosecondsAcrossPages) {
  DelayHistogram h;
  for (uint64_t us : {5000000u, 3u, 1024u, 1023u, 3u}) h.add(us);
  EXPECT_EQ(h.count(), 5u);
  EXPECT_EQ(h.quantile(0.0), 3u);
  EXPECT_EQ(h.quantile(0.2), 3u);
  EXPECT_EQ(h.quantile(0.4), 1023u);
  EXPECT_EQ(h.quantile(0.6), 1024u);
  EXPECT_EQ(h.quantile(0.95), 5000000u);
}

struct BadLog {
  const char* text;
  const char* error;
};

class LinkLogErrors : public testing::TestWithParam<BadLog> {};

TEST_P(LinkLogErrors, NameFileAndLine) {
  EXPECT_EQ(error_of(GetParam().text), GetParam().error);
}

INSTANTIATE_TEST_SUITE_P(
    LinkLog, LinkLogErrors,
    testing::Values(
        BadLog{"", "log: empty log"},
        BadLog{"# mahimahi mm-link (Uplink)\n# base timestamp: 3\n", "log: no events, only header lines"},
        BadLog{"# base timestamp: 3\n5 # 1504\n5 - 1504 0\n",
               "log: every event is at the same time: the log spans no time to average over"},
        BadLog{"# base timestamp: 0\n1 # 1500\n\n2 # 1500\n", "log:3: empty line"},
        BadLog{"# base timestamp: 0\r\n", "log:1: carriage return at the end of the line (CRLF line endings?)"},
        BadLog{"1 + 1500\n# base timestamp: 0\n", "log:1: event before the '# base timestamp:' line"},
        BadLog{"# base timestamp: 0\n# base timestamp: 1\n", "log:2: second base timestamp (the first is on line 1)"},
        BadLog{"# base timestamp: soon\n",
               "log:1: bad base timestamp 'soon': expected milliseconds such as 12 or 12.345"},
        BadLog{"# base timestamp: 0\n1 * 1500\n", "log:2: unknown event '*' (expected #, +, - or d)"},
        BadLog{"# base timestamp: 0\n1 ++ 1500\n",
               "log:2: expected 'TIME # BYTES', 'TIME + SIZE', 'TIME - SIZE QDELAY' or 'TIME d PACKETS BYTES'"},
        BadLog{"# base timestamp: 0\n1\n",
               "log:2: expected 'TIME # BYTES', 'TIME + SIZE', 'TIME - SIZE QDELAY' or 'TIME d PACKETS BYTES'"},
        BadLog{"# base timestamp: 0\n1 - 1500\n", "log:2: too few fields: expected 'TIME - SIZE QDELAY'"},
        BadLog{"# base timestamp: 0\n1 d 1\n", "log:2: too few fields: expected 'TIME d PACKETS BYTES'"},
        BadLog{"# base timestamp: 0\n1 + 1500 3 4\n", "log:2: too many fields: expected 'TIME + SIZE'"},
        BadLog{"# base timestamp: 0\n1 # 1500 0\n", "log:2: too many fields: expected 'TIME # BYTES'"},
        BadLog{"# base timestamp: 0\n1.2.3 + 1500\n",
               "log:2: bad time '1.2.3': expected milliseconds such as 12 or 12.345"},
        BadLog{"# base timestamp: 0\n-1 + 1500\n", "log:2: bad time '-1': expected milliseconds such as 12 or 12.345"},
        BadLog{"# base timestamp: 0\n1. + 1500\n", "log:2: bad time '1.': expected milliseconds such as 12 or 12.345"},
        BadLog{"# base timestamp: 0\n99999999999999 + 1\n",
               "log:2: bad time '99999999999999': expected milliseconds such as 12 or 12.345"},
        BadLog{"# base timestamp: 0\n1 + 1500b\n", "log:2: bad size '1500b': expected a whole number"},
        BadLog{"# base timestamp: 0\n1 - 1500 -2\n",
               "log:2: bad queueing delay '-2': expected milliseconds such as 12 or 12.345"},
        BadLog{"# base timestamp: 0\n1 d x 1500\n", "log:2: bad packet count 'x': expected a whole number"},
        BadLog{"# base timestamp: 0\n1 d 1 1e3\n", "log:2: bad byte count '1e3': expected a whole number"},
        BadLog{"# base timestamp: 0\n0 + 1\n9000000000 + 1\n",
               "log:3: the log spans more than 4194304 bins: use a wider --bin"}));

TEST(LinkLogPlotScript, HoldsBothPanelsAndTheDataInline) {
  const LinkLogStats s = read("# base timestamp: 0\n0 # 1500\n5 - 1500 2\n25 # 1500\n", 10 * kMillisecond);
  const std::string script = plot_script(s, PlotFormat::kSvg, "up \"link\"\\");
  EXPECT_NE(script.find("set terminal svg"), std::string::npos);
  EXPECT_NE(script.find("set multiplot layout 2,1 title \"up \\\"link\\\"\\\\\""), std::string::npos);
  // Bins at 0, 10, 20 ms, ending at the last event; 1500 bytes in 10 ms are 1.2 Mbit/s.
  EXPECT_NE(script.find("$bins << EOD\n"
                        "0.000000 1.2000 1.2000 2.000 2.000\n"
                        "0.010000 0.0000 0.0000 NaN NaN\n"
                        "0.020000 1.2000 0.0000 NaN NaN\n"
                        "0.025000 1.2000 0.0000 NaN NaN\n"
                        "EOD\n"),
            std::string::npos)
      << script;
  EXPECT_NE(script.find("ylabel 'throughput (Mbit/s)'"), std::string::npos);
  EXPECT_NE(script.find("ylabel 'queueing delay (ms)'"), std::string::npos);
  EXPECT_NE(plot_script(s, PlotFormat::kPng, "t").find("set terminal pngcairo"), std::string::npos);
}

TEST(LinkLogPlotScript, SeveralLogsShareOnePictureOnTheirCommonClock) {
  const LinkLogStats a = read("# base timestamp: 0\n0 # 1500\n5 - 1500 2\n", 10 * kMillisecond);
  const LinkLogStats b = read("# base timestamp: 0\n20 # 1500\n30 - 1500 1\n", 10 * kMillisecond);
  const std::string script = plot_script({&a, &b}, {"path1", "path2"}, PlotFormat::kSvg, "paths");
  for (const char* part : {"$bins0 << EOD\n", "$bins1 << EOD\n", "\"path1 delivered\"", "\"path2 capacity\"",
                           "\"path2 mean per bin\"", "set xrange [0.000000:0.030000]"})
    EXPECT_NE(script.find(part), std::string::npos) << part << " in " << script;
  EXPECT_EQ(plot_script({&a}, {"path1"}, PlotFormat::kSvg, "t"), plot_script(a, PlotFormat::kSvg, "t"));
}

TEST(LinkLogPlotScript, QuotesControlCharactersAway) {
  EXPECT_EQ(gnuplot_quote("a\nb\t\"c\""), "\"a b \\\"c\\\"\"");
}

}  // namespace
}  // namespace tracemod
