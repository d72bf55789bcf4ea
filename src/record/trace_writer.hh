// Writes a Mahimahi delivery trace as packets arrive: one line per arrival, the milliseconds since the first
// arrival (trace time 0). The file appears under its name only once it is complete and valid.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

#include "util/clock.hh"

namespace tracemod::record {

class TraceWriter {
 public:
  explicit TraceWriter(std::string path);  // writes PATH.part until finish(); throws Error
  ~TraceWriter();                          // an unfinished trace is removed
  TraceWriter(const TraceWriter&) = delete;
  TraceWriter& operator=(const TraceWriter&) = delete;

  void add(Nanos arrival);  // arrivals in time order (earlier ones are written at the latest time seen)
  // Completes the trace under its name. Nothing arrived: no file (a trace needs a line) and false.
  bool finish();
  uint64_t lines() const { return lines_; }
  const std::string& path() const { return path_; }

 private:
  void put(uint64_t ms);
  std::string path_, part_;
  FILE* file_ = nullptr;
  Nanos origin_ = 0;
  uint64_t lines_ = 0, held_ = 0;  // the last line is held back: it must be at least 1
};

}  // namespace tracemod::record
