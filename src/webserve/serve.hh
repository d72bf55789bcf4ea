// tm-webreplay's far side in one call: the recording's CA, its origins and its DNS, served until SIGTERM or
// SIGINT.
#pragma once

#include <cstdint>
#include <iostream>
#include <string>
#include <vector>

#include "web/recording.hh"

namespace tracemod::webserve {

struct ServeConfig {
  const web::Recording* recording = nullptr;  // required
  std::string ca_dir;                         // CertificateAuthority::load_or_create's DIR
  std::vector<std::string> dns_addresses;     // UDP addresses to answer DNS on (none: no DNS)
  uint16_t dns_port = 53;
  std::ostream* log = &std::cerr;  // the start line and one line per unmatched request
  int ready_fd = -1;               // gets one byte once every socket listens (-1: none)
};

// Listens on every origin and DNS address, then serves until SIGTERM or SIGINT, and returns 0. Throws Error if
// the CA cannot be loaded or made, or an address cannot be bound.
int serve(const ServeConfig& config);

}  // namespace tracemod::webserve
