// Writes /proc/sys entries. Entries under net/ belong to the network namespace the caller is in.
#pragma once

#include <string>

namespace tracemod {

// KEY uses slashes relative to /proc/sys, e.g. "net/ipv4/ip_forward".
void write_sysctl(const std::string& key, const std::string& value);

}  // namespace tracemod
