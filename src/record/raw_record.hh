// The raw per-packet record: length-delimited RawEntry messages (record.proto), written as packets arrive
// by a DelimitedWriter (util/delimited.hh), flushed about once a second so that an interrupted recording keeps
// all but its last moments.
#pragma once

#include <functional>
#include <string>

#include "record/record.pb.h"
#include "util/clock.hh"
#include "util/delimited.hh"

namespace tracemod::record {

// What a reader holds a packet entry to before it is used: CLOCK_MONOTONIC times from 0 to kMaxTime (146 years:
// the difference of two never overflows), received at most DeliveryTrace::kMaxMillis ms (49.7 days) after the
// first arrival (the longest a trace can hold).
constexpr Nanos kMaxTime = Nanos{1} << 62;

// Calls VISIT for every entry of the raw record at PATH. A truncated last entry (the recorder was killed
// mid-write) ends the file quietly; anything else malformed throws UsageError("PATH: entry N: why"), a packet
// outside the bounds above too. Returns the number of entries read.
uint64_t read_raw(const std::string& path, const std::function<void(const RawEntry&)>& visit);

}  // namespace tracemod::record
