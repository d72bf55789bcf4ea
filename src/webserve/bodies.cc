#include "webserve/bodies.hh"

#include <algorithm>
#include <atomic>
#include <optional>
#include <thread>

#include "webserve/coding.hh"

namespace tracemod::webserve {

struct Bodies::Entry {
  // Where the response's own body serves, these point into the recording; otherwise into the strings below.
  const std::string* plain = nullptr;  // without a coding (null: not made yet, or cannot be)
  const std::string* coded = nullptr;  // in the response's coding (null: it has none, or it cannot be made)
  std::string plain_made, coded_made;
  bool plain_tried = false;
  std::optional<std::vector<web::Header>> headers;  // rewritten by injection
};

namespace {

bool needs_work(const web::Response& r, const Injection* injection) {
  return (r.decoded && !r.coding.empty()) || (injection && is_html_document(r));
}

}  // namespace

Bodies::Bodies(const web::Recording& recording, const Injection* injection, unsigned threads) : recording_(recording) {
  const size_t n = recording.exchanges.size();
  entries_.resize(n);
  std::vector<size_t> work;
  for (size_t i = 0; i < n; ++i) {
    entries_[i] = std::make_unique<Entry>();
    const web::Response& r = recording.exchanges[i].response;
    Entry& e = *entries_[i];
    if (r.coding.empty() || r.decoded) {
      e.plain = &r.body;
      e.plain_tried = true;
    } else {
      e.coded = &r.body;
    }
    if (needs_work(r, injection)) work.push_back(i);
  }
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t k; (k = next++) < work.size();) prepare(work[k], injection);
  };
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < std::min<size_t>(std::max(1u, threads), work.size()); ++t) pool.emplace_back(worker);
  worker();
  for (std::thread& t : pool) t.join();
  for (size_t i : work) {  // counted here, after the workers: no lock needed while they ran
    const web::Response& r = recording.exchanges[i].response;
    const Entry& e = *entries_[i];
    if (r.decoded && !r.coding.empty()) ++(e.coded ? made_.encoded : made_.uncodable)[r.coding];
    if (injection && is_html_document(r)) ++(e.headers ? made_.injected : made_.not_injected);
  }
}

Bodies::~Bodies() = default;

// Runs on a worker: touches only entry I.
void Bodies::prepare(size_t i, const Injection* injection) {
  const web::Response& r = recording_.exchanges[i].response;
  Entry& e = *entries_[i];
  if (injection && is_html_document(r)) {
    web::Response copy = r;
    std::optional<std::string> plain =
        r.decoded || r.coding.empty() ? std::optional<std::string>(r.body) : decode(r.coding, r.body);
    if (plain) {
      copy.body = std::move(*plain);
      if (inject_into(copy, *injection)) {
        e.plain_made = std::move(copy.body);
        e.plain = &e.plain_made;
        e.plain_tried = true;
        e.headers = std::move(copy.headers);
        e.coded = nullptr;  // the recorded coded body lacks the script: encode the new one below
      }
    }
  }
  if (!r.coding.empty() && !e.coded && e.plain) {
    if (std::optional<std::string> coded = encode(r.coding, *e.plain)) {
      e.coded_made = std::move(*coded);
      e.coded = &e.coded_made;
    }
  }
}

Bodies::Body Bodies::body(size_t i, const std::string* accept) {
  const web::Response& r = recording_.exchanges[i].response;
  Entry& e = *entries_[i];
  if (e.coded && accepts(accept, r.coding)) return {e.coded, r.coding};
  if (!e.plain_tried) {
    e.plain_tried = true;
    if (std::optional<std::string> plain = decode(r.coding, r.body)) {
      e.plain_made = std::move(*plain);
      e.plain = &e.plain_made;
    }
  }
  if (e.plain) return {e.plain, ""};
  return {e.coded, r.coding};  // a coding that cannot be undone: as recorded, better than nothing
}

const std::vector<web::Header>* Bodies::headers(size_t i) const {
  const Entry& e = *entries_[i];
  return e.headers ? &*e.headers : nullptr;
}

}  // namespace tracemod::webserve
