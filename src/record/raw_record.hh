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

// What a raw record's header calls it (Header.kind).
constexpr char kRawRecordKind[] = "tm-record raw record";

// The recorder's bounds, to which a reader holds every record before it allocates anything for it: a recording
// lasts at most kMaxRecording (tm-record client's --duration; the server refuses to record longer), its data
// packets are kMinPacketBytes to kMaxPacketBytes (--packet-size), and an arrival is an IP packet of at most
// kMaxIpBytes (IPv6's 65535-byte payload and its header).
constexpr Nanos kMaxRecording = 86400LL * 1000 * kMillisecond;
constexpr uint32_t kMinPacketBytes = 128, kMaxPacketBytes = 9000, kMaxIpBytes = 65535 + 40;
// A receive time is the kernel's time stamp moved onto CLOCK_MONOTONIC and clamped to at most this long before
// the receiver read it (session.cc), so an arrival may be recorded up to this much before an earlier entry's.
constexpr Nanos kMaxStepBack = 1000 * kMillisecond;
// The latest time an entry may hold, send or receive: 146 years of CLOCK_MONOTONIC. Later ones are no clock's,
// and the differences distill takes of them (one-way delays, less the smallest) would overflow.
constexpr Nanos kMaxTime = Nanos{1} << 62;

// Calls VISIT for every entry of the raw record at PATH. A truncated last entry (the recorder was killed
// mid-write) ends the file quietly. Anything else that is not what a recorder writes throws
// UsageError("PATH: why") or ("PATH: entry N: why") before VISIT sees it: another format (a tm-probe record:
// check_raw_header), a format_version other than 1, a direction other than up or down, sizes outside the
// bounds above, a negative time or one past kMaxTime, arrivals out of time order (beyond kMaxStepBack) or
// spanning more than kMaxRecording. Returns the number of entries read.
uint64_t read_raw(const std::string& path, const std::function<void(const RawEntry&)>& visit);

}  // namespace tracemod::record
