// Fusion: a shell whose command is another tracemod shell runs that shell's queues in its own ferry, so the
// stack carries each frame across one link instead of one per level (docs/ARCHITECTURE.md §2).
#pragma once

#include <vector>

#include "shells/tool.hh"

namespace tracemod {

// The shells to fuse under SHELL (whose options are VM): its command, if a fusable tracemod shell, configured in
// this process, then that one's command, and so on down; outermost first. Empty if SHELL cannot fuse (TM_NO_FUSE,
// --no-fuse, a capture, --outside, several paths, a far side) or its command is not such a shell. A level whose
// command line this process cannot read is not fused: its own process reads it, and says what is wrong.
std::vector<FusedLevel> fuse_command(const ShellOptions& shell, const po::variables_map& vm);

}  // namespace tracemod
