// Building a link's queue from the user's words: --uplink-queue NAME and --uplink-queue-args ARGS.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "link/queue_discipline.hh"
#include "util/random.hh"

namespace tracemod {

// NAME is infinite|droptail|drophead|codel|pie|red (an error about it names OPTION without its "-args" suffix);
// ARGS the comma-separated key=value list of OPTION, e.g. --uplink-queue-args (spaces after commas allowed):
//   infinite  no arguments
//   droptail  packets=N and/or bytes=N (at least one above 0; 0 is no limit of that kind)
//   drophead  the same
//   codel     target=MS,interval=MS (both required), a limit as for droptail, ecn=0|1
//   pie       qdelay_ref=MS,max_burst=MS (both required), a limit as for droptail, ecn=0|1
//   red       packets=N or bytes=N (one: the hard limit), min=N,max=N (required, in that unit, min < max <=
//             the limit), probability=P (0.02), wq=W (0.002), gentle=0|1 (0), ecn=0|1 (0)
// Times in ms, fractions allowed. Unknown names, unknown, repeated or missing keys, and bad values throw
// UsageError naming OPTION. RANDOM feeds the policies that drop at random (PIE, RED). MEMORY_LIMIT is the buffer
// memory bound (tests make it small).
std::unique_ptr<QueueDiscipline> make_queue_discipline(const std::string& option, const std::string& name,
                                                       const std::string& args, RandomStream random,
                                                       uint64_t memory_limit = QueueDiscipline::kMemoryLimit);

}  // namespace tracemod
