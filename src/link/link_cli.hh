// One direction of a trace-driven link as a command line describes it: tm-link's options, or the keys of a
// tm-multipath path. Built before any namespace exists, so that a bad trace, rate, queue or log path is refused
// (exit 2) before anything starts; made into a LinkQueue when the shell starts its ferry.
#pragma once

#include <memory>
#include <string>

#include "disciplines/queue_discipline.hh"
#include "link/link_log.hh"
#include "link/link_queue.hh"
#include "link/trace.hh"
#include "packet/buffer_pool.hh"
#include "util/clock.hh"

namespace tracemod {

struct LinkDirection {
  std::string name;    // "uplink", "path 2 uplink": for the log header
  std::string source;  // the trace path, or the rate as given ("12mbit"), for the log header
  std::shared_ptr<const DeliveryTrace> trace;
  uint64_t rate = 0;
  std::unique_ptr<QueueDiscipline> discipline;  // handed to the link when the shell makes it
  std::shared_ptr<LinkLog> log;
};

// --log-format's TEXT: tracemod or mahimahi.
LinkLog::Format read_log_format(const std::string& text);
// The capacity: TRACE (a file, looked up as tm-link does) or RATE, exactly one of them non-empty; TRACE_OPTION and
// RATE_OPTION name them in errors.
void read_capacity(LinkDirection& d, const std::string& trace, const std::string& rate, const std::string& trace_option,
                   const std::string& rate_option);
// Writes the log's header (TOOL made it; the shell's COMMAND_LINE, the version, queue and seed).
void write_link_header(const LinkDirection& d, const std::string& tool, const std::string& command_line,
                       uint64_t seed, Nanos start);
// The link, from START; with ONCE a trace ends the link after one period. Takes D's discipline.
std::unique_ptr<LinkQueue> make_link(LinkDirection& d, bool once, Nanos start, BufferPool& pool);

}  // namespace tracemod
