#include "packet/queue_discipline.hh"

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "packet/aqm_codel.hh"
#include "packet/aqm_pie.hh"
#include "util/error.hh"

namespace tracemod {

namespace {

bool within(const QueueLimits& limits, uint64_t packets, uint64_t bytes) {
  return (limits.packets == 0 || packets <= limits.packets) && (limits.bytes == 0 || bytes <= limits.bytes);
}

}  // namespace

void QueueDiscipline::push(QueuedPacket&& p) {
  packets_ += p.segments;
  bytes_ += p.ip_bytes;
  memory_ += p.packet.buf.capacity();
  queue_.push_back(std::move(p));
}

QueuedPacket QueueDiscipline::pop() {
  QueuedPacket p = queue_.pop_front();
  packets_ -= p.segments;
  bytes_ -= p.ip_bytes;
  memory_ -= p.packet.buf.capacity();
  return p;
}

bool QueueDiscipline::take(QueuedPacket& out) {
  if (queue_.empty()) return false;
  out = pop();
  return true;
}

bool QueueDiscipline::fits(const QueueLimits& limits, const QueuedPacket& p) const {
  return !over_memory(p) && within(limits, packets_ + p.segments, bytes_ + p.ip_bytes);
}

std::string describe_limits(const QueueLimits& limits) {
  std::string s;
  if (limits.packets) s += " packets=" + std::to_string(limits.packets);
  if (limits.bytes) s += " bytes=" + std::to_string(limits.bytes);
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

namespace {

// Never drops by policy; only the memory bound applies.
class InfiniteQueue : public QueueDiscipline {
 public:
  using QueueDiscipline::QueueDiscipline;
  void enqueue(QueuedPacket&& p, Nanos now, DropSink& drops) override {
    if (over_memory(p)) return drops.dropped(std::move(p), now);
    push(std::move(p));
  }
  bool dequeue(QueuedPacket& out, Nanos, DropSink&) override { return take(out); }
  bool takes_whole(const QueuedPacket& p) const override { return !over_memory(p); }
  std::string describe() const override { return "infinite"; }
};

// droptail and drophead: FIFOs with limits, which take a GSO frame whole when it fits without a drop.
class LimitedQueue : public QueueDiscipline {
 public:
  LimitedQueue(const char* name, const QueueLimits& limits, uint64_t memory_limit)
      : QueueDiscipline(memory_limit), limits_(limits), name_(name) {}
  bool dequeue(QueuedPacket& out, Nanos, DropSink&) override { return take(out); }
  bool takes_whole(const QueuedPacket& p) const override { return fits(limits_, p); }
  std::string describe() const override { return name_ + describe_limits(limits_); }

 protected:
  const QueueLimits limits_;

 private:
  const std::string name_;
};

// Drops the arrival when it would exceed a limit.
class DropTailQueue : public LimitedQueue {
 public:
  DropTailQueue(const QueueLimits& limits, uint64_t memory_limit) : LimitedQueue("droptail", limits, memory_limit) {}
  void enqueue(QueuedPacket&& p, Nanos now, DropSink& drops) override {
    if (!fits(limits_, p)) return drops.dropped(std::move(p), now);
    push(std::move(p));
  }
};

// Drops from the head until the arrival fits. An arrival that could not fit even alone is dropped itself
// (emptying the queue for it would not help).
class DropHeadQueue : public LimitedQueue {
 public:
  DropHeadQueue(const QueueLimits& limits, uint64_t memory_limit) : LimitedQueue("drophead", limits, memory_limit) {}
  void enqueue(QueuedPacket&& p, Nanos now, DropSink& drops) override {
    if (over_memory(p) || !within(limits_, p.segments, p.ip_bytes)) return drops.dropped(std::move(p), now);
    while (!fits(limits_, p)) drops.dropped(pop(), now);
    push(std::move(p));
  }
};

// --- Parsing --uplink-queue-args ---

std::string trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t") - b + 1);
}

std::string join(const std::vector<std::string>& keys) {
  std::string s;
  for (const std::string& k : keys) s += (s.empty() ? "" : ", ") + k;
  return s;
}

// The key=value pairs of one queue's arguments, checked against the keys its policy knows.
class QueueArgs {
 public:
  QueueArgs(const std::string& option, const std::string& name, const std::string& text, std::vector<std::string> keys);
  bool has(const std::string& key) const { return find(key) != nullptr; }
  // A whole number (packets=, bytes=); 0 if absent.
  uint64_t count(const std::string& key) const;
  // Milliseconds above 0 (fractions allowed), required.
  Nanos milliseconds(const std::string& key, const char* example) const;
  // packets= and bytes=, at least one above 0.
  QueueLimits limits() const;

 private:
  const std::string* find(const std::string& key) const;
  [[noreturn]] void bad(const std::string& key, const std::string& value, const std::string& expected) const;
  std::string option_, name_;
  std::vector<std::string> keys_;
  std::vector<std::pair<std::string, std::string>> args_;
};

QueueArgs::QueueArgs(const std::string& option, const std::string& name, const std::string& text,
                     std::vector<std::string> keys)
    : option_(option), name_(name), keys_(std::move(keys)) {
  if (trim(text).empty()) return;
  if (keys_.empty()) throw UsageError(option_ + ": " + name_ + " takes no arguments (got '" + text + "')");
  size_t start = 0, comma = 0;
  do {
    comma = text.find(',', start);
    const std::string item = trim(text.substr(start, comma == std::string::npos ? comma : comma - start));
    start = comma + 1;
    const size_t eq = item.find('=');
    const std::string key = trim(item.substr(0, eq));
    if (eq == std::string::npos || key.empty())
      throw UsageError(option_ + ": '" + item + "' is not KEY=VALUE (keys for " + name_ + ": " + join(keys_) + ")");
    if (std::find(keys_.begin(), keys_.end(), key) == keys_.end())
      throw UsageError(option_ + ": unknown key '" + key + "' for " + name_ + " (expected " + join(keys_) + ")");
    if (has(key)) throw UsageError(option_ + ": key '" + key + "' given twice");
    args_.emplace_back(key, trim(item.substr(eq + 1)));
  } while (comma != std::string::npos);
}

const std::string* QueueArgs::find(const std::string& key) const {
  for (const auto& kv : args_)
    if (kv.first == key) return &kv.second;
  return nullptr;
}

void QueueArgs::bad(const std::string& key, const std::string& value, const std::string& expected) const {
  throw UsageError(option_ + ": bad value '" + value + "' for " + key + " (expected " + expected + ")");
}

uint64_t QueueArgs::count(const std::string& key) const {
  const std::string* v = find(key);
  if (!v) return 0;
  const bool digits = !v->empty() && v->size() <= 15 && v->find_first_not_of("0123456789") == std::string::npos;
  if (!digits) bad(key, *v, "a whole number below 10^15, 0 for no limit");
  return std::stoull(*v);
}

Nanos QueueArgs::milliseconds(const std::string& key, const char* example) const {
  const std::string* v = find(key);
  if (!v) throw UsageError(option_ + ": " + name_ + " needs " + key + "=MS (e.g. " + key + "=" + example + ")");
  const size_t dot = v->find('.');
  const std::string whole = v->substr(0, dot), frac = dot == std::string::npos ? "" : v->substr(dot + 1);
  const bool form = (!whole.empty() || !frac.empty()) && (dot == std::string::npos || !frac.empty()) &&
                    (whole + frac).find_first_not_of("0123456789") == std::string::npos && whole.size() <= 8;
  const double ms = form ? std::stod("0" + *v) : -1;
  const Nanos t = static_cast<Nanos>(std::llround(ms * 1e6));
  if (!form || t <= 0 || ms > 3.6e6)
    bad(key, *v, std::string("milliseconds above 0 and at most 3600000, e.g. ") + example + " or 2.5");
  return t;
}

QueueLimits QueueArgs::limits() const {
  QueueLimits l{count("packets"), count("bytes")};
  if (l.packets == 0 && l.bytes == 0)
    throw UsageError(option_ + ": " + name_ + " needs a limit: packets=N and/or bytes=N above 0 (e.g. packets=100)");
  return l;
}

// The option that names the queue: "--uplink-queue" for "--uplink-queue-args".
std::string name_option(const std::string& args_option) {
  const std::string suffix = "-args";
  if (args_option.size() > suffix.size() &&
      args_option.compare(args_option.size() - suffix.size(), suffix.size(), suffix) == 0)
    return args_option.substr(0, args_option.size() - suffix.size());
  return args_option;
}

}  // namespace

std::unique_ptr<QueueDiscipline> make_queue_discipline(const std::string& option, const std::string& name,
                                                       const std::string& args, RandomStream random,
                                                       uint64_t memory_limit) {
  if (name == "infinite") {
    QueueArgs a(option, name, args, {});
    return std::make_unique<InfiniteQueue>(memory_limit);
  }
  if (name == "droptail") {
    QueueArgs a(option, name, args, {"packets", "bytes"});
    return std::make_unique<DropTailQueue>(a.limits(), memory_limit);
  }
  if (name == "drophead") {
    QueueArgs a(option, name, args, {"packets", "bytes"});
    return std::make_unique<DropHeadQueue>(a.limits(), memory_limit);
  }
  if (name == "codel") {
    QueueArgs a(option, name, args, {"target", "interval", "packets", "bytes"});
    const CodelParams params{a.milliseconds("target", "5"), a.milliseconds("interval", "100"), a.limits()};
    return std::make_unique<CodelQueue>(params, memory_limit);
  }
  if (name == "pie") {
    QueueArgs a(option, name, args, {"qdelay_ref", "max_burst", "packets", "bytes"});
    const PieParams params{a.milliseconds("qdelay_ref", "15"), a.milliseconds("max_burst", "150"), a.limits()};
    return std::make_unique<PieQueue>(params, random, memory_limit);
  }
  throw UsageError(name_option(option) + ": unknown queue '" + name +
                   "' (expected infinite, droptail, drophead, codel or pie)");
}

}  // namespace tracemod
