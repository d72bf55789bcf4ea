// The rule in full (docs/web-recording.md, "Matching"). Candidates for a request are the recorded exchanges
// whose scheme, name (any case), port, method and path (canonical, web/url.hh) equal its own, in recording
// order; a request with a scheme its path was never recorded with takes the other scheme's (port 443 for 80 and
// the reverse), unless strict. Of the candidates, the one whose query shares the most parameters with the
// request's wins (as multisets: order does not matter), then the one sharing the most parameter names, then the
// one with the fewest others; strict keeps only
// those whose query is equal. Ties go to the one whose request headers agree with the request's most, then, in
// a Sequence, to the first not yet served this session (the last once all have been). A recorded 304 without a
// body answers only a conditional request: a browser with an empty cache must get the body. Where Mahimahi
// compares the request lines' longest common prefix, an equal query wins here too, but parameters in another
// order, or one more or less, no longer make a miss, and a parameter's name counts where no value agrees.
#include "web/matcher.hh"

#include <algorithm>
#include <tuple>

#include "web/reading.hh"

namespace tracemod::web {
namespace {

// The index key. Newlines separate the parts: none can hold one.
std::string key(Scheme scheme, std::string_view host, uint16_t port, std::string_view method, const std::string& path) {
  std::string k = scheme == Scheme::kHttps ? "s\n" : "p\n";
  k.append(host_name(std::string(host))).append("\n").append(std::to_string(port)).append("\n");
  return k.append(method).append("\n").append(path);
}

// How many of RECORDED's fields the request has too, name (any case) and value alike.
size_t agreeing_headers(const std::vector<Header>& recorded, const std::vector<Header>* asked) {
  if (!asked) return 0;
  size_t n = 0;
  for (const Header& r : recorded) {
    if (iequals(r.name, "Host")) continue;
    for (const Header& a : *asked)
      if (a.value == r.value && iequals(a.name, r.name)) {
        ++n;
        break;
      }
  }
  return n;
}

Scheme other(Scheme s) {
  return s == Scheme::kHttps ? Scheme::kHttp : Scheme::kHttps;
}

uint16_t other_port(uint16_t port) {
  return port == 443 ? 80 : port == 80 ? 443 : port;
}

size_t common_prefix(const std::string& a, const std::string& b) {
  return static_cast<size_t>(std::mismatch(a.begin(), a.end(), b.begin(), b.end()).first - a.begin());
}

}  // namespace

bool is_conditional(const std::vector<Header>* headers) {
  if (!headers) return false;
  for (const Header& h : *headers)
    for (const char* name : {"If-None-Match", "If-Modified-Since", "If-Match", "If-Unmodified-Since", "If-Range"})
      if (iequals(h.name, name)) return true;
  return false;
}

std::string url_of(Scheme scheme, std::string_view host, uint16_t port, std::string_view target) {
  const bool https = scheme == Scheme::kHttps;
  std::string url = https ? "https://" : "http://";
  url += host.find(':') != std::string_view::npos ? "[" + std::string(host) + "]" : std::string(host);
  if (port != (https ? 443 : 80)) url += ":" + std::to_string(port);
  return url.append(target);
}

Matcher::Matcher(const Recording& recording, MatchOptions options)
    : recording_(recording), options_(std::move(options)) {
  for (std::string& name : options_.ignored_params) name = canonical_part(name);
  for (size_t i = 0; i < recording.exchanges.size(); ++i) {
    const Exchange& e = recording.exchanges[i];
    Target t = canonical_target(origin_form(e.request.target));
    index_[key(e.scheme, e.host, e.port, e.request.method, t.path)].push_back({i, kept_params(std::move(t.params))});
    by_host_[host_name(e.host)].push_back(i);
  }
}

std::vector<Param> Matcher::kept_params(std::vector<Param> params) const {
  const auto& ignored = options_.ignored_params;
  params.erase(std::remove_if(
                   params.begin(), params.end(),
                   [&](const Param& p) { return std::find(ignored.begin(), ignored.end(), p.first) != ignored.end(); }),
               params.end());
  return sorted(std::move(params));
}

const Matcher::Candidates* Matcher::candidates(Scheme scheme, std::string_view host, uint16_t port,
                                               std::string_view method, const std::string& path) const {
  const auto it = index_.find(key(scheme, host, port, method, path));
  return it == index_.end() ? nullptr : &it->second;
}

// The candidates of LIST that tie for the best answer to a request with PARAMS, in recording order: the most
// parameters equal, then the most names equal (a cache-buster's other value), then the fewest others.
std::vector<const Matcher::Candidate*> Matcher::best(const Candidates& list, const std::vector<Param>& params,
                                                     bool is_conditional, const Asked& asked) const {
  std::vector<const Candidate*> tied;
  std::tuple<size_t, size_t, long> top{0, 0, 0};
  for (const Candidate& c : list) {
    const Response& r = recording_.exchanges[c.index].response;
    if (!is_conditional && r.status == 304 && r.body.empty()) continue;
    const size_t common = common_params(params, c.params);
    const size_t others = params.size() + c.params.size() - 2 * common;
    if (options_.strict && others > 0) continue;
    const std::tuple<size_t, size_t, long> score{common, common_names(params, c.params), -static_cast<long>(others)};
    if (!tied.empty() && score < top) continue;
    if (tied.empty() || score > top) tied.clear();
    top = score;
    tied.push_back(&c);
  }
  if (tied.size() < 2) return tied;
  std::vector<size_t> agree;
  for (const Candidate* c : tied)
    agree.push_back(agreeing_headers(recording_.exchanges[c->index].request.headers, asked.headers));
  const size_t most = *std::max_element(agree.begin(), agree.end());
  std::vector<const Candidate*> out;
  for (size_t i = 0; i < tied.size(); ++i)
    if (agree[i] == most) out.push_back(tied[i]);
  return out;
}

const Exchange* Matcher::match(const Asked& asked, Sequence* sequence) const {
  Target t = canonical_target(origin_form(std::string(asked.target)));
  const std::vector<Param> params = kept_params(std::move(t.params));
  const bool revalidation = is_conditional(asked.headers);
  std::vector<const Candidate*> tied;
  if (const Candidates* list = candidates(asked.scheme, asked.host, asked.port, asked.method, t.path))
    tied = best(*list, params, revalidation, asked);
  if (tied.empty() && !options_.strict)
    if (const Candidates* list =
            candidates(other(asked.scheme), asked.host, other_port(asked.port), asked.method, t.path))
      tied = best(*list, params, revalidation, asked);
  if (tied.empty()) return nullptr;
  if (!sequence || tied.size() == 1) return &recording_.exchanges[tied.front()->index];
  if (sequence->served_in_.size() < recording_.exchanges.size())
    sequence->served_in_.resize(recording_.exchanges.size(), 0);
  const Candidate* pick = tied.back();
  for (const Candidate* c : tied)
    if (sequence->served_in_[c->index] != sequence->session_) {
      pick = c;
      break;
    }
  sequence->served_in_[pick->index] = sequence->session_;
  return &recording_.exchanges[pick->index];
}

std::string Matcher::closest(const Asked& asked) const {
  const auto host = by_host_.find(host_name(std::string(asked.host)));
  if (host == by_host_.end()) return "nothing recorded for " + std::string(asked.host);
  const std::string wanted = target_text(canonical_target(origin_form(std::string(asked.target))));
  const Exchange* nearest = nullptr;
  std::tuple<bool, bool, size_t> score;
  for (size_t i : host->second) {
    const Exchange& e = recording_.exchanges[i];
    const std::string recorded = target_text(canonical_target(origin_form(e.request.target)));
    // The same method, then the same scheme, then the longest common prefix.
    const std::tuple<bool, bool, size_t> s{e.request.method == asked.method, e.scheme == asked.scheme,
                                           common_prefix(wanted, recorded)};
    if (!nearest || s > score) nearest = &e, score = s;
  }
  return "closest recorded: " + nearest->request.method + " " +
         url_of(nearest->scheme, nearest->host, nearest->port, nearest->request.target);
}

}  // namespace tracemod::web
