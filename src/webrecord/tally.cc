#include "webrecord/tally.hh"

namespace tracemod::webrecord {
namespace {

std::string count(uint64_t n, const std::string& one, const std::string& many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

std::string reason(Unrecorded why, uint64_t n) {
  const std::string as_it_was = n == 1 ? ", relayed as it was" : ", relayed as they were";
  switch (why) {
    case Unrecorded::kNotHttp:
      return "not HTTP" + as_it_was;
    case Unrecorded::kH2c:
      return "HTTP/2 without TLS (h2c)" + as_it_was;
    case Unrecorded::kUnreachable:
      return "origin unreachable";
    case Unrecorded::kOriginTls:
      return "TLS handshake with the origin failed";
    case Unrecorded::kClientTls:
      return "TLS handshake with the client failed";
    case Unrecorded::kMalformed:
      return "malformed HTTP";
    case Unrecorded::kCutShort:
      return "closed mid-exchange";
    case Unrecorded::kSwitched:
      return "protocol switch (WebSocket) not relayed";
    case Unrecorded::kTooLarge:
      return "with a body over --max-body (relayed, that exchange not recorded)";
    case Unrecorded::kCount:
      break;
  }
  return "?";
}

}  // namespace

bool Tally::unwritten(const std::string& why) {
  const std::lock_guard<std::mutex> lock(mutex_);
  if (unwritten_++ > 0) return false;
  first_unwritten_ = why;
  return true;
}

std::string Tally::summary(const std::string& dir) const {
  std::string line = dir + ": " + count(recorded_, "exchange", "exchanges") + " recorded";
  if (const uint64_t n = unwritten_) {
    const std::lock_guard<std::mutex> lock(mutex_);
    line += "; " + count(n, "exchange", "exchanges") + " not written (the first: " + first_unwritten_ + ")";
  }
  uint64_t total = 0;
  std::string reasons;
  for (size_t i = 0; i < unrecorded_.size(); ++i) {
    const uint64_t n = unrecorded_[i];
    if (!n) continue;
    total += n;
    reasons += (reasons.empty() ? "" : "; ") + std::to_string(n) + " " + reason(static_cast<Unrecorded>(i), n);
  }
  line += "; " + count(total, "connection", "connections") + " not recorded";
  return reasons.empty() ? line : line + " (" + reasons + ")";
}

}  // namespace tracemod::webrecord
