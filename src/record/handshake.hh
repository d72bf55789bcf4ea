// The feedback connection's opening: the client presents the shared token and what it wants recorded.
#pragma once

#include <cstdint>
#include <string>

#include "record/config.hh"
#include "record/record.pb.h"

namespace tracemod::record {

Hello make_hello(const ClientConfig& c);
// Empty if HELLO may start a session on this server; otherwise why not (sent back in a Reject).
std::string check_hello(const Hello& hello, const std::string& token);
// Settings a client asked for, back as the parameters the sender uses.
WindowParams window_from(const WindowSettings& w);
// The tighter of two rate caps (0 = none).
uint64_t tighter_cap(uint64_t a, uint64_t b);
// Compares in time independent of where they differ.
bool same_token(const std::string& a, const std::string& b);
uint64_t random_session_id();

}  // namespace tracemod::record
