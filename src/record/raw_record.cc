#include "record/raw_record.hh"

#include "link/trace.hh"
#include "util/error.hh"

namespace tracemod::record {

uint64_t read_raw(const std::string& path, const std::function<void(const RawEntry&)>& visit) {
  RawEntry entry;
  bool any = false;
  Nanos first = 0;  // the first arrival's receive time
  const uint64_t n = read_delimited(path, entry, "tm-record raw entry", [&](uint64_t i) {
    if (i == 1 && !entry.has_header()) throw UsageError(path + ": not a tm-record raw record (no header)");
    if (entry.has_packet()) {
      const Packet& p = entry.packet();
      if (p.send_ns() < 0 || p.send_ns() > kMaxTime || p.recv_ns() < 0 || p.recv_ns() > kMaxTime)
        throw UsageError(path + ": entry " + std::to_string(i) + ": a time outside 0 to 2^62 ns (sent at " +
                         std::to_string(p.send_ns()) + " ns, received at " + std::to_string(p.recv_ns()) + " ns)");
      if (!any) any = true, first = p.recv_ns();
      if (p.recv_ns() - first > static_cast<Nanos>(DeliveryTrace::kMaxMillis) * kMillisecond)
        throw UsageError(path + ": entry " + std::to_string(i) + ": received " +
                         std::to_string((p.recv_ns() - first) / kMillisecond) + " ms after the first arrival: a " +
                         "trace holds at most " + std::to_string(DeliveryTrace::kMaxMillis) + " ms");
    }
    visit(entry);
  });
  if (n == 0) throw UsageError(path + ": not a tm-record raw record (no header)");
  return n;
}

}  // namespace tracemod::record
