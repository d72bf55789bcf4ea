// The capabilities a command keeps inside the shell's user namespace so it can start nested shells while
// running as the invoking user (they give no power outside that namespace).
#pragma once

namespace tracemod {

bool have_effective_net_admin();

// Makes the nesting capabilities ambient so they survive execve of a non-root program.
void raise_ambient_nesting_caps();

}  // namespace tracemod
