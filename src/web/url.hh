// Request targets as the matcher compares them. Browsers spell one URL differently (Chrome sends "%7C" where
// Firefox sends a raw "|", "%7c" and "%7C" are one byte), so both sides are brought to one spelling: each part
// of the path and each query name and value percent-decoded, then every byte but the unreserved ones
// (RFC 3986: letters, digits, - . _ ~) encoded again in upper-case hex. The separators ("/" between segments,
// "&" and "=" in the query) are split on first, so an encoded "%2F" or "%26" stays apart from a real one.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tracemod::web {

using Param = std::pair<std::string, std::string>;  // a query parameter, canonical: (name, value)

struct Target {
  std::string path;           // canonical: "/a%7Cb/c"
  std::vector<Param> params;  // canonical, in the order given; "a&b=" gives ("a", "") and ("b", "")
};

// TARGET in origin form ("/path?query", no fragment) split and canonicalised.
Target canonical_target(std::string_view target);

// One part (a path segment, a query name or value) canonicalised: decoded, then encoded again.
std::string canonical_part(std::string_view part);

// PARAMS sorted (by name, then value), so two lists can be compared as multisets.
std::vector<Param> sorted(std::vector<Param> params);

// How many parameters two sorted lists share, counted as multisets.
size_t common_params(const std::vector<Param>& a, const std::vector<Param>& b);

// How many parameter names two sorted lists share, whatever their values, counted as multisets.
size_t common_names(const std::vector<Param>& a, const std::vector<Param>& b);

// The canonical target written out again: path, and "?" and the parameters if there are any.
std::string target_text(const Target& t);

}  // namespace tracemod::web
