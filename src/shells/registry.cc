#include <map>

#include "shells/shells.hh"

namespace tracemod {

std::unique_ptr<Tool> fusable_tool(const std::string& name) {
  static const std::map<std::string, std::unique_ptr<Tool> (*)()> tools = {{"tm-delay", delay_tool},
                                                                           {"tm-loss", loss_tool},
                                                                           {"tm-link", link_tool},
                                                                           {"tm-onoff", onoff_tool},
                                                                           {"tm-modulate", modulate_tool}};
  const auto it = tools.find(name);
  return it == tools.end() ? nullptr : it->second();
}

}  // namespace tracemod
