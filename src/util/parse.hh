// Values users type, on command lines, in schedules, queue arguments and trace plans: durations, rates, sizes,
// queue limits, probabilities, ports, numbers, seeds. Every tool reads them here, so "12mbit", "200ms", "64KiB" or
// "1%" mean the same thing everywhere; tm-run's Python reads them as src/run/tracemod_run/values.py does, and
// tests/data/values.tsv holds the cases both must agree on. Each parser reads the whole text. The plain forms
// throw UsageError(why) without saying where the text came from; the forms taking OPTION throw
// "invalid OPTION 'TEXT': why". A value spelled right but outside its bounds throws OutOfRange, a UsageError.
//
// Numbers are decimal: digits with at most one point ("1.5", "1.", ".5"), at most 19 digits; no sign, exponent
// or spaces except where a function says so. Durations stay integer nanoseconds from here on.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "util/clock.hh"
#include "util/error.hh"

namespace tracemod {

// A value in the grammar but outside its bounds: too large, zero where refused, more than 19 digits.
class OutOfRange : public UsageError {
 public:
  using UsageError::UsageError;
};

// TEXT as a finite decimal number, a sign and an exponent allowed ("-2.5", "1e-3"; not " 1", "0x10", "inf" or
// "nan"), with nothing after it; false if it is not one.
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
// The same, from MIN to MAX.
Nanos parse_duration_between(const std::string& option, std::string_view text, Nanos bare_unit, Nanos min, Nanos max);

// A time as Mahimahi's tools take it: milliseconds ("40", "0.25", "2.007"), or a duration with a unit ("1.5s");
// from 0 to one hour. tm-delay's delay and jitter, the AQMs' targets, tm-record's thresholds, tm-graph's bin.
constexpr Nanos kMaxDelay = 3600LL * 1000000000;
Nanos parse_delay(std::string_view text);
Nanos parse_delay(const std::string& option, std::string_view text);

// "0.01" or "1%" -> 0.01; from 0 to 1 (a percentage from 0 to 100).
double parse_probability(std::string_view text);
double parse_probability(const std::string& option, std::string_view text);

// A decimal number (parse_double's) from LOW to HIGH, e.g. a parameter of a model; UNIT names what it is.
double parse_number(const std::string& option, std::string_view text, double low, double high,
                    const std::string& unit = "a number");

// A whole number, digits only, from LOW to HIGH (e.g. a count); UNIT names what it is in the error.
uint64_t parse_whole_number(const std::string& option, std::string_view text, uint64_t low, uint64_t high,
                            const std::string& unit = "a whole number");

// A port, 1 to 65535.
uint16_t parse_port(const std::string& option, std::string_view text);

// A size in bytes: a whole number, bare or with a unit (any case): B, byte, bytes, kB, KiB, MB, MiB (k = 1000,
// Ki = 1024), e.g. "1500", "1500B", "64KiB"; from LOW to HIGH bytes.
uint64_t parse_bytes(std::string_view text, uint64_t low, uint64_t high);
uint64_t parse_bytes(const std::string& option, std::string_view text, uint64_t low, uint64_t high);

// Queue limits: one grammar everywhere (tm-link's --*-queue-args, tm-onoff's --hold-*, tm-modulate's queue=).
// A limit is a whole number and a unit: packets as 7pkts (also pkt, packet, packets), bytes as parse_bytes's
// units; units in any case. At most kMaxQueueLimit.
constexpr uint64_t kMaxQueueLimit = uint64_t{1} << 62;
//
// A limit of one kind, where the option or key names the kind (packets=, bytes=, --hold-packets): the unit is
// optional and must be of that kind ("1000" or "1000pkts"; "150000", "150000B" or "150kB"). 0 is no limit.
enum class LimitKind { kPackets, kBytes };
uint64_t parse_queue_limit(std::string_view text, LimitKind kind);
uint64_t parse_queue_limit(const std::string& option, std::string_view text, LimitKind kind);
//
// Both kinds in one value, where no key names them (queue=): "7pkts", "150000B", or one of each joined by a
// comma ("7pkts,150000B"); the unit required, each above 0; "unlimited" sets none. A field left 0 has no limit
// of that kind. (tm-link's arguments separate items by commas, so there each kind has its own key instead.)
struct QueueSize {
  uint64_t packets = 0, bytes = 0;
};
QueueSize parse_queue_size(std::string_view text);
QueueSize parse_queue_size(const std::string& option, std::string_view text);
// " packets=100 bytes=150000" for the limits that are set (empty if none), as log headers and -v print them.
std::string describe_queue_size(const QueueSize& size);
// Milliseconds as the user wrote them: "5", "2.5", "0.125", "2.007" (exact to the nanosecond).
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
