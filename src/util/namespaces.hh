// Network namespaces by file descriptor (no names in /run/netns, so nothing outlives its last user), and the
// kernel settings (sysctl) that belong to one.
#pragma once

#include <string>

#include "util/file_descriptor.hh"

namespace tracemod {

// A handle on the calling thread's current network namespace.
FileDescriptor current_netns();

// Moves the calling thread into the network namespace NS.
void enter_netns(const FileDescriptor& ns, const char* what);

// Creates a fresh network namespace and returns its handle; the caller stays where it was (HOME).
FileDescriptor make_netns(const FileDescriptor& home);

// Runs in NS for its lifetime, returns to HOME on destruction.
class InNetns {
 public:
  InNetns(const FileDescriptor& ns, const FileDescriptor& home);
  ~InNetns();
  InNetns(const InNetns&) = delete;
  InNetns& operator=(const InNetns&) = delete;

 private:
  const FileDescriptor& home_;
};

// Makes the current network namespace route for the one inside it: forwarding on, and no IPv6
// autoconfiguration chatter (DAD, router solicitations) crossing an emulated link.
void configure_router_namespace();

// Turns a failed unshare(CLONE_NEWUSER) into a message naming the kernel setting that refused.
[[noreturn]] void explain_userns_failure(int err);

// Writes a /proc/sys entry; KEY uses slashes relative to /proc/sys, e.g. "net/ipv4/ip_forward". Entries under
// net/ belong to the network namespace the caller is in.
void write_sysctl(const std::string& key, const std::string& value);

}  // namespace tracemod
