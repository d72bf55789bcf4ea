// The shells' command lines, each described once: what its main runs, and what a shell fusing it configures in
// its own process (fusion.hh).
#pragma once

#include <memory>
#include <string>

#include "shells/tool.hh"

namespace tracemod {

std::unique_ptr<Tool> delay_tool();
std::unique_ptr<Tool> loss_tool();
std::unique_ptr<Tool> link_tool();
std::unique_ptr<Tool> onoff_tool();
std::unique_ptr<Tool> modulate_tool();

// The shell called NAME ("tm-link"), if it is one that can be fused; null otherwise.
std::unique_ptr<Tool> fusable_tool(const std::string& name);

}  // namespace tracemod
