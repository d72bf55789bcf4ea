// tm-graph --json: the summary and the per-bin series of a link log as one JSON object, for programs (tm-run)
// that would otherwise parse link logs a second time. Times are ms relative to the log's base timestamp, rates
// Mbit/s; series are columns (one array per quantity, one element per bin) so a long log stays compact:
//   {"log": NAME, "bin_ms": 500, "events": N, "start_ms": .., "end_ms": ..,
//    "capacity_mbps": .., "throughput_mbps": .., "utilization": ..|null,
//    "delay_ms": {"p50": .., "p95": .., "p99": ..}|null, "departures": N, "drops": {"packets": N, "bytes": N},
//    "bins": {"start_ms": [..], "capacity_mbps": [..], "arrival_mbps": [..], "throughput_mbps": [..],
//             "mean_delay_ms": [..|null], "max_delay_ms": [..|null], "drop_packets": [..]}}
// A bin without departures has null delays; utilization is null when the log has no delivery opportunities.
#pragma once

#include <string>

#include "analysis/link_log_reader.hh"
#include "util/json.hh"  // json_string, which the report uses

namespace tracemod {

std::string format_json(const LinkLogStats& stats, const std::string& name);

}  // namespace tracemod
