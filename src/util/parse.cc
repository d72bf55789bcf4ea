#include "util/parse.hh"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <sstream>
#include <stdexcept>

#include "util/error.hh"

namespace tracemod {
namespace {

using Wide = unsigned __int128;    // products of mantissas and units overflow 64 bits
constexpr size_t kMaxDigits = 19;  // keeps every product below 2^128
constexpr size_t kMaxQuoted = 40;  // of a bad value in a message

std::string lower(std::string_view text) {
  std::string s(text);
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string quoted(std::string_view text) {
  std::string out;
  for (unsigned char c : text.substr(0, kMaxQuoted)) out += std::isprint(c) ? static_cast<char>(c) : '?';
  return "'" + out + (text.size() > kMaxQuoted ? "...'" : "'");
}

// "DIGITS[.DIGITS]" at the start of TEXT: the digits as one integer and 10^(digits after the point). Digits past
// the 19th are counted but not kept: too_long() refuses them once the rest of the value is known to be right.
struct Decimal {
  Wide mantissa = 0, scale = 1;
  size_t digits = 0, used = 0;
  bool point = false;
  bool too_long() const { return digits > kMaxDigits; }
  bool whole() const { return digits > 0 && !point; }
};

Decimal leading_decimal(std::string_view text) {
  Decimal d;
  for (; d.used < text.size(); ++d.used) {
    const char c = text[d.used];
    if (c == '.' && !d.point) {
      d.point = true;
    } else if (c >= '0' && c <= '9') {
      if (++d.digits > kMaxDigits) continue;
      d.mantissa = d.mantissa * 10 + static_cast<unsigned>(c - '0');
      if (d.point) d.scale *= 10;
    } else {
      break;
    }
  }
  return d;
}

// Whether TEXT goes on after D's digits with an exponent ("1e30bit", "2E-3s"): the grammar has none, and an error
// saying "expected a number" would puzzle whoever wrote one, so such errors say so.
bool exponent_after(std::string_view text, const Decimal& d) {
  size_t i = d.used;
  if (d.digits == 0 || i >= text.size() || (text[i] != 'e' && text[i] != 'E')) return false;
  if (++i < text.size() && (text[i] == '+' || text[i] == '-')) ++i;
  return i < text.size() && text[i] >= '0' && text[i] <= '9';
}

// "an exponent is not allowed: " where exponent_after(TEXT, D), to go before what was expected.
std::string no_exponent(std::string_view text, const Decimal& d) {
  return exponent_after(text, d) ? "an exponent is not allowed: " : "";
}

// Throws E again with MESSAGE, keeping its class (OutOfRange or a plain UsageError).
[[noreturn]] void rethrow(const UsageError& e, const std::string& message) {
  if (dynamic_cast<const OutOfRange*>(&e)) throw OutOfRange(message);
  throw UsageError(message);
}

template <typename F>
auto naming(const std::string& option, std::string_view text, F parse) -> decltype(parse()) {
  try {
    return parse();
  } catch (const UsageError& e) {
    rethrow(e, "invalid " + option + " " + quoted(text) + ": " + e.what());
  }
}

struct Unit {
  const char* name;
  uint64_t scale;
};
constexpr Unit kRateUnits[] = {{"bit", 1},     {"kbit", 1000},    {"mbit", 1000000},   {"gbit", 1000000000},
                               {"kbps", 1000}, {"mbps", 1000000}, {"gbps", 1000000000}};
constexpr Unit kPacketUnits[] = {{"pkt", 1}, {"pkts", 1}, {"packet", 1}, {"packets", 1}};
constexpr Unit kByteUnits[] = {{"b", 1},      {"byte", 1},     {"bytes", 1},    {"kb", 1000},
                               {"kib", 1024}, {"mb", 1000000}, {"mib", 1048576}};
constexpr Unit kTimeUnits[] = {{"ns", 1},         {"us", 1000},         {"ms", 1000000},
                               {"s", 1000000000}, {"min", 60000000000}, {"h", 3600000000000}};

template <size_t N>
const Unit* find_unit(const Unit (&units)[N], const std::string& name) {
  const Unit* u = std::find_if(std::begin(units), std::end(units), [&](const Unit& x) { return name == x.name; });
  return u == std::end(units) ? nullptr : u;
}

// "2 s", "1 h", "250 us": T in the largest unit that divides it, for messages.
std::string format_duration(Nanos t) {
  auto u = std::rbegin(kTimeUnits);
  while (t % static_cast<Nanos>(u->scale) != 0) ++u;  // ns, the last, divides everything
  return std::to_string(t / static_cast<Nanos>(u->scale)) + " " + u->name;
}

Nanos duration_in(std::string_view text, Nanos bare_unit, Nanos min, Nanos max) {
  const Decimal d = leading_decimal(text);
  const std::string unit = lower(text.substr(d.used));
  const Unit* u = unit.empty() ? nullptr : find_unit(kTimeUnits, unit);
  const Wide scale = u ? u->scale : static_cast<Wide>(bare_unit);
  if (d.digits == 0 || scale == 0 || (!u && !unit.empty()))
    throw UsageError(no_exponent(text, d) + "expected a duration" +
                     (bare_unit ? " (a unit is optional)" : " and a unit") +
                     ": ns, us, ms, s, min or h (e.g. 200ms or 1.5s)");
  if (d.too_long()) throw OutOfRange("more than 19 digits");
  const Wide ns = (d.mantissa * scale + d.scale - 1) / d.scale;  // rounded up: never shorter than asked
  if (ns > static_cast<Wide>(max)) throw OutOfRange("longer than the largest allowed, " + format_duration(max));
  if (ns < static_cast<Wide>(min)) throw OutOfRange("shorter than the smallest allowed, " + format_duration(min));
  return static_cast<Nanos>(ns);
}

// A whole number of units: D times SCALE, from LOW to HIGH; OutOfRange(WHY) otherwise.
uint64_t scaled_whole(const Decimal& d, uint64_t scale, uint64_t low, uint64_t high, const std::string& why) {
  const Wide n = d.mantissa * scale;
  if (d.too_long() || n < low || n > high) throw OutOfRange(why);
  return static_cast<uint64_t>(n);
}

std::string range_text(uint64_t low, uint64_t high) {
  return " from " + std::to_string(low) + " to " + (high == kMaxQueueLimit ? "2^62" : std::to_string(high));
}

// The scale of UNIT (lower case) as a limit of KIND: 1 for a bare number, 0 for a unit of the other kind.
uint64_t limit_scale(const std::string& unit, LimitKind kind) {
  if (unit.empty()) return 1;
  const Unit* u = kind == LimitKind::kPackets ? find_unit(kPacketUnits, unit) : find_unit(kByteUnits, unit);
  return u ? u->scale : 0;
}

// One limit of parse_queue_size ("7pkts", "150kB"), into its field of Q.
void add_queue_limit(std::string_view term, QueueSize& q, const char* expected) {
  const Decimal d = leading_decimal(term);
  const std::string unit = lower(term.substr(d.used));
  const bool packets = find_unit(kPacketUnits, unit) != nullptr;
  uint64_t& field = packets ? q.packets : q.bytes;
  const uint64_t scale = unit.empty() ? 0 : limit_scale(unit, packets ? LimitKind::kPackets : LimitKind::kBytes);
  if (!d.whole() || scale == 0 || field != 0) throw UsageError(expected);
  field = scaled_whole(d, scale, 1, kMaxQueueLimit, "a queue limit must be" + range_text(1, kMaxQueueLimit));
}

}  // namespace

// A strict decimal grammar first: strtod alone would also take spaces, hex, "inf" and "nan".
bool parse_double(const std::string& text, double& out) {
  size_t i = 0;
  const auto sign = [&] { i += i < text.size() && (text[i] == '+' || text[i] == '-'); };
  const auto digits = [&] {
    const size_t from = i;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) ++i;
    return i - from;
  };
  sign();
  size_t n = digits();
  if (i < text.size() && text[i] == '.') {
    ++i;
    n += digits();
  }
  if (n == 0) return false;
  if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    ++i;
    sign();
    if (digits() == 0) return false;
  }
  if (i != text.size()) return false;
  const double v = std::strtod(text.c_str(), nullptr);  // ERANGE ignored: underflow gives 0, overflow inf
  if (!std::isfinite(v)) return false;
  out = v;
  return true;
}

uint64_t parse_rate(std::string_view text) {
  const Decimal d = leading_decimal(text);
  const Unit* u = find_unit(kRateUnits, lower(text.substr(d.used)));
  if (d.digits == 0 || !u)
    throw UsageError("invalid rate " + quoted(text) + ": " + no_exponent(text, d) +
                     "expected a number and a unit: bit, kbit, mbit, gbit, kbps, mbps or gbps (e.g. 12mbit)");
  if (d.too_long()) throw OutOfRange("invalid rate " + quoted(text) + ": more than 19 digits");
  const Wide bits = (d.mantissa * u->scale + d.scale / 2) / d.scale;  // to the nearest bit/s
  if (bits == 0) throw OutOfRange("invalid rate " + quoted(text) + ": must be at least 1 bit/s");
  if (bits > kMaxRate) throw OutOfRange("invalid rate " + quoted(text) + ": above the largest rate, 1000gbit");
  return static_cast<uint64_t>(bits);
}

uint64_t parse_rate(const std::string& option, std::string_view text) {
  try {
    return parse_rate(text);
  } catch (const UsageError& e) {
    rethrow(e, option + ": " + e.what());
  }
}

Nanos parse_duration(std::string_view text, Nanos bare_unit, Nanos max) {
  return duration_in(text, bare_unit, 0, max);
}

Nanos parse_duration(const std::string& option, std::string_view text, Nanos bare_unit, Nanos max) {
  return naming(option, text, [&] { return duration_in(text, bare_unit, 0, max); });
}

Nanos parse_duration_between(const std::string& option, std::string_view text, Nanos bare_unit, Nanos min,
                             Nanos max) {
  return naming(option, text, [&] { return duration_in(text, bare_unit, min, max); });
}

Nanos parse_delay(std::string_view text) {
  return duration_in(text, kMillisecond, 0, kMaxDelay);
}

Nanos parse_delay(const std::string& option, std::string_view text) {
  return naming(option, text, [&] { return parse_delay(text); });
}

double parse_probability(std::string_view text) {
  const char* const expected = "expected a probability from 0 to 1, or a percentage (e.g. 0.01 or 1%)";
  const bool percent = !text.empty() && text.back() == '%';
  double v = -1;
  if (!parse_double(std::string(percent ? text.substr(0, text.size() - 1) : text), v)) throw UsageError(expected);
  if (!(v >= 0 && v <= (percent ? 100 : 1))) throw OutOfRange(expected);
  return percent ? v / 100 : v;
}

double parse_probability(const std::string& option, std::string_view text) {
  return naming(option, text, [&] { return parse_probability(text); });
}

double parse_number(const std::string& option, std::string_view text, double low, double high,
                    const std::string& unit) {
  std::ostringstream s;
  s << "invalid " << option << " " << quoted(text) << ": expected " << unit << " from " << low << " to " << high;
  double v = NAN;
  if (!parse_double(std::string(text), v)) throw UsageError(s.str());
  if (!(v >= low && v <= high)) throw OutOfRange(s.str());
  return v;
}

uint64_t parse_whole_number(const std::string& option, std::string_view text, uint64_t low, uint64_t high,
                            const std::string& unit) {
  const std::string why = "invalid " + option + " " + quoted(text) + ": expected " + unit + range_text(low, high);
  const Decimal d = leading_decimal(text);
  if (!d.whole() || d.used != text.size()) throw UsageError(why);
  return scaled_whole(d, 1, low, high, why);
}

uint16_t parse_port(const std::string& option, std::string_view text) {
  return static_cast<uint16_t>(parse_whole_number(option, text, 1, 65535, "a port"));
}

uint64_t parse_bytes(std::string_view text, uint64_t low, uint64_t high) {
  const Decimal d = leading_decimal(text);
  const std::string why =
      no_exponent(text, d) + "expected bytes" + range_text(low, high) + ", a unit optional: B, kB, KiB, MB or MiB";
  const uint64_t scale = limit_scale(lower(text.substr(d.used)), LimitKind::kBytes);
  if (!d.whole() || scale == 0) throw UsageError(why);
  return scaled_whole(d, scale, low, high, why);
}

uint64_t parse_bytes(const std::string& option, std::string_view text, uint64_t low, uint64_t high) {
  return naming(option, text, [&] { return parse_bytes(text, low, high); });
}

uint64_t parse_queue_limit(std::string_view text, LimitKind kind) {
  const bool packets = kind == LimitKind::kPackets;
  const Decimal d = leading_decimal(text);
  const uint64_t scale = limit_scale(lower(text.substr(d.used)), kind);
  if (!d.whole() || scale == 0)
    throw UsageError(packets ? "expected a whole number of packets (e.g. 100 or 100pkts)"
                             : "expected a whole number of bytes (e.g. 150000, 150000B or 150kB)");
  return scaled_whole(d, scale, 0, kMaxQueueLimit, "a queue limit must be at most 2^62");
}

uint64_t parse_queue_limit(const std::string& option, std::string_view text, LimitKind kind) {
  return naming(option, text, [&] { return parse_queue_limit(text, kind); });
}

QueueSize parse_queue_size(std::string_view text) {
  const char* const expected =
      "expected packets or bytes, or both joined by a comma (e.g. 7pkts, 150000B or 7pkts,150000B), or unlimited";
  QueueSize q;
  if (lower(text) == "unlimited") return q;
  for (std::string_view rest = text;;) {
    const size_t comma = rest.find(',');
    add_queue_limit(rest.substr(0, comma), q, expected);
    if (comma == std::string_view::npos) return q;
    rest = rest.substr(comma + 1);
  }
}

QueueSize parse_queue_size(const std::string& option, std::string_view text) {
  return naming(option, text, [&] { return parse_queue_size(text); });
}

uint64_t parse_seed(const std::string& text) {
  size_t used = 0;
  unsigned long long v = 0;
  try {
    v = std::stoull(text, &used, 10);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || text.empty() || !std::isdigit(static_cast<unsigned char>(text[0])))
    throw UsageError("invalid --seed '" + text + "': expected an unsigned 64-bit integer");
  return v;
}

namespace {

std::string trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t") - b + 1);
}

}  // namespace

KeyValues::KeyValues(const std::string& option, const std::string& what, const std::string& text,
                     std::vector<std::string> known)
    : option_(option), what_(what), keys_(std::move(known)) {
  if (trim(text).empty()) return;
  if (keys_.empty()) throw UsageError(option_ + ": " + what_ + " takes no arguments (got '" + text + "')");
  size_t start = 0, comma = 0;
  do {
    comma = text.find(',', start);
    const std::string item = trim(text.substr(start, comma == std::string::npos ? comma : comma - start));
    start = comma + 1;
    const size_t eq = item.find('=');
    const std::string key = trim(item.substr(0, eq));
    if (eq == std::string::npos || key.empty())
      throw UsageError(option_ + ": '" + item + "' is not KEY=VALUE (keys for " + what_ + ": " + keys() + ")");
    if (std::find(keys_.begin(), keys_.end(), key) == keys_.end())
      throw UsageError(option_ + ": unknown key '" + key + "' for " + what_ + " (expected " + keys() + ")");
    if (has(key)) throw UsageError(option_ + ": key '" + key + "' given twice");
    items_.emplace_back(key, trim(item.substr(eq + 1)));
  } while (comma != std::string::npos);
}

const std::string* KeyValues::find(const std::string& key) const {
  for (const auto& kv : items_)
    if (kv.first == key) return &kv.second;
  return nullptr;
}

std::string KeyValues::keys() const {
  std::string s;
  for (const std::string& k : keys_) s += (s.empty() ? "" : ", ") + k;
  return s;
}

std::string describe_queue_size(const QueueSize& size) {
  std::string s;
  if (size.packets) s += " packets=" + std::to_string(size.packets);
  if (size.bytes) s += " bytes=" + std::to_string(size.bytes);
  return s;
}

std::string format_ms(Nanos t) {
  std::string s = std::to_string(t / kMillisecond);
  const Nanos frac = t % kMillisecond;
  if (frac == 0) return s;
  std::string digits = std::to_string(kMillisecond + frac).substr(1);  // six digits, leading zeros kept
  digits.erase(digits.find_last_not_of('0') + 1);
  return s + "." + digits;
}

}  // namespace tracemod
