// tm-webreplay's far side in one call: the recording's CA, its origins and its DNS, served until SIGTERM or
// SIGINT.
#pragma once

#include <cstdint>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "web/matcher.hh"
#include "web/recording.hh"
#include "webserve/server.hh"

namespace tracemod::webserve {

struct ServeConfig {
  const web::Recording* recording = nullptr;  // required
  std::string ca_dir;                         // CertificateAuthority::load_or_create's DIR
  std::vector<std::string> dns_addresses;     // UDP addresses to answer DNS on (none: no DNS)
  uint16_t dns_port = 53;
  web::MatchOptions match;         // strict, ignored parameters
  ServerOptions server;            // dates as recorded; strict (no other scheme's listeners)
  bool deterministic = false;      // the deterministic script in every HTML document (inject.hh)
  std::optional<uint64_t> seed;    // its seed (default: the recording's earliest time)
  std::ostream* log = &std::cerr;  // the start line and one line per unmatched request
  int ready_fd = -1;               // gets one byte once every socket listens (-1: none)
};

// Listens on every origin and DNS address, then serves until SIGTERM or SIGINT, and returns 0. Throws Error if
// the CA cannot be loaded or made, or an address cannot be bound.
int serve(const ServeConfig& config);

// The time a deterministic replay of RECORDING starts its pages' clocks at: the earliest time it was recorded
// at (ms since the epoch), or 2020-01-01 if it gives none.
int64_t recorded_start_ms(const web::Recording& recording);

// The line the server starts with: what it serves, and what it made of the bodies.
std::string start_line(const web::Recording& recording, size_t listeners, size_t names, const Bodies::Made& made);

}  // namespace tracemod::webserve
