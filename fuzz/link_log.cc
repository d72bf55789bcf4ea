// Link logs as tm-graph reads them, ours and Mahimahi's: read_link_log on the input with tm-graph's 500 ms bins,
// then both of tm-graph's reports, the summary and the JSON document. (Narrower bins only make the bins' vector,
// bounded by kMaxBins, fill sooner: an input of a few bytes can already span the 23 days of 4M bins.)
#include "analysis/json_report.hh"
#include "analysis/link_log_reader.hh"
#include "fuzz.hh"

using namespace tracemod;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  LineReader in = LineReader::of_text(fuzz::text(data, size), "fuzz.log");
  fuzz::accepted([&] {
    const LinkLogStats stats = read_link_log(in, 500 * kMillisecond);
    FUZZ_CHECK(stats.events() > 0 && stats.last() > stats.first());
    format_summary(stats);
    format_json(stats, "fuzz.log");
  });
  return 0;
}
