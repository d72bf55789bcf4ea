// One recording session, after the handshake: the event loop that sends data packets under the window,
// records arrivals, and carries feedback, stops and byes over the feedback connection. The client and the
// server run the same loop; they differ in which direction each sends and receives.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "record/control.hh"
#include "record/recorder.hh"
#include "saturator/rate_limiter.hh"
#include "saturator/window.hh"
#include "util/net.hh"

namespace tracemod::record {

struct SessionSetup {
  bool is_server = false;
  uint64_t session = 0;
  bool send = false, receive = false;  // this side's roles
  bool send_up = true;                 // direction this side sends (the client sends up)
  int data_fd = -1;
  bool data_connected = false;  // client: connected UDP socket; server: learns the peer
  bool data_ipv6 = false;       // the data path is IPv6 (the server learns it from the hello)
  bool probe = false;           // client receiving downlink: tell the server where we are
  uint32_t ip_packet_bytes = 1500;
  Nanos duration = 0;
  WindowParams window;
  uint64_t max_rate_bps = 0;
  Nanos feedback_silence = 0;
  std::string output;
  bool quiet = false;
  int signal_fd = -1;
};

// Prints "tm-record: LINE" on stderr in one write, so that two sides sharing a terminal do not interleave.
void say(const std::string& line);

// What a client asked to record, in words; a duration in seconds ("2.5").
std::string directions(bool up, bool down);
std::string seconds_text(Nanos t);

// Runs the session to its end; returns the exit status (0 done, 1 failed, 128+N after signal N).
int run_session(const SessionSetup& setup, ControlStream& control);

}  // namespace tracemod::record
