// Which recorded exchange answers a request (man/tm-webreplay.1 and docs/web-recording.md, "Matching"):
// Mahimahi's rule as the base (scheme, name, port, method and path equal), with Web Page Replay's ideas for
// pages others recorded: URLs compared in one spelling (web/url.hh), the query as a multiset of parameters
// (the most equal ones win, order does not matter), named parameters ignored on request, request headers to
// break ties, an https request for what was recorded only over http answered from it (HSTS, the browsers' HTTPS
// upgrades) and the reverse, and repeated requests for one URL served in recorded order. The Matcher is
// read-only after construction (one may serve any number of threads); what a replay has served so far is a
// Sequence of the caller's.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "web/recording.hh"
#include "web/url.hh"

namespace tracemod::web {

// A request as the matcher reads it.
struct Asked {
  Scheme scheme = Scheme::kHttp;
  uint16_t port = 0;
  std::string_view host;  // Host or :authority, without a port (any case)
  std::string_view method;
  std::string_view target;                       // origin form (an absolute-form target is reduced to it)
  const std::vector<Header>* headers = nullptr;  // for conditional requests and ties; null: none
};

struct MatchOptions {
  bool strict = false;                      // the whole query equal (as a multiset), and no other scheme's
  std::vector<std::string> ignored_params;  // query parameters neither side's is compared (cache-busters)
};

// What one replay session has served: each recorded exchange at most once a session while others tie with it,
// so repeated requests for one URL get the recorded responses in their order (then the last again). A new
// session (a top-level navigation: the server's call) starts the order over.
class Sequence {
 public:
  explicit Sequence(size_t exchanges = 0) : served_in_(exchanges, 0) {}
  void new_session() { ++session_; }

 private:
  friend class Matcher;
  uint32_t session_ = 1;
  std::vector<uint32_t> served_in_;  // by exchange index: the session that last served it
};

class Matcher {
 public:
  // Keeps a reference: RECORDING must outlive it.
  explicit Matcher(const Recording& recording, MatchOptions options = {});

  // The exchange to answer ASKED; null if none matches. With SEQUENCE, repeats advance through their ties.
  const Exchange* match(const Asked& asked, Sequence* sequence = nullptr) const;

  // For a miss's log line: the recorded request closest to ASKED ("closest recorded: GET https://a/b?x=1"), or
  // what is missing ("nothing recorded for a.example").
  std::string closest(const Asked& asked) const;

  const Recording& recording() const { return recording_; }

 private:
  struct Candidate {
    size_t index;               // into the recording's exchanges
    std::vector<Param> params;  // canonical, ignored ones left out, sorted
  };
  using Candidates = std::vector<Candidate>;

  const Candidates* candidates(Scheme scheme, std::string_view host, uint16_t port, std::string_view method,
                               const std::string& path) const;
  std::vector<const Candidate*> best(const Candidates& list, const std::vector<Param>& params, bool conditional,
                                     const Asked& asked) const;
  std::vector<Param> kept_params(std::vector<Param> params) const;

  const Recording& recording_;
  MatchOptions options_;
  // By scheme, name, port, method and canonical path, in recording order.
  std::unordered_map<std::string, Candidates> index_;
  // By name: every exchange recorded for it, for closest().
  std::unordered_map<std::string, std::vector<size_t>> by_host_;
};

// Whether HEADERS make a request conditional (If-None-Match, If-Modified-Since, If-Match, If-Unmodified-Since,
// If-Range): a revalidation, which a 304 may answer.
bool is_conditional(const std::vector<Header>* headers);

// The URL of EXCHANGE's request as a log line writes it: "https://a.example:8443/x?y".
std::string url_of(Scheme scheme, std::string_view host, uint16_t port, std::string_view target);

}  // namespace tracemod::web
