// tm-modulate's --log: the state changes and every packet's passage, one line each, in time order of their
// first field. Times are ms of CLOCK_MONOTONIC with ns decimals (the link logs' time base), sizes IP bytes:
//   T DIR state N line=L F=.. Vb=.. Vr=.. L=.. queue=.. off=..    state N (from 1, line L of the file) begins
//   T DIR SIZE start=S end=E release=R     arrived at T, served at the bottleneck from S to E, left at R
//   T DIR SIZE start=S end=E lost=E        served, then lost after the bottleneck (the state's loss model)
//   T DIR SIZE dropped=D why=queue|outage|ended|memory     never served: dropped at D
// DIR is up, down (a direction's own link) or, on a shared medium, up or down for packets and both for states.
// A GSO frame that crossed whole adds " segments=N" (its SIZE is that of all its wire packets).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "modulate/schedule.hh"
#include "util/file_descriptor.hh"

namespace tracemod::modulate {

class ModulateLog {
 public:
  // Opens PATH for writing; throws UsageError("PATH: cannot open for writing: why"). A write that fails (a
  // full disk) is said once and the log stops there, whole lines only: see RecordFile, which file() returns for
  // the shell's report at exit.
  explicit ModulateLog(const std::string& path);
  ModulateLog(const ModulateLog&) = delete;
  ModulateLog& operator=(const ModulateLog&) = delete;

  // "# LINE" for each line, then "# base timestamp: BASE".
  void header(const std::vector<std::string>& lines, Nanos base);
  void state(Nanos t, const char* dir, size_t index, const State& s);
  struct Passage {
    const char* dir;
    Nanos arrival;
    uint64_t bytes;
    uint32_t segments;
  };
  void served(const Passage& p, Nanos start, Nanos end, Nanos release);
  void lost(const Passage& p, Nanos start, Nanos end);
  void dropped(const Passage& p, Nanos at, const char* why);
  const std::string& path() const { return path_; }
  const std::shared_ptr<RecordFile>& file() const { return file_; }

 private:
  void begin(const Passage& p);
  void passage(const Passage& p, Nanos start, Nanos end_of_service, const char* key, Nanos at);
  void end(const Passage& p);
  void time(Nanos t);

  std::string path_;
  std::shared_ptr<RecordFile> file_;
};

}  // namespace tracemod::modulate
