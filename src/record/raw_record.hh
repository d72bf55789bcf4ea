// The raw per-packet record: length-delimited RawEntry messages (record.proto), written as packets arrive
// by a DelimitedWriter (util/delimited.hh), flushed about once a second so that an interrupted recording keeps
// all but its last moments.
#pragma once

#include <functional>
#include <string>

#include "record/record.pb.h"
#include "util/delimited.hh"

namespace tracemod::record {

// Calls VISIT for every entry of the raw record at PATH. A truncated last entry (the recorder was killed
// mid-write) ends the file quietly; anything else malformed throws UsageError("PATH: entry N: why").
// Returns the number of entries read.
uint64_t read_raw(const std::string& path, const std::function<void(const RawEntry&)>& visit);

}  // namespace tracemod::record
