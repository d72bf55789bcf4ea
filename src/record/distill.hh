// `tm-record distill`: rebuilds from a raw record the trace the recorder wrote, and two series for plots.
#pragma once

#include <string>

namespace tracemod::record {

// Writes PREFIX (the Mahimahi trace), PREFIX.delay ("ms qdelay_ms" per arrival: time since the first arrival
// and one-way delay above the record's smallest) and PREFIX.loss ("second arrivals lost" per second of trace
// time; a gap's losses count in the second of the arrival that revealed it). Returns the summary line. An output
// that is the raw record or another output is refused (check_outputs) before anything is read or written.
std::string distill(const std::string& raw_path, const std::string& prefix);

// PATH without a trailing ".raw", or PATH + ".trace" if it has none.
std::string default_distill_prefix(const std::string& raw_path);

}  // namespace tracemod::record
