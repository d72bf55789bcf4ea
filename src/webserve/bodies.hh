// The bytes each recorded response is served as, made once (webserve/coding.hh): a HAR's decoded body encoded to
// its recorded coding when the server starts (in parallel: startup waits for it, a request never does); a body
// recorded in a coding decoded for a client that does not accept it, on first use; and, for a deterministic
// replay, each HTML document with its script (webserve/inject.hh).
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "web/recording.hh"
#include "webserve/inject.hh"

namespace tracemod::webserve {

class Bodies {
 public:
  // What the preparation did, for the server's start line.
  struct Made {
    std::map<std::string, size_t> encoded;    // HAR bodies encoded again, by coding
    std::map<std::string, size_t> uncodable;  // HAR bodies whose recorded coding cannot be made: served decoded
    size_t injected = 0, not_injected = 0;    // HTML documents given the deterministic script, or not (no element)
  };

  // Prepares every exchange of RECORDING (which must outlive this); INJECTION (null: none) goes into each HTML
  // document. THREADS workers at most.
  Bodies(const web::Recording& recording, const Injection* injection, unsigned threads);
  ~Bodies();

  struct Body {
    const std::string* bytes;  // never null
    std::string coding;        // its Content-Encoding ("" for none)
  };
  // Exchange I's body for a client whose Accept-Encoding is ACCEPT (null: none given): in its recorded coding if
  // the client accepts it, else without (where it can be undone). Not thread-safe (a first decoding is cached).
  Body body(size_t i, const std::string* accept);
  // Exchange I's headers if injection rewrote its policies, else null.
  const std::vector<web::Header>* headers(size_t i) const;

  const Made& made() const { return made_; }

 private:
  struct Entry;
  void prepare(size_t i, const Injection* injection);
  const web::Recording& recording_;
  std::vector<std::unique_ptr<Entry>> entries_;
  Made made_;
};

}  // namespace tracemod::webserve
