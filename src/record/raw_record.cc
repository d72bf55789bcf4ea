#include "record/raw_record.hh"

#include <algorithm>
#include <cstdio>

#include "util/error.hh"

namespace tracemod::record {
namespace {

std::string seconds_text(Nanos t) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.3f s", static_cast<double>(t) / 1e9);
  return buf;
}

// True if the header named no format (an older record: every entry is then checked for unknown fields).
bool check_header(const std::string& path, const Header& h) {
  const bool strict = check_raw_header(path, h, h.kind(), h.format_version(), kRawRecordKind);
  if (h.direction() != "up" && h.direction() != "down")
    throw UsageError(path + ": the header's direction " + quote_text(h.direction()) + " is neither up nor down");
  if (h.ip_packet_bytes() < kMinPacketBytes || h.ip_packet_bytes() > kMaxPacketBytes)
    throw UsageError(path + ": the header's packet size " + std::to_string(h.ip_packet_bytes()) + " is outside " +
                     std::to_string(kMinPacketBytes) + ".." + std::to_string(kMaxPacketBytes) + " bytes");
  return strict;
}

// The arrivals so far: the first one's receive time and the latest.
struct Arrivals {
  bool any = false;
  Nanos first = 0, latest = 0;
};

void check_packet(const std::string& path, uint64_t n, const Packet& p, Arrivals& a) {
  if (p.send_ns() < 0 || p.recv_ns() < 0)
    throw bad_entry(path, n,
                    "a negative time (sent at " + std::to_string(p.send_ns()) + " ns, received at " +
                        std::to_string(p.recv_ns()) + " ns)");
  if (p.send_ns() > kMaxTime || p.recv_ns() > kMaxTime)
    throw bad_entry(path, n,
                    "a time past 2^62 ns (sent at " + std::to_string(p.send_ns()) + " ns, received at " +
                        std::to_string(p.recv_ns()) + " ns)");
  if (p.size() == 0 || p.size() > kMaxIpBytes)
    throw bad_entry(path, n,
                    "size " + std::to_string(p.size()) + " is not that of an IP packet (1 to " +
                        std::to_string(kMaxIpBytes) + " bytes)");
  if (!a.any) a = {true, p.recv_ns(), p.recv_ns()};
  if (p.recv_ns() < a.latest - kMaxStepBack)
    throw bad_entry(path, n,
                    "received " + seconds_text(a.latest - p.recv_ns()) +
                        " before an earlier entry: arrivals are recorded in time order (to within " +
                        seconds_text(kMaxStepBack) + ")");
  if (p.recv_ns() - a.first > kMaxRecording)
    throw bad_entry(path, n,
                    "received " + seconds_text(p.recv_ns() - a.first) +
                        " after the first arrival: a recording lasts at most " + seconds_text(kMaxRecording));
  a.latest = std::max(a.latest, p.recv_ns());
}

}  // namespace

uint64_t read_raw(const std::string& path, const std::function<void(const RawEntry&)>& visit) {
  RawEntry entry;
  bool strict = false;
  Arrivals arrivals;
  const uint64_t n = read_delimited(path, entry, "tm-record raw entry", [&](uint64_t i) {
    if (i == 1) {
      if (!entry.has_header()) throw UsageError(path + ": not a " + kRawRecordKind + " (no header)");
      strict = check_header(path, entry.header());
    } else if (entry.has_header()) {
      throw bad_entry(path, i, "a second header");
    }
    if (entry.entry_case() == RawEntry::ENTRY_NOT_SET) throw bad_entry(path, i, "neither a packet nor a footer");
    if (strict && has_unknown_fields(entry)) throw bad_entry(path, i, "fields unknown to a tm-record raw entry");
    if (entry.has_packet()) check_packet(path, i, entry.packet(), arrivals);
    visit(entry);
  });
  if (n == 0) throw UsageError(path + ": not a " + std::string(kRawRecordKind) + " (no header)");
  return n;
}

}  // namespace tracemod::record
