// The one place that knows every queue discipline: it reads a queue's name and arguments and builds it.
#include "disciplines/queue_factory.hh"

#include <utility>
#include <vector>

#include "disciplines/aqm_codel.hh"
#include "disciplines/aqm_pie.hh"
#include "disciplines/aqm_red.hh"
#include "util/error.hh"
#include "util/parse.hh"

namespace tracemod {
namespace {

// The key=value pairs of one queue's arguments, checked against the keys its policy knows. Values go through
// util/parse, so they read as everywhere else: times as tm-delay's, limits as tm-onoff's and tm-modulate's.
class QueueArgs {
 public:
  QueueArgs(const std::string& option, const std::string& name, const std::string& text, std::vector<std::string> keys)
      : args_(option, name, text, std::move(keys)) {}
  bool has(const std::string& key) const { return args_.has(key); }
  // A limit of KIND (packets=1000 or 1000pkts, bytes=150000 or 150kB); 0 if absent.
  uint64_t limit(const std::string& key, LimitKind kind) const;
  // A time above 0, bare milliseconds as Mahimahi's (target=5) or with a unit (target=5ms); required.
  Nanos time(const std::string& key, const char* example) const;
  // packets= and bytes=, at least one above 0.
  QueueLimits limits() const;
  // 0 or 1 (ecn=1); false if absent.
  bool flag(const std::string& key) const;
  // A probability (0.02 or 2%) above 0, or FALLBACK if absent.
  double probability(const std::string& key, double fallback) const;
  // A number in (0, 1], or FALLBACK if absent.
  double fraction(const std::string& key, double fallback) const;
  [[noreturn]] void fail(const std::string& why) const { throw UsageError(args_.option() + ": " + args_.what() + why); }

 private:
  [[noreturn]] void bad(const std::string& key, const std::string& value, const std::string& expected) const;
  KeyValues args_;
};

void QueueArgs::bad(const std::string& key, const std::string& value, const std::string& expected) const {
  throw UsageError(args_.option() + ": bad value '" + value + "' for " + key + " (expected " + expected + ")");
}

uint64_t QueueArgs::limit(const std::string& key, LimitKind kind) const {
  const std::string* v = args_.find(key);
  return v ? parse_queue_limit(args_.name(key), *v, kind) : 0;
}

Nanos QueueArgs::time(const std::string& key, const char* example) const {
  const std::string* v = args_.find(key);
  if (!v) fail(" needs " + key + "=MS (e.g. " + key + "=" + example + ")");
  return parse_duration_between(args_.name(key), *v, kMillisecond, 1, kMaxDelay);
}

QueueLimits QueueArgs::limits() const {
  QueueLimits l{limit("packets", LimitKind::kPackets), limit("bytes", LimitKind::kBytes)};
  if (l.packets == 0 && l.bytes == 0) fail(" needs a limit: packets=N and/or bytes=N above 0 (e.g. packets=100)");
  return l;
}

bool QueueArgs::flag(const std::string& key) const {
  const std::string* v = args_.find(key);
  if (v && *v != "0" && *v != "1") bad(key, *v, "0 or 1");
  return v && *v == "1";
}

double QueueArgs::probability(const std::string& key, double fallback) const {
  const std::string* v = args_.find(key);
  if (!v) return fallback;
  const double p = parse_probability(args_.name(key), *v);
  if (p <= 0) bad(key, *v, "a probability above 0, e.g. 0.02 or 2%");
  return p;
}

double QueueArgs::fraction(const std::string& key, double fallback) const {
  const std::string* v = args_.find(key);
  return v ? parse_number(args_.name(key), *v, 1e-9, 1) : fallback;
}

// The option that names the queue: "--uplink-queue" for "--uplink-queue-args".
std::string name_option(const std::string& args_option) {
  const std::string suffix = "-args";
  if (args_option.size() > suffix.size() &&
      args_option.compare(args_option.size() - suffix.size(), suffix.size(), suffix) == 0)
    return args_option.substr(0, args_option.size() - suffix.size());
  return args_option;
}

// red's arguments: one hard limit, thresholds in its unit.
RedParams red_params(const std::string& option, const std::string& args) {
  QueueArgs a(option, "red", args, {"packets", "bytes", "min", "max", "probability", "wq", "gentle", "ecn"});
  RedParams r;
  r.limits = a.limits();
  if (r.limits.packets && r.limits.bytes)
    a.fail(" takes one hard limit, packets=N or bytes=N, whose unit min= and max= share");
  const uint64_t limit = r.limits.packets ? r.limits.packets : r.limits.bytes;
  const LimitKind kind = r.limits.packets ? LimitKind::kPackets : LimitKind::kBytes;
  if (!a.has("min") || !a.has("max")) a.fail(" needs min=N and max=N (e.g. packets=100,min=20,max=60)");
  r.min = static_cast<double>(a.limit("min", kind));  // in the hard limit's unit: min=20 or min=20pkts
  r.max = static_cast<double>(a.limit("max", kind));
  if (!(r.min < r.max) || r.max > static_cast<double>(limit))
    a.fail(" needs min < max <= the hard limit (" + std::to_string(limit) + ")");
  r.probability = a.probability("probability", r.probability);
  r.wq = a.fraction("wq", r.wq);
  r.gentle = a.flag("gentle");
  r.ecn = a.flag("ecn");
  return r;
}

}  // namespace

std::unique_ptr<QueueDiscipline> make_queue_discipline(const std::string& option, const std::string& name,
                                                       const std::string& args, RandomStream random,
                                                       uint64_t memory_limit) {
  if (name == "infinite") {
    QueueArgs a(option, name, args, {});
    return make_fifo_queue(name, {}, memory_limit);
  }
  if (name == "droptail") {
    QueueArgs a(option, name, args, {"packets", "bytes"});
    return make_fifo_queue(name, a.limits(), memory_limit);
  }
  if (name == "drophead") {
    QueueArgs a(option, name, args, {"packets", "bytes"});
    return make_fifo_queue(name, a.limits(), memory_limit);
  }
  if (name == "codel") {
    QueueArgs a(option, name, args, {"target", "interval", "packets", "bytes", "ecn"});
    const CodelParams params{a.time("target", "5"), a.time("interval", "100"), a.limits(),
                             a.flag("ecn")};
    return std::make_unique<CodelQueue>(params, memory_limit);
  }
  if (name == "pie") {
    QueueArgs a(option, name, args, {"qdelay_ref", "max_burst", "packets", "bytes", "ecn"});
    const PieParams params{a.time("qdelay_ref", "15"), a.time("max_burst", "150"), a.limits(),
                           a.flag("ecn")};
    return std::make_unique<PieQueue>(params, random, memory_limit);
  }
  if (name == "red") return std::make_unique<RedQueue>(red_params(option, args), random, memory_limit);
  throw UsageError(name_option(option) + ": unknown queue '" + name +
                   "' (expected infinite, droptail, drophead, codel, pie or red)");
}

}  // namespace tracemod
