#include "record/raw_record.hh"

#include "util/error.hh"

namespace tracemod::record {

uint64_t read_raw(const std::string& path, const std::function<void(const RawEntry&)>& visit) {
  RawEntry entry;
  const uint64_t n = read_delimited(path, entry, "tm-record raw entry", [&](uint64_t i) {
    if (i == 1 && !entry.has_header()) throw UsageError(path + ": not a tm-record raw record (no header)");
    visit(entry);
  });
  if (n == 0) throw UsageError(path + ": not a tm-record raw record (no header)");
  return n;
}

}  // namespace tracemod::record
