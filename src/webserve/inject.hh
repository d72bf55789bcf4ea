// Deterministic replay (tm-webreplay --deterministic): a script put first in every recorded HTML document fixes
// what makes two loads of one page run its scripts differently -- the clock (Date, Date.now: from a seed time,
// 50 ms further every 25 reads, as Web Page Replay does) and randomness (Math.random, crypto.getRandomValues,
// crypto.randomUUID: a seeded generator) -- and each Content-Security-Policy, header or <meta>, is rewritten so
// that the script may run. performance.now and the page's timing are left alone: they are what is measured.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "web/recording.hh"

namespace tracemod::webserve {

struct Injection {
  std::string script;  // the script's text, seeded
  std::string hash;    // its CSP hash source: 'sha256-...'
};

// The script for a page whose clock starts at TIME_MS (ms since the epoch) and whose randomness is seeded with
// SEED.
Injection deterministic_script(int64_t time_ms, uint64_t seed);

// Whether RESPONSE is an HTML document a browser runs: text/html, a body, a status that shows it (200, 203, or a
// 304 saved with its body, served as the 200 it stands for).
bool is_html_document(const web::Response& response);

// POLICY (one Content-Security-Policy value) rewritten to let INJECTION run: where it names a nonce for
// scripts, as it is (the script takes the nonce, put in *NONCE); else where it restricts inline scripts, with the
// script's hash added ('none' removed); a policy that allows inline scripts outright is left as it is.
std::string allow_script(std::string_view policy, const Injection& injection, std::string* nonce);

// HTML with the script inserted after its <head> tag (else its <html> tag, else before its first element, never
// before a doctype), carrying NONCE if not empty, and each <meta http-equiv="Content-Security-Policy"> rewritten
// by allow_script. Nothing if HTML cannot take it (no element at all, or UTF-16).
std::optional<std::string> inject(std::string_view html, const Injection& injection, const std::string& nonce);

// RESPONSE (an HTML document, its body decoded) with the script in its body and its CSP headers rewritten; false
// if the body could not take it (then RESPONSE is unchanged).
bool inject_into(web::Response& response, const Injection& injection);

}  // namespace tracemod::webserve
