// What tm-webreplay makes of a recorded page and its fields: the input's first line as a Content-Security-Policy
// (allow_script), an Accept-Encoding (accepts) and a date (parse_http_date, and a Set-Cookie's expiry moved), the
// rest as an HTML document (inject, with gumbo) and as a body to code (gzip, deflate, br, each undone again).
// Properties: the script lands in the document whole; the policy names its hash or a nonce, or allows inline
// scripts; what is encoded decodes to itself.
#include "fuzz.hh"
#include "web/http_date.hh"
#include "webserve/coding.hh"
#include "webserve/dates.hh"
#include "webserve/inject.hh"

using namespace tracemod;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto [line, rest] = fuzz::first_line(fuzz::text(data, size));
  static const webserve::Injection injection = webserve::deterministic_script(1500000000000, 1);
  std::string nonce;
  const std::string policy = webserve::allow_script(line, injection, &nonce);
  for (char c : nonce)
    FUZZ_CHECK(std::isalnum(static_cast<unsigned char>(c)) || std::string("+/=-_").find(c) != std::string::npos);
  webserve::accepts(&line, "gzip");
  if (const auto t = web::parse_http_date(line)) web::format_http_date(*t);
  std::vector<web::Header> headers = {{"Set-Cookie", "a=1; expires=" + line}, {"Expires", line}};
  webserve::refresh_dates(headers, 1500000000000, 1600000000);
  if (const auto page = webserve::inject(rest, injection, nonce)) {
    FUZZ_CHECK(page->size() > rest.size());
    FUZZ_CHECK(page->find(injection.script) != std::string::npos);
  }
  for (const char* coding : {"gzip", "deflate", "br"}) {
    const auto coded = webserve::encode(coding, rest);
    FUZZ_CHECK(coded && webserve::decode(coding, *coded) == rest);
    webserve::decode(coding, rest, 1 << 20);  // the input as a coded body: refused or read, never more than asked
  }
  return 0;
}
