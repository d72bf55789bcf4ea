#include "probe/distill.hh"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <optional>
#include <sstream>

#include "probe/probe.pb.h"
#include "probe/prober.hh"
#include "util/delimited.hh"
#include "util/error.hh"
#include "util/parse.hh"

namespace tracemod::probe {
namespace {

constexpr Nanos kMaxTime = Nanos{1} << 62;

// One triplet's solution of the model.
struct Estimate {
  Nanos at;  // when its small echo was sent
  double delay, byte_cost, residual_cost;
};

using Triplet = std::array<const EchoRecord*, 3>;

double rtt(const EchoRecord& e) {
  return static_cast<double>(e.recv - e.send);
}

// F, Vb, Vr from a complete triplet; nullopt if any is negative.
std::optional<Estimate> solve(const Triplet& t) {
  const double s1 = t[0]->size, s2 = t[1]->size;
  const double v = (rtt(*t[1]) - rtt(*t[0])) / (2 * (s2 - s1));
  const Estimate e{t[0]->send, rtt(*t[0]) / 2 - s1 * v, static_cast<double>(t[2]->recv - t[1]->recv) / s2, 0};
  Estimate r = e;
  r.residual_cost = v - e.byte_cost;
  if (r.delay < 0 || r.byte_cost < 0 || r.residual_cost < 0) return std::nullopt;
  return r;
}

// Noble's correction: BASE's Vb and Vr, and its F moved by the mean difference between the round trips observed
// and those BASE predicts (one-way: half of it). BASE is always a valid triplet's estimate, so a correction is
// never built on another (and since F is re-derived from BASE's own prediction, none accumulates).
Estimate correct(const Triplet& t, const Estimate& base) {
  const double s1 = t[0]->size, s2 = t[1]->size, v = base.byte_cost + base.residual_cost;
  const double gap = static_cast<double>(t[2]->send - t[1]->send);
  const double expected[3] = {2 * (base.delay + s1 * v), 2 * (base.delay + s2 * v),
                              2 * (base.delay + s2 * v) + s2 * base.byte_cost - gap};
  double diff = 0;
  for (int i = 0; i < 3; ++i) diff += rtt(*t[i]) - expected[i];
  return {t[0]->send, std::max(0.0, base.delay + diff / 3 / 2), base.byte_cost, base.residual_cost};
}

std::vector<Estimate> estimate(const std::vector<EchoRecord>& echoes, Distilled& d) {
  std::map<uint64_t, Triplet> triplets;
  for (const EchoRecord& e : echoes) {
    Triplet& t = triplets.try_emplace(e.triplet, Triplet{nullptr, nullptr, nullptr}).first->second;
    if (e.index < 3) t[e.index] = &e;
  }
  d.triplets = triplets.size();
  std::vector<Estimate> out;
  std::optional<Estimate> base;  // the last valid triplet's: never a corrected one, so corrections do not cascade
  for (const auto& [n, t] : triplets) {
    if (!std::all_of(t.begin(), t.end(), [](const EchoRecord* e) { return e && e->replied; })) continue;
    if (t[1]->size != t[2]->size || t[1]->size <= t[0]->size) continue;
    ++d.complete;
    if (const auto e = solve(t)) {
      out.push_back(*e);
      base = e;
    } else if (base) {
      out.push_back(correct(t, *base));
      ++d.corrected;
    } else {
      ++d.unusable;
    }
  }
  return out;
}

double middle(std::vector<double>& v, bool mean) {
  if (mean) {
    double sum = 0;
    for (double x : v) sum += x;
    return sum / static_cast<double>(v.size());
  }
  const auto mid = v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2);
  std::nth_element(v.begin(), mid, v.end());
  if (v.size() % 2) return *mid;
  return (*mid + *std::max_element(v.begin(), mid)) / 2;
}

// The average of the estimates in [LO, HI) (sorted by time), through the cursor FIRST; false if there are none.
bool average(const std::vector<Estimate>& es, size_t& first, Nanos lo, Nanos hi, bool mean, Tuple& t) {
  while (first < es.size() && es[first].at < lo) ++first;
  std::vector<double> f, vb, vr;
  for (size_t i = first; i < es.size() && es[i].at < hi; ++i) {
    f.push_back(es[i].delay);
    vb.push_back(es[i].byte_cost);
    vr.push_back(es[i].residual_cost);
  }
  if (f.empty()) return false;
  t.delay = static_cast<Nanos>(std::llround(middle(f, mean)));
  t.byte_cost = middle(vb, mean);
  t.residual_cost = middle(vr, mean);
  return true;
}

// L from the echoes sent in [LO, HI) (sorted by send time): a sent, b answered, b = (1-L)^2 a.
bool loss(const std::vector<EchoRecord>& echoes, size_t& first, Nanos lo, Nanos hi, double& l) {
  while (first < echoes.size() && echoes[first].send < lo) ++first;
  uint64_t a = 0, b = 0;
  for (size_t i = first; i < echoes.size() && echoes[i].send < hi; ++i) ++a, b += echoes[i].replied;
  if (a == 0) return false;
  l = 1 - std::sqrt(static_cast<double>(b) / static_cast<double>(a));
  return true;
}

}  // namespace

Distilled distill(std::vector<EchoRecord> echoes, const DistillConfig& c) {
  Distilled d;
  std::sort(echoes.begin(), echoes.end(), [](const EchoRecord& x, const EchoRecord& y) { return x.send < y.send; });
  std::vector<Estimate> es = estimate(echoes, d);
  if (es.empty())
    throw UsageError("no triplet with all three echoes answered and a valid solution: nothing to estimate delays from");
  std::sort(es.begin(), es.end(), [](const Estimate& x, const Estimate& y) { return x.at < y.at; });
  const Nanos t0 = echoes.front().send;
  const uint64_t steps = static_cast<uint64_t>((echoes.back().send - t0) / c.step) + 1;
  if (steps > kMaxWindows)
    throw UsageError("the echoes span " + format_ms(echoes.back().send - t0) + " ms (sent from " + format_ms(t0) +
                     " to " + format_ms(echoes.back().send) + " ms of CLOCK_MONOTONIC): " + std::to_string(steps) +
                     " windows of " + format_ms(c.step) + " ms, more than " + std::to_string(kMaxWindows) +
                     " (a longer --step makes fewer)");
  if (steps > static_cast<uint64_t>(kMaxDuration / c.step))
    throw UsageError("the echoes span " + format_ms(echoes.back().send - t0) + " ms: a schedule of " +
                     std::to_string(steps) + " steps of " + format_ms(c.step) + " ms would last more than 1000 hours");
  size_t first_estimate = 0, first_echo = 0, leading_empty = 0;
  for (size_t i = 0; i < steps; ++i) {
    const Nanos center = t0 + static_cast<Nanos>(i) * c.step + c.step / 2;
    const Nanos lo = center - c.window / 2, hi = center + c.window / 2;
    Tuple t = d.tuples.empty() ? Tuple{} : d.tuples.back();  // an empty window keeps what the one before had
    t.duration = c.step;
    if (!average(es, first_estimate, lo, hi, c.mean, t)) {
      ++d.empty_windows;
      if (d.tuples.empty() || leading_empty == d.tuples.size()) ++leading_empty;
    }
    loss(echoes, first_echo, lo, hi, t.loss);
    d.tuples.push_back(t);
  }
  // Windows before the first estimate take the first window's delays.
  for (size_t i = 0; i < leading_empty && leading_empty < d.tuples.size(); ++i) {
    const Tuple& first = d.tuples[leading_empty];
    d.tuples[i].delay = first.delay;
    d.tuples[i].byte_cost = first.byte_cost;
    d.tuples[i].residual_cost = first.residual_cost;
  }
  return d;
}

namespace {

struct Record {
  Header header;
  std::vector<EchoRecord> echoes;
  bool ended = false;
};

// True if the header named no format (an older record: every entry is then checked for unknown fields).
bool check_header(const std::string& path, const Header& h) {
  const bool strict = check_raw_header(path, h, h.kind(), h.format_version(), kRawRecordKind);
  if (h.method() != "icmp-ping-socket" && h.method() != "icmp-raw-socket" && h.method() != "udp")
    throw UsageError(path + ": the header's method " + quote_text(h.method()) +
                     " is none of icmp-ping-socket, icmp-raw-socket and udp");
  if (h.small_bytes() == 0 || h.small_bytes() >= h.large_bytes() || h.large_bytes() > EchoSocket::kMaxSize)
    throw UsageError(path + ": the header's sizes " + std::to_string(h.small_bytes()) + " and " +
                     std::to_string(h.large_bytes()) + " are not S1 < S2 <= " + std::to_string(EchoSocket::kMaxSize));
  if (h.interval_ns() <= 0 || h.timeout_ns() <= 0)
    throw UsageError(path + ": the header's interval and timeout are not both positive");
  return strict;
}

void check_echo(const std::string& path, uint64_t n, const Echo& e) {
  if (e.index() > 2) throw bad_entry(path, n, "echo index " + std::to_string(e.index()) + " is not 0, 1 or 2");
  if (e.size() == 0 || e.size() > EchoSocket::kMaxSize)
    throw bad_entry(
        path, n,
        "size " + std::to_string(e.size()) + " is outside 1.." + std::to_string(EchoSocket::kMaxSize) + " bytes");
  if (e.send_ns() < 0 || (e.replied() && e.recv_ns() < 0))
    throw bad_entry(path, n,
                    "a negative time (sent at " + std::to_string(e.send_ns()) + " ns, answered at " +
                        std::to_string(e.recv_ns()) + " ns)");
  // CLOCK_MONOTONIC times up to 2^62 ns (146 years), so that no difference of two overflows.
  if (e.send_ns() > kMaxTime || (e.replied() && e.recv_ns() > kMaxTime))
    throw bad_entry(path, n,
                    "a time past 2^62 ns (sent at " + std::to_string(e.send_ns()) + " ns, answered at " +
                        std::to_string(e.recv_ns()) + " ns)");
}

Record read_record(const std::string& path) {
  Record r;
  ProbeEntry entry;
  bool strict = false;
  const std::string no_header = path + ": not a " + kRawRecordKind + " (no header)";
  const uint64_t n = read_delimited(path, entry, "tm-probe raw entry", [&](uint64_t i) {
    if (i == 1) {
      if (!entry.has_header()) throw UsageError(no_header);
      strict = check_header(path, entry.header());
      r.header = entry.header();
    } else if (entry.has_header()) {
      throw bad_entry(path, i, "a second header");
    }
    if (entry.entry_case() == ProbeEntry::ENTRY_NOT_SET) throw bad_entry(path, i, "neither an echo nor a footer");
    if (strict && has_unknown_fields(entry)) throw bad_entry(path, i, "fields unknown to a tm-probe raw entry");
    if (entry.has_footer()) r.ended = true;
    if (!entry.has_echo()) return;
    const Echo& e = entry.echo();
    check_echo(path, i, e);
    r.echoes.push_back(
        {e.seq(), e.triplet(), e.index(), e.size(), e.send_ns(), e.recv_ns(), e.replied(), e.send_kernel()});
  });
  if (n == 0) throw UsageError(no_header);
  return r;
}

template <typename F>
std::vector<double> series(const std::vector<Tuple>& ts, F f) {
  std::vector<double> v;
  for (const Tuple& t : ts) v.push_back(f(t));
  std::sort(v.begin(), v.end());
  return v;
}

// "mean M, p5 A, p50 B, p95 C" (nearest rank) of V (sorted).
std::string stats(const std::vector<double>& v, int precision) {
  double mean = 0;
  for (double x : v) mean += x / static_cast<double>(v.size());
  auto at = [&](double q) {  // nearest rank
    const size_t rank = std::max<size_t>(1, static_cast<size_t>(std::ceil(q * static_cast<double>(v.size()))));
    return v[std::min(rank, v.size()) - 1];
  };
  std::ostringstream s;
  s.setf(std::ios::fixed);
  s.precision(precision);
  s << "mean " << mean << ", p5 " << at(0.05) << ", p50 " << at(0.5) << ", p95 " << at(0.95);
  return s.str();
}

void write_schedule(const std::string& path, const Record& r, const std::string& raw, const Distilled& d,
                    const DistillConfig& c) {
  FILE* f = std::fopen(path.c_str(), "we");
  if (!f) throw UsageError(path + ": cannot open for writing: " + std::strerror(errno));
  const Header& h = r.header;
  Nanos t0 = 0;
  for (const EchoRecord& e : r.echoes) t0 = t0 == 0 ? e.send : std::min(t0, e.send);
  std::fprintf(f, "# tm-probe distill: a replay schedule for tm-modulate, Noble's tuples d F Vb Vr L\n");
  std::fprintf(f, "# from %s: %s (%s) by %s, S1 %u and S2 %u IP bytes, a triplet every %.6g s, %zu echoes%s\n",
               raw.c_str(), h.target().c_str(), h.address().c_str(), h.method().c_str(), h.small_bytes(),
               h.large_bytes(), static_cast<double>(h.interval_ns()) / 1e9, r.echoes.size(),
               r.ended ? "" : " (the record has no end: the prober was killed)");
  std::fprintf(f,
               "# a sliding window of %.6g s (the %s of its estimates), one line per %.6g s step; time 0 is the first "
               "echo, sent at %.6f ms of CLOCK_MONOTONIC\n",
               static_cast<double>(c.window) / 1e9, c.mean ? "mean" : "median", static_cast<double>(c.step) / 1e9,
               static_cast<double>(t0) / 1e6);
  std::fprintf(f, "# d(ms) F(ms) Vb(us/B) Vr(us/B) L\n");
  for (const Tuple& t : d.tuples)
    std::fprintf(f, "%.3f %.6f %.6f %.6f %.6f\n", static_cast<double>(t.duration) / 1e6,
                 static_cast<double>(t.delay) / 1e6, t.byte_cost / 1000, t.residual_cost / 1000, t.loss);
  const bool failed = std::ferror(f) != 0;
  if (std::fclose(f) != 0 || failed) throw Error("write " + path + ": " + std::strerror(errno));
}

}  // namespace

std::string distill_file(const std::string& raw, const std::string& out, const DistillConfig& c) {
  const Record r = read_record(raw);
  Distilled d;
  try {
    d = distill(r.echoes, c);
  } catch (const UsageError& e) {
    throw UsageError(raw + ": " + e.what());
  }
  write_schedule(out, r, raw, d, c);
  std::ostringstream s;
  s << "tm-probe distill: " << out << ": " << d.tuples.size() << " windows (" << d.empty_windows << " without a "
    << "complete triplet), " << d.triplets << " triplets (" << d.complete << " complete, " << d.corrected
    << " corrected, " << d.unusable << " unusable)\n"
    << "  F (ms): " << stats(series(d.tuples, [](const Tuple& t) { return static_cast<double>(t.delay) / 1e6; }), 3)
    << "\n"
    << "  bandwidth 1/Vb (kbit/s): "
    << stats(series(d.tuples, [](const Tuple& t) { return t.byte_cost > 0 ? 8e6 / t.byte_cost : INFINITY; }), 1) << "\n"
    << "  L (%): " << stats(series(d.tuples, [](const Tuple& t) { return 100 * t.loss; }), 2);
  return s.str();
}

std::string print_file(const std::string& raw) {
  Record r = read_record(raw);
  std::sort(r.echoes.begin(), r.echoes.end(), [](const EchoRecord& a, const EchoRecord& b) { return a.seq < b.seq; });
  const Header& h = r.header;
  std::ostringstream s;
  s << "# target " << h.target() << " (" << h.address() << ") by " << h.method() << ", S1 " << h.small_bytes()
    << ", S2 " << h.large_bytes() << ", interval " << static_cast<double>(h.interval_ns()) / 1e9 << " s, timeout "
    << static_cast<double>(h.timeout_ns()) / 1e9 << " s, tm-probe " << h.tool_version()
    << (r.ended ? "" : ", no end (the prober was killed)") << "\n"
    << "# seq triplet index size send_ms recv_ms send_clock\n";
  s.setf(std::ios::fixed);
  s.precision(6);
  for (const EchoRecord& e : r.echoes) {
    s << e.seq << " " << e.triplet << " " << e.index << " " << e.size << " " << static_cast<double>(e.send) / 1e6
      << " ";
    if (e.replied)
      s << static_cast<double>(e.recv) / 1e6;
    else
      s << "-";
    s << (e.kernel_send ? " kernel" : " user") << "\n";
  }
  return s.str();
}

std::string default_schedule_path(const std::string& raw) {
  const std::string suffix = ".raw";
  const bool has = raw.size() > suffix.size() && raw.compare(raw.size() - suffix.size(), suffix.size(), suffix) == 0;
  return (has ? raw.substr(0, raw.size() - suffix.size()) : raw) + ".sched";
}

}  // namespace tracemod::probe
