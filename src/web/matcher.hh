// Which recorded exchange answers a request, by Mahimahi's rule (man/tm-webreplay.1, "MATCHING"). Read-only
// after construction: one Matcher may serve any number of threads.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "web/recording.hh"

namespace tracemod::web {

class Matcher {
 public:
  explicit Matcher(const Recording& recording);  // keeps a reference: RECORDING must outlive it
  // The exchange to answer a request that arrived at ADDRESS:PORT over SCHEME, for HOST (Host or :authority,
  // without a port), with METHOD and TARGET (origin form); null if none matches.
  const Exchange* match(Scheme scheme, const std::string& address, uint16_t port, const std::string& host,
                        const std::string& method, const std::string& target) const;

 private:
  // RECORDING's exchanges by scheme, name, port, method and target up to its "?" (matcher.cc), in recording order.
  std::unordered_map<std::string, std::vector<const Exchange*>> index_;
};

}  // namespace tracemod::web
