// Values users type, on command lines and in schedule files: numbers, rates, durations, probabilities, seeds.
// Every tool reads them here, so "12mbit", "200ms" or "1%" mean the same thing everywhere. Each parser reads
// the whole text. The plain forms throw UsageError(why) without saying where the text came from; the forms
// taking OPTION throw "invalid OPTION 'TEXT': why".
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "util/clock.hh"

namespace tracemod {

// TEXT as a finite decimal number (std::stod's syntax), with nothing after it; false if it is not one.
bool parse_double(const std::string& text, double& out);

// "12mbit" -> 12000000. Units (any case): bit, kbit, mbit, gbit, and kbps, mbps, gbps, which here also mean
// bits (not bytes, unlike tc). A decimal point is allowed ("1.5mbit"); the result is rounded to the nearest
// bit/s. A unit is required, zero is refused.
uint64_t parse_rate(std::string_view text);
uint64_t parse_rate(const std::string& option, std::string_view text);
// The largest rate parse_rate accepts (1000 Gbit/s): a 1500-byte opportunity every 12 ns.
constexpr uint64_t kMaxRate = 1000ull * 1000 * 1000 * 1000;

// "10s", "200ms", "1.5s", "250us", "2min" -> nanoseconds, rounded up to the next whole one (a delay is never
// shorter than asked). Units (any case): ns, us, ms, s, min, h. A bare number is in BARE_UNIT (e.g.
// kMillisecond where Mahimahi's forms give milliseconds), or refused if BARE_UNIT is 0. At most MAX.
constexpr Nanos kMaxDuration = 1000LL * 3600 * 1000000000;  // 1000 hours
Nanos parse_duration(std::string_view text, Nanos bare_unit = 0, Nanos max = kMaxDuration);
Nanos parse_duration(const std::string& option, std::string_view text, Nanos bare_unit = 0, Nanos max = kMaxDuration);

// A delay in milliseconds as Mahimahi's tools take it ("40", "0.25"), or with a unit ("1.5s"): from 0 to
// one hour. Returns milliseconds.
double parse_milliseconds(const std::string& option, const std::string& text);

// "0.01" or "1%" -> 0.01; from 0 to 1.
double parse_probability(std::string_view text);
double parse_probability(const std::string& option, std::string_view text);

// A decimal number from LOW to HIGH, e.g. a parameter of a model; UNIT names what it is in the error.
double parse_number(const std::string& option, std::string_view text, double low, double high,
                    const std::string& unit = "a number");

// A whole decimal number from LOW to HIGH (e.g. a size in bytes); UNIT names what it is in the error.
uint64_t parse_whole_number(const std::string& option, std::string_view text, uint64_t low, uint64_t high,
                            const std::string& unit = "a whole number");

// A queue limit: "7pkts" (also pkt, packet, packets), "150000B" (also byte, bytes, kB, KiB, MB, MiB: k = 1000,
// Ki = 1024), or one of each joined by a comma ("7pkts,150000B"); units in any case, whole numbers above 0.
// "unlimited" sets no limit. A field left 0 has no limit of that kind.
struct QueueSize {
  uint64_t packets = 0, bytes = 0;
};
QueueSize parse_queue_size(std::string_view text);
QueueSize parse_queue_size(const std::string& option, std::string_view text);
// " packets=100 bytes=150000" for the limits that are set (empty if none), as log headers and -v print them.
std::string describe_queue_size(const QueueSize& size);
// Milliseconds as the user wrote them: "5", "2.5", "0.125".
std::string format_ms(Nanos t);

// An unsigned 64-bit --seed.
uint64_t parse_seed(const std::string& text);

// A comma-separated KEY=VALUE list, as users write the arguments of a model or a queue ("p=1%, r=10%"; spaces
// around items allowed). Unknown, repeated and malformed items throw UsageError naming OPTION and WHAT (the
// model or queue the list belongs to), e.g. "--uplink-loss: unknown key 'q' for gilbert (expected p, r, h, k)".
// With no KEYS, any text but blanks is an error ("WHAT takes no arguments").
class KeyValues {
 public:
  KeyValues(const std::string& option, const std::string& what, const std::string& text,
            std::vector<std::string> known);
  // The value given for KEY (trimmed), or null.
  const std::string* find(const std::string& key) const;
  bool has(const std::string& key) const { return find(key) != nullptr; }
  // How a value's error names it: "OPTION (WHAT KEY=)".
  std::string name(const std::string& key) const { return option_ + " (" + what_ + " " + key + "=)"; }
  const std::string& option() const { return option_; }
  const std::string& what() const { return what_; }
  // "a, b, c": the keys WHAT knows.
  std::string keys() const;

 private:
  std::string option_, what_;
  std::vector<std::string> keys_;
  std::vector<std::pair<std::string, std::string>> items_;
};

}  // namespace tracemod
