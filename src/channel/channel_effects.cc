#include "channel/channel_effects.hh"

#include <algorithm>

#include "util/error.hh"
#include "util/parse.hh"

namespace tracemod {

std::string ErrorMode::describe() const {
  switch (kind) {
    case Kind::kDrop:
      return "drop";
    case Kind::kCorrupt:
      return "corrupt";
    default:
      return "arq:delay=" + format_ms(retry_delay) + ",retries=" + std::to_string(retries);
  }
}

ErrorMode parse_error_mode(const std::string& option, const std::string& text) {
  ErrorMode m;
  if (text == "drop") return m;
  if (text == "corrupt") {
    m.kind = ErrorMode::Kind::kCorrupt;
    return m;
  }
  if (text.rfind("arq:", 0) != 0 && text != "arq")
    throw UsageError("invalid " + option + " '" + text + "': expected drop, corrupt or arq:delay=MS,retries=N");
  const KeyValues a(option, "arq", text.size() > 4 ? text.substr(4) : "", {"delay", "retries"});
  const std::string *delay = a.find("delay"), *retries = a.find("retries");
  if (!delay || !retries) throw UsageError(option + ": arq needs delay=MS and retries=N (e.g. arq:delay=5,retries=3)");
  m.kind = ErrorMode::Kind::kArq;
  m.retry_delay = parse_delay(a.name("delay"), *delay);
  m.retries = static_cast<uint32_t>(parse_whole_number(a.name("retries"), *retries, 0, 1000));
  return m;
}

Nanos ArqLink::transmit(Nanos arrival, bool first_hit, LossModel& model, uint32_t ip_bytes) {
  const Nanos start = std::max(arrival, free_at_);
  uint32_t failures = 0;
  for (bool hit = first_hit; hit;) {
    if (++failures > retries_) break;
    ++retransmissions_;
    hit = model.hit(ip_bytes);
  }
  // At most 1001 attempts of an hour each per packet, but a link that keeps failing piles them up: saturate. A
  // link busy until kNever delivers nothing more, so every later packet is given up.
  free_at_ = saturating_add(start, static_cast<Nanos>(failures) * delay_);
  return failures > retries_ ? kNever : free_at_;
}

Nanos ArqLink::pass(Nanos arrival) {
  free_at_ = std::max(arrival, free_at_);
  return free_at_;
}

}  // namespace tracemod
