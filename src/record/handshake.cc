#include "record/handshake.hh"

#include <sys/random.h>

#include <algorithm>
#include <cerrno>

#include "record/raw_record.hh"
#include "record/wire.hh"
#include "util/error.hh"

namespace tracemod::record {

constexpr uint32_t kProtocol = 1;

Hello make_hello(const ClientConfig& c) {
  Hello h;
  h.set_protocol(kProtocol);
  h.set_token(c.token);
  h.set_record_up(c.up);
  h.set_record_down(c.down);
  h.set_duration_ns(c.duration);
  h.set_ip_packet_bytes(c.ip_packet_bytes);
  WindowSettings* w = h.mutable_window();
  w->set_low_delay_ns(c.window.low_delay);
  w->set_high_delay_ns(c.window.high_delay);
  w->set_min_window(c.window.min_window);
  w->set_max_window(c.window.max_window);
  w->set_initial_window(c.window.initial_window);
  w->set_loss_timeout_ns(c.window.loss_timeout);
  w->set_max_rate_bps(c.max_rate_bps);
  w->set_adaptive(c.window.adaptive);
  w->set_loss_shrinks(c.window.loss_shrinks);
  return h;
}

bool same_token(const std::string& a, const std::string& b) {
  if (a.size() != b.size() || b.empty()) return false;  // the length is no secret
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

std::string check_hello(const Hello& hello, const std::string& token) {
  if (hello.protocol() != kProtocol) return "protocol version " + std::to_string(hello.protocol()) + " is not 1";
  if (!same_token(hello.token(), token)) return "wrong token";
  if (!hello.record_up() && !hello.record_down()) return "no direction to record";
  const uint32_t bytes = hello.ip_packet_bytes();
  if (bytes < kMinPacketBytes || bytes > kMaxPacketBytes)
    return "packet size " + std::to_string(bytes) + " outside " + std::to_string(kMinPacketBytes) + ".." +
           std::to_string(kMaxPacketBytes);
  if (hello.duration_ns() <= 0 || hello.duration_ns() > kMaxRecording)  // a reader refuses a longer record
    return "duration " + std::to_string(hello.duration_ns()) + " ns outside 1 ns.." + std::to_string(kMaxRecording) +
           " ns";
  const WindowSettings& w = hello.window();
  if (w.min_window() < 1 || w.min_window() > w.max_window() || w.low_delay_ns() > w.high_delay_ns())
    return "inconsistent window settings";
  return {};
}

WindowParams window_from(const WindowSettings& w) {
  WindowParams p;
  p.low_delay = w.low_delay_ns();
  p.high_delay = w.high_delay_ns();
  p.min_window = w.min_window();
  p.max_window = w.max_window();
  p.initial_window = w.initial_window();
  p.loss_timeout = w.loss_timeout_ns();
  p.adaptive = w.adaptive();
  p.loss_shrinks = w.loss_shrinks();
  return p;
}

uint64_t tighter_cap(uint64_t a, uint64_t b) {
  return a == 0 ? b : b == 0 ? a : std::min(a, b);
}

uint64_t random_session_id() {
  // A nonce against stray packets, not an experiment's random choice: no --seed.
  uint64_t id = 0;
  if (getrandom(&id, sizeof id, 0) != sizeof id) throw_errno("getrandom", errno);
  return id;
}

}  // namespace tracemod::record
