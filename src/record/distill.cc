#include "record/distill.hh"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <limits>
#include <map>
#include <utility>

#include "record/raw_record.hh"
#include "record/recorder.hh"
#include "record/trace_writer.hh"
#include "util/error.hh"
#include "util/file_descriptor.hh"

namespace tracemod::record {
namespace {

// A text file that is removed unless completed, like the trace.
class SeriesFile {
 public:
  explicit SeriesFile(const std::string& path) : path_(path) {
    file_ = std::fopen(path.c_str(), "we");
    if (!file_) throw_errno("create " + path, errno);
  }
  ~SeriesFile() {
    if (file_) std::fclose(file_), std::remove(path_.c_str());
  }
  FILE* get() { return file_; }
  void close() {
    if (std::fclose(std::exchange(file_, nullptr)) != 0) throw_errno("write " + path_, errno);
  }

 private:
  std::string path_;
  FILE* file_;
};

}  // namespace

std::string default_distill_prefix(const std::string& raw_path) {
  const std::string ext = ".raw";
  if (raw_path.size() > ext.size() && raw_path.compare(raw_path.size() - ext.size(), ext.size(), ext) == 0)
    return raw_path.substr(0, raw_path.size() - ext.size());
  return raw_path + ".trace";
}

std::string distill(const std::string& raw_path, const std::string& prefix) {
  // The trace is written beside itself (TraceWriter's PREFIX.part) and renamed: that name must be free too.
  check_outputs({{"the raw record", raw_path},
                 {"the trace (-o PREFIX)", prefix, true},
                 {"the trace's partial file (PREFIX.part)", prefix + ".part", true},
                 {"the delay series (PREFIX.delay)", prefix + ".delay", true},
                 {"the loss series (PREFIX.loss)", prefix + ".loss", true}});
  Header header;
  Nanos min_owd = std::numeric_limits<Nanos>::max();
  uint64_t packets = 0;
  read_raw(raw_path, [&](const RawEntry& e) {
    if (e.has_header()) header = e.header();
    if (e.has_packet()) min_owd = std::min<Nanos>(min_owd, e.packet().recv_ns() - e.packet().send_ns()), ++packets;
  });
  if (packets == 0) throw UsageError(raw_path + ": no packet arrived in this recording: nothing to distill");

  TraceWriter trace(prefix);
  SeriesFile delay(prefix + ".delay"), loss(prefix + ".loss");
  // Arrivals, losses per second: read_raw holds the arrivals to kMaxRecording, so a day's seconds at most.
  std::map<int64_t, std::pair<uint64_t, int64_t>> per_second;
  ArrivalStats stats;
  read_raw(raw_path, [&](const RawEntry& e) {
    if (!e.has_packet()) return;
    const Packet& p = e.packet();
    uint64_t lost_before = 0;
    bool late = false;
    stats.add(p.seq(), p.send_ns(), p.recv_ns(), p.size(), &lost_before, &late);
    trace.add(p.recv_ns());
    // An arrival recorded out of order (read_raw allows kMaxStepBack) counts at the latest time, as in the trace.
    const Nanos since = stats.last() - stats.first();
    std::fprintf(delay.get(), "%.3f %.3f\n", static_cast<double>(since) / 1e6,
                 static_cast<double>(p.recv_ns() - p.send_ns() - min_owd) / 1e6);
    auto& second = per_second[since / (1000 * kMillisecond)];
    ++second.first;
    second.second += static_cast<int64_t>(lost_before) - (late ? 1 : 0);
  });
  stats.finish();
  for (int64_t s = 0; s <= per_second.rbegin()->first; ++s) {  // seconds without arrivals too
    const auto it = per_second.find(s);  // not operator[]: a second without arrivals needs no entry
    const std::pair<uint64_t, int64_t> counts = it == per_second.end() ? std::pair<uint64_t, int64_t>{} : it->second;
    std::fprintf(loss.get(), "%lld %llu %lld\n", static_cast<long long>(s),
                 static_cast<unsigned long long>(counts.first), static_cast<long long>(counts.second));
  }
  delay.close();
  loss.close();
  trace.finish();
  const std::string warning = shortfall_warning(stats);
  return describe(header.direction(), stats, header.ip_packet_bytes()) + "; trace " + prefix + " (" +
         std::to_string(trace.lines()) + " opportunities), series " + prefix + ".delay, " + prefix + ".loss" +
         (warning.empty() ? "" : "\n" + warning);
}

}  // namespace tracemod::record
