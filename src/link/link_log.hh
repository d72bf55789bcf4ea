// A per-direction link log in Mahimahi's grammar, so existing analysis scripts read it:
//   T # 1500          a delivery opportunity (1500 bytes of IP packet)
//   T + SIZE          an arrival (IP bytes)
//   T - SIZE QDELAY   a departure, with the time it spent queued
//   T d PKTS BYTES    packets dropped by the queue (tail, head or AQM)
// Times are ms of CLOCK_MONOTONIC with microsecond decimals ("1234.567"), the base timestamp too, so logs
// of both directions and of nested shells share one time base. A GSO super-frame is logged per wire packet.
// The Mahimahi format writes whole milliseconds and no drop lines, which Mahimahi's own scripts
// (mm-throughput-graph) insist on.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "util/clock.hh"
#include "util/file_descriptor.hh"

namespace tracemod {

class LinkLog {
 public:
  enum class Format { kTracemod, kMahimahi };
  // Opens PATH for writing; throws UsageError("PATH: cannot open for writing: why"). OPTION names it in
  // messages ("--uplink-log"). A write that fails (a full disk) is said once and the log stops there, whole
  // lines only: see RecordFile, which file() returns for the shell's report at exit.
  LinkLog(const std::string& path, Format format, const std::string& option = "log");
  LinkLog(const LinkLog&) = delete;
  LinkLog& operator=(const LinkLog&) = delete;

  // "# LINE" for each line, then "# base timestamp: BASE".
  void header(const std::vector<std::string>& lines, Nanos base);
  void opportunity(Nanos t);
  void arrival(Nanos t, uint32_t bytes);
  void departure(Nanos t, uint32_t bytes, Nanos enqueued);
  void drop(Nanos t, uint32_t packets, uint64_t bytes);
  const std::string& path() const { return path_; }
  const std::shared_ptr<RecordFile>& file() const { return file_; }

 private:
  void line(Nanos t, char kind, uint64_t a);
  void put_ms(Nanos t);
  void put_uint(uint64_t v);
  void put(char c) { file_->append(c); }
  void end_line() { file_->end_record(); }

  std::string path_;
  Format format_;
  std::shared_ptr<RecordFile> file_;
};

}  // namespace tracemod
