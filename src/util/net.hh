// Addresses and sockets of tm-record: the UDP data socket and the feedback stream (TCP or Unix).
#pragma once

#include <sys/socket.h>

#include <cstdint>
#include <string>

#include "util/file_descriptor.hh"

namespace tracemod {

struct SocketAddress {
  sockaddr_storage storage{};
  socklen_t length = 0;
  const sockaddr* get() const { return reinterpret_cast<const sockaddr*>(&storage); }
  int family() const { return storage.ss_family; }
  bool is_ipv6() const;  // an IPv6 packet on the wire (a v4-mapped address is IPv4)
  std::string text() const;
};

// HOST (a name, IPv4 or IPv6 address) and PORT; throws UsageError naming OPTION if it does not resolve.
SocketAddress resolve(const std::string& option, const std::string& host, uint16_t port);
// "HOST:PORT", "[V6]:PORT" or "/path" (a Unix socket); DEFAULT_HOST when only ":PORT" is given. The port is
// read by parse_port (util/parse.hh).
SocketAddress parse_endpoint(const std::string& option, const std::string& text, const std::string& default_host);

// SO_BINDTODEVICE, so the path is chosen by interface and not by the routing table.
void bind_to_device(int fd, const std::string& device, const std::string& what);

FileDescriptor udp_socket(int family, const std::string& device);  // non-blocking, timestamps on, DF set
FileDescriptor connect_stream(const SocketAddress& to, const std::string& device, int timeout_ms);
FileDescriptor listen_stream(const SocketAddress& at, const std::string& device);
void set_nonblocking(int fd);

}  // namespace tracemod
