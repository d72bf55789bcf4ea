#include "link/link_cli.hh"

#include <utility>

#include "config.h"
#include "util/error.hh"
#include "util/parse.hh"

namespace tracemod {

LinkLog::Format read_log_format(const std::string& text) {
  if (text == "tracemod") return LinkLog::Format::kTracemod;
  if (text == "mahimahi") return LinkLog::Format::kMahimahi;
  throw UsageError("invalid --log-format '" + text + "': expected tracemod or mahimahi");
}

void read_capacity(LinkDirection& d, const std::string& trace, const std::string& rate, const std::string& trace_option,
                   const std::string& rate_option) {
  if (trace.empty() == rate.empty())
    throw UsageError(trace.empty() ? "missing " + d.name + ": give " + trace_option + " or " + rate_option
                                   : d.name + ": give " + trace_option + " ('" + trace + "') or " + rate_option +
                                         ", not both (a command goes after --)");
  if (!trace.empty())
    d.trace = std::make_shared<const DeliveryTrace>(DeliveryTrace::load(d.source = DeliveryTrace::find(trace)));
  else
    d.rate = parse_rate(rate_option, d.source = rate);
}

void write_link_header(const LinkDirection& d, const std::string& tool, const std::string& command_line,
                       uint64_t seed, Nanos start) {
  d.log->header({"tracemod " + tool + " (" + d.name + ") [" + d.source + "] > " + d.log->path(),
                 "command line: " + command_line, "version: " PACKAGE_NAME " " PACKAGE_VERSION,
                 "queue: " + d.discipline->describe(), "seed: " + std::to_string(seed),
                 "times in ms of CLOCK_MONOTONIC; sizes in IP bytes; an opportunity carries 1500 bytes"},
                start);
}

std::unique_ptr<LinkQueue> make_link(LinkDirection& d, bool once, Nanos start, BufferPool& pool) {
  std::unique_ptr<OpportunitySource> source;
  if (d.trace)
    source = d.trace->cursor(once);
  else
    source = std::make_unique<ConstantRate>(d.rate);
  const Nanos end = once && d.trace ? static_cast<Nanos>(d.trace->period_ms()) * kMillisecond : kNever;
  return std::make_unique<LinkQueue>(std::move(source), start, end, std::move(d.discipline), pool, d.log);
}

}  // namespace tracemod
