#include "record/recorder.hh"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>

namespace tracemod::record {
namespace {

// The estimated missed opportunities, as a share of what the link offered (recorded + missed).
double missed_share(const ArrivalStats& s) {
  const double missed = s.shortfall().missed();
  return missed > 0 ? missed / (static_cast<double>(s.packets()) + missed) : 0;
}

}  // namespace

void DelayHistogram::add(Nanos d) {
  const size_t bin = d <= 0 ? 0 : std::min<size_t>(static_cast<size_t>(d / kMillisecond), kBins - 1);
  ++(*bins_)[bin];
  ++count_;
}

Nanos DelayHistogram::percentile(double p) const {
  if (count_ == 0) return 0;
  const uint64_t rank =
      std::max<uint64_t>(1, static_cast<uint64_t>(std::ceil(p / 100.0 * static_cast<double>(count_))));
  uint64_t seen = 0;
  for (size_t i = 0; i < kBins; ++i) {
    seen += (*bins_)[i];
    if (seen >= rank) return static_cast<Nanos>(i) * kMillisecond + kMillisecond / 2;
  }
  return static_cast<Nanos>(kBins) * kMillisecond;
}

void ArrivalStats::add(uint64_t seq, Nanos send, Nanos recv, uint32_t size, uint64_t* lost_before, bool* late) {
  *lost_before = 0;
  *late = false;
  if (seq >= next_seq_) {
    *lost_before = seq - next_seq_;
    lost_ += *lost_before;
    next_seq_ = seq + 1;
  } else if (lost_ > 0) {
    *late = true;  // presumed lost when a later one came; here it is
    --lost_;
  }
  const DryQueue::Arrival arrival = dry_.add(send, recv);
  shortfall_.add(recv, arrival);
  if (packets_ == 0) first_ = recv;
  last_ = packets_ == 0 ? recv : std::max(last_, recv);
  last_qdelay_ = arrival.qdelay;
  delays_.add(last_qdelay_);
  ++packets_;
  bytes_ += size;
}

Recorder::Recorder(const RecorderOptions& options)
    : options_(options),
      trace_(options.prefix + (options.up ? ".up" : ".down")),
      raw_(options.prefix + (options.up ? ".up.raw" : ".down.raw")) {
  RawEntry entry;
  Header* h = entry.mutable_header();
  h->set_format_version(1);
  h->set_kind(kRawRecordKind);
  h->set_tool_version(options.tool_version);
  h->set_direction(direction());
  h->set_ip_packet_bytes(options.ip_packet_bytes);
  h->set_ipv6(options.ipv6);
  timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  h->set_start_unix_ns(static_cast<int64_t>(now.tv_sec) * 1000000000 + now.tv_nsec);
  h->set_duration_ns(options.duration);
  raw_.write(entry);
  raw_.flush();
}

Nanos Recorder::end_time() const {
  if (!started() || options_.duration <= 0) return kNever;
  return stats_.first() + options_.duration;
}

bool Recorder::on_arrival(uint64_t seq, Nanos send, Nanos recv, uint32_t size) {
  if (finished_) return false;
  if (started() && recv >= end_time()) return false;
  RawEntry entry;
  Packet* p = entry.mutable_packet();
  uint64_t lost_before = 0;
  bool late = false;
  stats_.add(seq, send, recv, size, &lost_before, &late);
  p->set_seq(seq);
  p->set_send_ns(send);
  p->set_recv_ns(recv);
  p->set_size(size);
  p->set_lost_before(lost_before);
  p->set_late(late);
  raw_.write(entry);
  trace_.add(recv);
  return true;
}

std::string Recorder::finish(const std::string& reason) {
  if (finished_) return {};
  finished_ = true;
  stats_.finish();
  RawEntry entry;
  Footer* f = entry.mutable_footer();
  f->set_packets(stats_.packets());
  f->set_lost(stats_.lost());
  f->set_first_recv_ns(stats_.first());
  f->set_last_recv_ns(stats_.last());
  f->set_reason(reason);
  raw_.write(entry);
  raw_.close();
  const bool traced = trace_.finish();
  std::string line = describe(direction(), stats_, options_.ip_packet_bytes) + " (" + reason + "); ";
  line += traced ? "trace " + trace_.path() + " (" + std::to_string(trace_.lines()) + " opportunities)"
                 : "no packet arrived, so no trace";
  const std::string warning = shortfall_warning(stats_);
  return line + ", raw " + raw_.path() + (warning.empty() ? "" : "\n" + warning);
}

std::string describe(const std::string& direction, const ArrivalStats& s, uint32_t ip_packet_bytes) {
  const double secs = s.packets() > 1 ? static_cast<double>(s.last() - s.first()) / 1e9 : 0;
  const double mbps = secs > 0 ? static_cast<double>(s.packets()) * ip_packet_bytes * 8 / secs / 1e6 : 0;
  const double loss = s.expected() ? 100.0 * static_cast<double>(s.lost()) / static_cast<double>(s.expected()) : 0;
  char buf[320];
  std::snprintf(buf, sizeof buf,
                "%s: %.2f s, %llu packets, %.2f Mbit/s, loss %.2f%% (%llu of %llu), queueing delay p50 %.0f ms p95 "
                "%.0f ms",
                direction.c_str(), secs, static_cast<unsigned long long>(s.packets()), mbps, loss,
                static_cast<unsigned long long>(s.lost()), static_cast<unsigned long long>(s.expected()),
                static_cast<double>(s.delays().percentile(50)) / 1e6,
                static_cast<double>(s.delays().percentile(95)) / 1e6);
  const ShortfallEstimate& dry = s.shortfall();
  if (dry.moments() == 0) return std::string(buf) + ", queue never ran dry";
  std::snprintf(buf + std::strlen(buf), sizeof buf - std::strlen(buf),
                ", queue ran dry %llu times (about %.0f opportunities missed, %.2f%%)",
                static_cast<unsigned long long>(dry.moments()), dry.missed(), 100 * missed_share(s));
  return buf;
}

std::string shortfall_warning(const ArrivalStats& s) {
  if (missed_share(s) <= kShortfallWarning) return {};
  char buf[400];
  std::snprintf(buf, sizeof buf,
                "warning: the queue ran dry %llu times while the link could deliver: the trace misses about %.0f of "
                "its opportunities (%.1f%%); a deeper queue (--profile lte, a larger --low-delay) or a sender held "
                "back less (--max-rate, a busy machine) would have caught them",
                static_cast<unsigned long long>(s.shortfall().moments()), s.shortfall().missed(),
                100 * missed_share(s));
  return buf;
}

}  // namespace tracemod::record
