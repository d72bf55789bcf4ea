// tm-graph --json: the numbers tm-run reads instead of parsing link logs itself.
#include <gtest/gtest.h>

#include "analysis/json_report.hh"

namespace tracemod {
namespace {

std::string json_of(const std::string& log, Nanos bin = 500 * kMillisecond) {
  LineReader in = LineReader::of_text(log, "a \"log\"");
  return format_json(read_link_log(in, bin), "a \"log\"");
}

TEST(GraphJson, SummaryAndColumns) {
  const std::string j = json_of(
      "# base timestamp: 0\n"
      "0 # 1500\n"
      "0 + 1500\n"
      "2 - 1500 2\n"
      "600 # 1500\n"
      "700 + 1500\n"
      "700 d 1 1500\n"
      "1000 # 1500\n");
  EXPECT_NE(j.find("\"log\": \"a \\\"log\\\"\","), std::string::npos) << j;
  EXPECT_NE(j.find("\"bin_ms\": 500.000,"), std::string::npos) << j;
  EXPECT_NE(j.find("\"events\": 7,"), std::string::npos) << j;
  EXPECT_NE(j.find("\"end_ms\": 1000.000,"), std::string::npos) << j;
  // 3 x 1500 bytes over 1 s and 1 x 1500 delivered.
  EXPECT_NE(j.find("\"capacity_mbps\": 0.036000,"), std::string::npos) << j;
  EXPECT_NE(j.find("\"throughput_mbps\": 0.012000,"), std::string::npos) << j;
  EXPECT_NE(j.find("\"utilization\": 0.333333,"), std::string::npos) << j;
  EXPECT_NE(j.find("\"delay_ms\": {\"p50\": 2.000, \"p95\": 2.000, \"p99\": 2.000},"), std::string::npos) << j;
  EXPECT_NE(j.find("\"drops\": {\"packets\": 1, \"bytes\": 1500},"), std::string::npos) << j;
  // Bins of 500 ms: [0, 500), [500, 1000), [1000, 1500).
  EXPECT_NE(j.find("\"start_ms\": [0.000, 500.000, 1000.000]"), std::string::npos) << j;
  EXPECT_NE(j.find("\"capacity_mbps\": [0.024000, 0.024000, 0.024000]"), std::string::npos) << j;
  EXPECT_NE(j.find("\"throughput_mbps\": [0.024000, 0.000000, 0.000000]"), std::string::npos) << j;
  EXPECT_NE(j.find("\"mean_delay_ms\": [2.000, null, null]"), std::string::npos) << j;
  EXPECT_NE(j.find("\"drop_packets\": [0, 1, 0]"), std::string::npos) << j;
}

TEST(GraphJson, NoDeparturesNoOpportunities) {
  const std::string j = json_of("# base timestamp: 0\n0 + 100\n10 + 100\n");
  EXPECT_NE(j.find("\"utilization\": null,"), std::string::npos) << j;
  EXPECT_NE(j.find("\"delay_ms\": null,"), std::string::npos) << j;
}

TEST(GraphJson, StringEscapes) {
  EXPECT_EQ(json_string("a\\b\n\x01"), "\"a\\\\b\\n\\u0001\"");
}

TEST(GraphJson, Utf8PassesAndOtherBytesAreReplacementCharacters) {
  EXPECT_EQ(json_string("\xc3\xa9 \xe2\x82\xac \xf0\x9f\x93\xa1"), "\"\xc3\xa9 \xe2\x82\xac \xf0\x9f\x93\xa1\"");
  // A lone continuation byte, 0xff, an overlong '/', a surrogate, a sequence cut short at the end.
  EXPECT_EQ(json_string("\x80\xff\xc0\xaf\xed\xa0\x80\xe2\x82"),
            "\"\\ufffd\\ufffd\\ufffd\\ufffd\\ufffd\\ufffd\\ufffd\\ufffd\\ufffd\"");
}

}  // namespace
}  // namespace tracemod
