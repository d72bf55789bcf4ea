// Building a link's queue from the user's words: --uplink-queue NAME and --uplink-queue-args ARGS.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "disciplines/queue_discipline.hh"
#include "util/random.hh"

namespace tracemod {

// NAME is infinite|droptail|drophead|codel|pie|red (an error about it names OPTION without its "-args" suffix);
// ARGS the comma-separated key=value list of OPTION, e.g. --uplink-queue-args (spaces after commas allowed):
//   infinite  no arguments
//   droptail  packets=N and/or bytes=N (at least one above 0; 0 is no limit of that kind)
//   drophead  the same
//   codel     target=T,interval=T (both required), a limit as for droptail, ecn=0|1
//   pie       qdelay_ref=T,max_burst=T (both required), a limit as for droptail, ecn=0|1
//   red       packets=N or bytes=N (one: the hard limit), min=N,max=N (required, in that unit, min < max <=
//             the limit), probability=P (0.02), wq=W (0.002), gentle=0|1 (0), ecn=0|1 (0)
// Every value reads as util/parse reads it everywhere else. A time T is parse_delay's: bare milliseconds as in
// Mahimahi (target=5), or with a unit (target=5ms, target=5000us), fractions allowed and rounded up to the
// nanosecond, above 0 and at most 1 h. A limit N is parse_queue_limit's, the key naming its kind: packets=1000
// or packets=1000pkts, bytes=150000, bytes=150000B or bytes=150kB (min= and max= take the hard limit's kind).
// tm-modulate's queue=7pkts,150000B has no counterpart here: the comma separates items, so each kind has its
// key. Unknown names, unknown, repeated or missing keys, and bad values throw UsageError naming OPTION. RANDOM
// feeds the policies that drop at random (PIE, RED). MEMORY_LIMIT is the buffer memory bound (tests make it
// small).
std::unique_ptr<QueueDiscipline> make_queue_discipline(const std::string& option, const std::string& name,
                                                       const std::string& args, RandomStream random,
                                                       uint64_t memory_limit = QueueDiscipline::kMemoryLimit);

}  // namespace tracemod
