// Mahimahi's rule (its replayserver.cc, match_score): a recorded exchange is a candidate if its scheme, its
// Host header and its request line up to the first "?" equal the request's (so a request with a query matches
// only recorded ones with a query, and one without only those without); of the candidates, the one whose
// request line shares the longest prefix with the request's wins, the first on a tie (in Mahimahi, readdir's
// order; here, the recording's). Mahimahi compares neither the address nor the port the request arrived at,
// only the Host header (its port included; here, the port the request arrived at stands for it, and an origin on
// a port of its own replays, which in Mahimahi it does not). Where tracemod departs (docs/web-recording.md,
// "Matching"): the HTTP version is not compared (an h2 request matches an HTTP/1.1 recording), nor is
// User-Agent, and names are compared regardless of case.
#include "web/matcher.hh"

#include <algorithm>

#include "web/reading.hh"

namespace tracemod::web {
namespace {

// The candidates' key: the scheme, the name, the port, the method, and the target up to its "?" (and whether
// it has one). Newlines separate the parts: none can hold one.
std::string key(Scheme scheme, const std::string& host, uint16_t port, const std::string& method,
                const std::string& target) {
  const size_t query = target.find('?');
  std::string k = scheme == Scheme::kHttps ? "s\n" : "p\n";
  k.append(host).append("\n").append(std::to_string(port)).append("\n").append(method).append("\n");
  k.append(target, 0, query).append(query == std::string::npos ? "" : "?");
  return k;
}

// How far two targets agree, as Mahimahi's common prefix of the request lines: a target that ends where the
// other goes on still agrees on the space after it, so equal targets beat one that merely extends the other.
size_t common_prefix(const std::string& a, const std::string& b) {
  const auto [ia, ib] = std::mismatch(a.begin(), a.end(), b.begin(), b.end());
  const size_t n = static_cast<size_t>(ia - a.begin());
  return ia == a.end() && ib == b.end() ? n + 1 : n;
}

}  // namespace

Matcher::Matcher(const Recording& recording) {
  for (const Exchange& e : recording.exchanges)
    index_[key(e.scheme, host_name(e.host), e.port, e.request.method, origin_form(e.request.target))].push_back(&e);
}

const Exchange* Matcher::match(Scheme scheme, const std::string& /*address: Mahimahi ignores it*/, uint16_t port,
                               const std::string& host, const std::string& method, const std::string& target) const {
  const std::string wanted = origin_form(target);
  const auto it = index_.find(key(scheme, host_name(host), port, method, wanted));
  if (it == index_.end()) return nullptr;
  const Exchange* best = nullptr;
  size_t best_score = 0;
  for (const Exchange* e : it->second) {
    const size_t score = common_prefix(wanted, e->request.target);
    if (!best || score > best_score) best = e, best_score = score;
  }
  return best;
}

}  // namespace tracemod::web
