// The matcher (web/matcher.hh): URLs in one spelling whichever browser wrote them, the query as a multiset,
// ignored parameters, strict matching, the other scheme's recording for an upgraded request, request headers
// breaking ties, repeated requests served in recorded order, 304s saved without a body kept for conditional
// requests, and what a miss's log line names as the closest recorded request.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "web/matcher.hh"
#include "web/recording.hh"
#include "web/url.hh"

namespace tracemod::web {
namespace {

TEST(WebUrl, OneSpellingForWhatBrowsersSpellDifferently) {
  EXPECT_EQ(canonical_part("a|b"), "a%7Cb");    // Firefox's raw "|"
  EXPECT_EQ(canonical_part("a%7Cb"), "a%7Cb");  // Chrome's
  EXPECT_EQ(canonical_part("a%7cb"), "a%7Cb");
  EXPECT_EQ(canonical_part("%41%2d%7e"), "A-~");  // unreserved bytes decoded
  EXPECT_EQ(canonical_part("caf\xc3\xa9 x"), "caf%C3%A9%20x");
  EXPECT_EQ(canonical_part("100%"), "100%25");  // a "%" that starts no escape
  EXPECT_EQ(canonical_part("%zz"), "%25zz");
  const Target t = canonical_target("/a%2Fb/c|d?x=1&y=a%26b&&z&%7C=%7c");
  EXPECT_EQ(t.path, "/a%2Fb/c%7Cd");  // an encoded "/" stays apart from the separators
  EXPECT_EQ(t.params, (std::vector<Param>{{"x", "1"}, {"y", "a%26b"}, {"z", ""}, {"%7C", "%7C"}}));
  EXPECT_EQ(target_text(t), "/a%2Fb/c%7Cd?x=1&y=a%26b&z=&%7C=%7C");
  EXPECT_EQ(canonical_target("/").path, "/");
  EXPECT_TRUE(canonical_target("/p?").params.empty());
}

TEST(WebUrl, ParametersCompareAsMultisets) {
  const std::vector<Param> a = sorted({{"a", "1"}, {"b", "2"}, {"a", "1"}});
  const std::vector<Param> b = sorted({{"a", "1"}, {"b", "3"}});
  EXPECT_EQ(common_params(a, b), 1u);
  EXPECT_EQ(common_names(a, b), 2u);
  EXPECT_EQ(common_params(a, a), 3u);
}

Exchange exchange(const std::string& method, const std::string& target, const std::string& body,
                  const std::string& host = "a.example", Scheme scheme = Scheme::kHttps, uint16_t port = 443) {
  Exchange e;
  e.scheme = scheme;
  e.host = host;
  e.address = "192.0.2.1";
  e.port = port;
  e.request.method = method;
  e.request.target = target;
  e.response.status = 200;
  e.response.body = body;
  return e;
}

Recording matcher_recording() {
  Recording r;
  r.exchanges = {exchange("GET", "/", "home"),
                 exchange("GET", "/s?q=cat&p=1", "cat 1"),
                 exchange("GET", "/s?q=cat&p=2", "cat 2"),
                 exchange("GET", "/s?q=dog", "dog"),
                 exchange("GET", "/s", "no query"),
                 exchange("POST", "/s?q=cat&p=1", "posted"),
                 exchange("GET", "/s?q=cat", "cat"),
                 exchange("GET", "/t?a", "first"),
                 exchange("GET", "/t?b", "second"),
                 exchange("GET", "/js/app_RC%7Cv2.js", "bundle"),
                 exchange("GET", "/v?x=1&_=111", "busted"),
                 exchange("GET", "/", "plain", "a.example", Scheme::kHttp, 80),
                 exchange("GET", "/", "other port", "a.example", Scheme::kHttps, 8443),
                 exchange("GET", "/only-plain", "plain only", "a.example", Scheme::kHttp, 80),
                 exchange("GET", "/", "http site", "h.example", Scheme::kHttp, 80),
                 exchange("GET", "/", "https site", "s.example", Scheme::kHttps, 443)};
  return r;
}

class WebMatcher : public testing::Test {
 protected:
  std::string body(const std::string& method, const std::string& target, const std::string& host = "a.example",
                   Scheme scheme = Scheme::kHttps, uint16_t port = 443) const {
    return body_of(matcher_, method, target, host, scheme, port);
  }
  static std::string body_of(const Matcher& m, const std::string& method, const std::string& target,
                             const std::string& host = "a.example", Scheme scheme = Scheme::kHttps,
                             uint16_t port = 443) {
    const Exchange* e = m.match(Asked{scheme, port, host, method, target});
    return e ? e->response.body : "(none)";
  }

  const Recording recording_ = matcher_recording();
  const Matcher matcher_{recording_};
};

TEST_F(WebMatcher, ExactRequestsFindTheirExchange) {
  EXPECT_EQ(body("GET", "/"), "home");
  EXPECT_EQ(body("GET", "/s?q=cat&p=2"), "cat 2");
  EXPECT_EQ(body("POST", "/s?q=cat&p=1"), "posted");
  EXPECT_EQ(body("GET", "/", "a.example", Scheme::kHttp, 80), "plain");
  EXPECT_EQ(body("GET", "/", "a.example", Scheme::kHttps, 8443), "other port");
  for (const Exchange& e : recording_.exchanges)
    EXPECT_EQ(matcher_.match(Asked{e.scheme, e.port, e.host, e.request.method, e.request.target}), &e);
}

TEST_F(WebMatcher, TheQueryIsAMultisetTheMostEqualParametersWin) {
  EXPECT_EQ(body("GET", "/s?p=2&q=cat"), "cat 2");  // another order: the same request
  EXPECT_EQ(body("GET", "/s?q=cat&p=3"), "cat 1");  // q=cat agrees with three; two have a p too: the first
  EXPECT_EQ(body("GET", "/s?q=cat&p=1&r=9"), "cat 1");
  EXPECT_EQ(body("GET", "/s?q=do"), "dog");   // no value agrees: the same name does
  EXPECT_EQ(body("GET", "/s?q=cat"), "cat");  // equal beats "/s?q=cat&p=1", which only extends it
  EXPECT_EQ(body("GET", "/t?c"), "first");    // nothing in common: the first recorded
  EXPECT_EQ(body("GET", "/s?"), "no query");
  EXPECT_EQ(body("GET", "/s"), "no query");
  EXPECT_EQ(body("GET", "/t"), "first");             // Mahimahi found none: the path was recorded
  EXPECT_EQ(body("GET", "/v?_=999&x=1"), "busted");  // a cache-buster's other value
}

TEST_F(WebMatcher, PercentEncodingIsNormalisedOnBothSides) {
  EXPECT_EQ(body("GET", "/js/app_RC|v2.js"), "bundle");  // Firefox asks with a raw "|" for Chrome's "%7C"
  EXPECT_EQ(body("GET", "/js/app_RC%7cv2.js"), "bundle");
  EXPECT_EQ(body("GET", "/%73?q=%63at"), "cat");  // "%73" is "s", "%63" is "c"
}

TEST_F(WebMatcher, MethodPathHostAndPortMustAgree) {
  EXPECT_EQ(body("PUT", "/"), "(none)");
  EXPECT_EQ(body("POST", "/s?q=dog"), "posted");  // method and path agree, the query is closest
  EXPECT_EQ(body("GET", "/s/"), "(none)");
  EXPECT_EQ(body("GET", "/", "b.example"), "(none)");
  EXPECT_EQ(body("GET", "/", "a.example", Scheme::kHttps, 444), "(none)");
  EXPECT_EQ(body("GET", "/s?q=dog", "A.Example"), "dog");
  EXPECT_EQ(body("GET", "https://a.example/s?q=dog"), "dog");  // an absolute target is reduced
  EXPECT_EQ(body("get", "/"), "(none)");                       // methods are case-sensitive
}

// HSTS (a name preloaded, or a Strict-Transport-Security recorded) and the browsers' HTTPS upgrades ask over https
// for what was recorded over http; a user types http:// for an https site. Only what the asked scheme never
// recorded for that path is taken from the other.
TEST_F(WebMatcher, AnUpgradedRequestIsAnsweredFromTheOtherSchemesRecording) {
  EXPECT_EQ(body("GET", "/", "h.example", Scheme::kHttps, 443), "http site");
  EXPECT_EQ(body("GET", "/", "s.example", Scheme::kHttp, 80), "https site");
  EXPECT_EQ(body("GET", "/only-plain", "a.example", Scheme::kHttps, 443), "plain only");
  EXPECT_EQ(body("GET", "/", "a.example", Scheme::kHttps, 443), "home");  // its own scheme's first
  EXPECT_EQ(body("GET", "/", "a.example", Scheme::kHttp, 80), "plain");
  const Matcher strict(recording_, MatchOptions{true, {}});
  EXPECT_EQ(body_of(strict, "GET", "/", "h.example", Scheme::kHttps, 443), "(none)");
  EXPECT_EQ(body_of(strict, "GET", "/s?p=2&q=cat"), "cat 2");  // strict, but the order is no part of a query
  EXPECT_EQ(body_of(strict, "GET", "/s?q=cat&p=3"), "(none)");
  EXPECT_EQ(body_of(strict, "GET", "/js/app_RC|v2.js"), "bundle");
}

TEST_F(WebMatcher, IgnoredParametersAreNotComparedOnEitherSide) {
  const Matcher m(recording_, MatchOptions{true, {"_", "p"}});
  EXPECT_EQ(body_of(m, "GET", "/v?x=1&_=999"), "busted");
  EXPECT_EQ(body_of(m, "GET", "/v?x=1"), "busted");
  EXPECT_EQ(body_of(m, "GET", "/s?q=cat&p=7"), "cat 1");  // p ignored: three equal; the first recorded
  EXPECT_EQ(body_of(m, "GET", "/v?x=2&_=1"), "(none)");   // x is still compared
}

TEST(WebMatcherTies, RequestHeadersBreakTiesThenRepeatsComeInRecordedOrder) {
  Recording r;
  for (const char* body : {"one", "two", "three"}) r.exchanges.push_back(exchange("GET", "/poll", body));
  r.exchanges[1].request.headers = {{"Accept", "application/json"}};
  const Matcher m(r);
  const std::vector<Header> json = {{"accept", "application/json"}};
  EXPECT_EQ(m.match(Asked{Scheme::kHttps, 443, "a.example", "GET", "/poll", &json})->response.body, "two");
  EXPECT_EQ(m.match(Asked{Scheme::kHttps, 443, "a.example", "GET", "/poll"})->response.body, "one");
  Sequence seq(r.exchanges.size());
  const Asked poll{Scheme::kHttps, 443, "a.example", "GET", "/poll"};
  std::vector<std::string> served;
  for (int i = 0; i < 4; ++i) served.push_back(m.match(poll, &seq)->response.body);
  EXPECT_EQ(served, (std::vector<std::string>{"one", "two", "three", "three"}));  // then the last again
  seq.new_session();
  EXPECT_EQ(m.match(poll, &seq)->response.body, "one");  // a new page load starts over
}

TEST(WebMatcherTies, A304SavedWithoutItsBodyAnswersOnlyARevalidation) {
  Recording r;
  r.exchanges = {exchange("GET", "/a.css", ""), exchange("GET", "/b.css", ""), exchange("GET", "/b.css", "b{}")};
  r.exchanges[0].response.status = 304;
  r.exchanges[1].response.status = 304;
  const Matcher m(r);
  const std::vector<Header> revalidating = {{"If-None-Match", "\"1\""}};
  EXPECT_EQ(m.match(Asked{Scheme::kHttps, 443, "a.example", "GET", "/a.css"}), nullptr);
  EXPECT_EQ(m.match(Asked{Scheme::kHttps, 443, "a.example", "GET", "/a.css", &revalidating}), &r.exchanges[0]);
  EXPECT_EQ(m.match(Asked{Scheme::kHttps, 443, "a.example", "GET", "/b.css"}), &r.exchanges[2]);
}

TEST_F(WebMatcher, AMissNamesTheClosestRecordedRequest) {
  EXPECT_EQ(matcher_.closest(Asked{Scheme::kHttps, 443, "a.example", "GET", "/s/x"}),
            "closest recorded: GET https://a.example/s?q=cat&p=1");
  EXPECT_EQ(matcher_.closest(Asked{Scheme::kHttps, 443, "a.example", "GET", "/js/app.js"}),
            "closest recorded: GET https://a.example/js/app_RC%7Cv2.js");
  EXPECT_EQ(matcher_.closest(Asked{Scheme::kHttp, 80, "a.example", "DELETE", "/"}),
            "closest recorded: GET http://a.example/");
  EXPECT_EQ(matcher_.closest(Asked{Scheme::kHttps, 443, "nowhere.example", "GET", "/"}),
            "nothing recorded for nowhere.example");
}

}  // namespace
}  // namespace tracemod::web
