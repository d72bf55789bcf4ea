// What `tm-record server` and `tm-record client` are told on their command lines.
#pragma once

#include <cstdint>
#include <string>

#include "saturator/window.hh"
#include "util/clock.hh"

namespace tracemod::record {

constexpr uint16_t kDefaultDataPort = 9473, kDefaultFeedbackPort = 9474;

struct CommonConfig {
  std::string token;
  std::string data_dev, feedback_dev;            // SO_BINDTODEVICE; empty = routing decides
  std::string output = "tm-record";              // prefix of the files this side writes
  uint64_t max_rate_bps = 0;                     // this side's sending cap; 0 = none
  Nanos feedback_silence = 3000 * kMillisecond;  // a sender stops after this long without feedback
  bool quiet = false;
};

struct ClientConfig : CommonConfig {
  std::string server;  // host of the data path
  uint16_t data_port = kDefaultDataPort;
  std::string feedback;  // HOST:PORT or /unix/path; empty = SERVER:9474
  bool up = true, down = false;
  Nanos duration = 30000 * kMillisecond;
  uint32_t ip_packet_bytes = 1500;
  WindowParams window = auto_window();
  Nanos connect_timeout = 10000 * kMillisecond;
};

struct ServerConfig : CommonConfig {
  std::string listen;  // address the data socket binds; empty = every address
  uint16_t data_port = kDefaultDataPort;
  std::string feedback;  // HOST:PORT or /unix/path; empty = :9474
  bool once = false;     // exit after one session
};

int run_client(const ClientConfig& config);  // exit status
int run_server(const ServerConfig& config);

}  // namespace tracemod::record
