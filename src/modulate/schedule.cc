#include "modulate/schedule.hh"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

#include "channel/loss_model.hh"
#include "util/error.hh"

namespace tracemod::modulate {
namespace {

constexpr double kMaxByteCost = 1e9;  // us per byte: 8 bit/s, slower than any link worth emulating
constexpr Nanos kMaxStateDuration = 1000LL * 3600 * 1000000000;
const char* const kKeys = "delay, rate, residual, loss, queue or off";

std::vector<std::string> words(const std::string& line) {
  std::vector<std::string> w;
  std::istringstream in(line.substr(0, line.find('#')));
  for (std::string word; in >> word;) w.push_back(word);
  return w;
}

std::string format_number(double v) {
  std::ostringstream s;
  s.precision(9);
  s << v;
  return s.str();
}

// ns per byte from a rate ("9600bit"), or 0 for "unlimited".
double cost_of_rate(const std::string& key, const std::string& value) {
  if (value == "unlimited") return 0;
  return 8e9 / static_cast<double>(parse_rate(key, value));
}

Outage parse_off(const std::string& value) {
  if (value == "drop") return Outage::kDrop;
  if (value == "hold") return Outage::kHold;
  throw UsageError("invalid off " + quote_text(value) + ": expected off, off=drop or off=hold");
}

// One key=value of a keyed line, into S.
void apply_key(State& s, const std::string& key, const std::string& value) {
  if (key == "delay")
    s.delay = parse_duration(key, value, kMillisecond);
  else if (key == "rate")
    s.byte_cost = cost_of_rate(key, value);
  else if (key == "residual")
    s.residual_cost = cost_of_rate(key, value);
  else if (key == "loss") {
    make_loss_model(key, value, RandomStream(0, 0));  // a bad model is refused here, not when the shell runs
    s.loss = value;
  } else if (key == "queue")
    s.queue = parse_queue_size(key, value);
  else if (key == "off")
    s.off = parse_off(value);
  else
    throw UsageError("unknown key " + quote_text(key) + ": expected " + kKeys);
}

// "DURATION [key=value...] [off]", on top of the state before (PREVIOUS).
State keyed_line(const std::vector<std::string>& w, const State& previous) {
  State s = previous;
  s.off = Outage::kNone;
  s.duration = parse_duration("duration", w[0], kMillisecond, kMaxStateDuration);
  std::vector<std::string> seen;
  for (size_t i = 1; i < w.size(); ++i) {
    const size_t eq = w[i].find('=');
    const std::string key = w[i].substr(0, eq);
    if (eq == std::string::npos && key != "off") throw UsageError("'" + w[i] + "' is not key=value: expected " + kKeys);
    if (std::find(seen.begin(), seen.end(), key) != seen.end()) throw UsageError("'" + key + "' is given twice");
    seen.push_back(key);
    apply_key(s, key, eq == std::string::npos ? "drop" : w[i].substr(eq + 1));
  }
  return s;
}

// "d F Vb Vr L", Noble's units; the queue limit stays the previous state's.
State tuple_line(const std::vector<std::string>& w, const State& previous) {
  State s;
  s.queue = previous.queue;
  s.duration = parse_duration("d", w[0], kMillisecond, kMaxStateDuration);
  s.delay = parse_duration("F", w[1], kMillisecond);
  s.byte_cost = 1000 * parse_number("Vb", w[2], 0, kMaxByteCost, "microseconds per byte");
  s.residual_cost = 1000 * parse_number("Vr", w[3], 0, kMaxByteCost, "microseconds per byte");
  parse_number("L", w[4], 0, 1, "a loss fraction");
  s.loss = w[4];
  return s;
}

bool is_tuple(const std::vector<std::string>& w) {
  return w.size() == 5 && std::none_of(w.begin(), w.end(), [](const std::string& x) {
           return x.find('=') != std::string::npos || x == "off";
         });
}

}  // namespace

std::string State::describe() const {
  std::ostringstream s;
  s << "F=" << format_number(static_cast<double>(delay) / 1e6) << " Vb=" << format_number(byte_cost / 1000)
    << " Vr=" << format_number(residual_cost / 1000) << " L=" << loss << " queue=";
  if (queue.packets == 0 && queue.bytes == 0) s << "unlimited";
  if (queue.packets) s << queue.packets << "pkts" << (queue.bytes ? "," : "");
  if (queue.bytes) s << queue.bytes << "B";
  s << " off=" << (off == Outage::kNone ? "no" : off == Outage::kDrop ? "drop" : "hold");
  return s.str();
}

Schedule Schedule::load(const std::string& path) {
  LineReader in(path);
  return read(in);
}

Schedule Schedule::parse(const std::string& text, const std::string& name) {
  LineReader in = LineReader::of_text(text, name);
  return read(in);
}

Schedule Schedule::read(LineReader& in) {
  Schedule s;
  s.name_ = in.name();
  State previous;
  for (std::string_view text; in.next(text);) {
    std::string line(text);
    std::replace(line.begin(), line.end(), '\r', ' ');
    const std::vector<std::string> w = words(line);
    if (w.empty()) continue;
    try {
      State st = is_tuple(w) ? tuple_line(w, previous) : keyed_line(w, previous);
      if (st.duration <= 0) throw UsageError("a state must last longer than 0");
      st.line = in.line_number();
      s.add(st);
      previous = st;
    } catch (const UsageError& e) {
      in.fail(e.what());
    }
  }
  if (s.states_.empty())
    throw UsageError(s.name_ + ": no state: expected lines 'd F Vb Vr L' or 'DURATION key=value...'");
  s.finish();
  return s;
}

void Schedule::add(State st) {
  begins_.push_back(period_);
  if (period_ > kMaxDuration - st.duration) throw UsageError("the schedule is longer than 1000 hours");
  period_ += st.duration;
  states_.push_back(std::move(st));
}

void Schedule::finish() {
  bool carries = false;
  for (const State& st : states_) {
    drops_in_outages_ = drops_in_outages_ || st.off == Outage::kDrop;
    if (st.off != Outage::kNone) continue;
    carries = true;
    bytes_per_period_ +=
        st.byte_cost == 0 ? std::numeric_limits<double>::infinity() : static_cast<double>(st.duration) / st.byte_cost;
  }
  if (!carries) throw UsageError(name_ + ": every state is off: the link would never carry anything");
}

Timeline::Timeline(std::shared_ptr<const Schedule> schedule, Nanos start, bool once)
    : schedule_(std::move(schedule)), start_(start), end_(once ? start + schedule_->period() : kNever) {}

Timeline::Segment Timeline::at(Nanos t) const {
  if (t >= end_) return {kNone, end_, kNever};
  const Nanos since = std::max<Nanos>(t - start_, 0);
  const Nanos period = schedule_->period();
  const Nanos loop_start = start_ + since / period * period, offset = since % period;
  const auto& states = schedule_->states();
  size_t lo = 0, hi = states.size() - 1;  // the last state beginning at or before OFFSET
  while (lo < hi) {
    const size_t mid = (lo + hi + 1) / 2;
    if (schedule_->begin(mid) <= offset)
      lo = mid;
    else
      hi = mid - 1;
  }
  const Nanos begin = loop_start + schedule_->begin(lo);
  return {lo, begin, begin + states[lo].duration};
}

}  // namespace tracemod::modulate
