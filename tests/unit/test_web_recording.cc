// tm-webreplay's recordings: Mahimahi's own files (a sample encoded with Mahimahi's schema, and a site recorded
// by mm-webrecord itself, checked against Chromium's HAR of the same site) and tracemod's extensions, read
// alike; HAR files (decoded bodies, h2 pseudo-headers, IPv6, cache entries); what the readers refuse, each
// message naming the file and the problem; origins; and Mahimahi's matching rule.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include "fake.hh"
#include "util/error.hh"
#include "web/http_record.pb.h"
#include "web/matcher.hh"
#include "web/recording.hh"

namespace tracemod::web {
namespace {

const std::string kData = std::string(TM_TEST_DATA) + "/web";

using fake::TempDir;

void write(const std::string& path, const std::string& data) {
  std::ofstream(path, std::ios::binary) << data;
}

// The message of the Error that DO throws, or "" if it throws none.
std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

std::string load_error(const std::string& path) {
  return error_of([&] { load_recording(path); });
}

// An exchange as tm-webrecord writes it: Mahimahi's fields and tracemod's.
pb::RequestResponse record(const std::string& request_line, const std::string& status_line,
                           const std::string& body = "") {
  pb::RequestResponse rr;
  rr.set_ip("192.0.2.1");
  rr.set_port(443);
  rr.set_scheme(pb::RequestResponse::HTTPS);
  rr.mutable_request()->set_first_line(request_line);
  auto* host = rr.mutable_request()->add_header();
  host->set_key("Host");
  host->set_value("a.example");
  rr.mutable_response()->set_first_line(status_line);
  rr.mutable_response()->set_body(body);
  return rr;
}

void save(const std::string& path, const pb::RequestResponse& rr) {
  write(path, rr.SerializeAsString());
}

std::string header(const std::vector<Header>& headers, const std::string& name) {
  for (const Header& h : headers)
    if (h.name == name) return h.value;
  return "(none)";
}

TEST(WebMahimahi, ReadsMahimahisFilesInNameOrderWithChunkingRemoved) {
  const Recording r = load_recording(kData + "/mahimahi-sample");
  ASSERT_EQ(r.exchanges.size(), 3u);
  EXPECT_EQ(r.missing_bodies + r.skipped, 0u);
  const Exchange& page = r.exchanges[0];
  EXPECT_EQ(page.source, kData + "/mahimahi-sample/save.Ab3xQz");
  EXPECT_EQ(page.scheme, Scheme::kHttps);
  EXPECT_EQ(page.host, "www.example.org");
  EXPECT_EQ(page.address, "93.184.216.34");
  EXPECT_EQ(page.port, 443);
  EXPECT_EQ(page.protocol, "http/1.1");
  EXPECT_EQ(page.request.method, "GET");
  EXPECT_EQ(page.request.target, "/index.html");
  EXPECT_EQ(page.request.version, "HTTP/1.1");
  EXPECT_EQ(header(page.request.headers, "User-Agent"), "Mozilla/5.0");
  EXPECT_EQ(page.response.status, 200);
  EXPECT_EQ(page.response.reason, "OK");
  EXPECT_EQ(page.response.body, "<html>hello</html>");                       // two chunks, one with an extension
  EXPECT_EQ(header(page.response.headers, "Transfer-Encoding"), "chunked");  // as recorded: the server drops it
  EXPECT_EQ(r.exchanges[1].request.target, "/search?q=cats&page=2");
  EXPECT_EQ(r.exchanges[1].response.body, "{\"page\": two}");
  const Exchange& form = r.exchanges[2];
  EXPECT_EQ(form.scheme, Scheme::kHttp);
  EXPECT_EQ(form.host, "plain.example.net");  // "plain.example.net:80"
  EXPECT_EQ(form.port, 80);
  EXPECT_EQ(form.request.body, "a=b");
  EXPECT_EQ(form.response.status, 302);
  EXPECT_EQ(form.response.reason, "Found");
  EXPECT_EQ(form.response.body, "");
}

TEST(WebMahimahi, ReadsTracemodsFieldsAndIgnoresItsSideFiles) {
  TempDir dir;
  pb::RequestResponse rr = record("GET http://ignored.example/x?y HTTP/1.1", "HTTP/1.1 404 Not Found", "gone");
  rr.set_ip("2001:db8::5");
  rr.set_host("Named.Example");
  rr.set_protocol("h2");
  save(dir / "save.000001", rr);
  write(dir / "ca.pem", "-----BEGIN CERTIFICATE-----\n");
  write(dir / "ca.key", "-----BEGIN PRIVATE KEY-----\n");
  write(dir / ".hidden", "x");
  std::filesystem::create_directory(dir / "sub");
  const Recording r = load_recording(dir.path());
  ASSERT_EQ(r.exchanges.size(), 1u);
  const Exchange& e = r.exchanges[0];
  EXPECT_EQ(e.host, "named.example");  // field 16 over the Host header, in lower case
  EXPECT_EQ(e.address, "2001:db8::5");
  EXPECT_EQ(e.protocol, "h2");
  EXPECT_EQ(e.request.version, "HTTP/2");
  EXPECT_EQ(e.request.target, "/x?y");  // absolute form reduced
  EXPECT_EQ(e.response.status, 404);
  EXPECT_EQ(e.response.body, "gone");  // no framing header: the body as stored
}

TEST(WebMahimahi, AHeadResponseAndA304HaveNoBodyAndAnUnframedOneRunsToTheEnd) {
  TempDir dir;
  pb::RequestResponse head = record("HEAD / HTTP/1.1", "HTTP/1.1 200 OK");
  auto* length = head.mutable_response()->add_header();
  length->set_key("Content-Length");
  length->set_value("1000");
  save(dir / "save.1", head);
  save(dir / "save.2", record("GET /old HTTP/1.0", "HTTP/1.0 200 OK", "until the connection closed"));
  const Recording r = load_recording(dir.path());
  ASSERT_EQ(r.exchanges.size(), 2u);
  EXPECT_EQ(r.exchanges[0].response.body, "");
  EXPECT_EQ(header(r.exchanges[0].response.headers, "Content-Length"), "1000");
  EXPECT_EQ(r.exchanges[1].request.version, "HTTP/1.0");
  EXPECT_EQ(r.exchanges[1].response.body, "until the connection closed");
}

TEST(WebMahimahi, RefusesAFileThatIsNoRecordNamingIt) {
  TempDir dir;
  const std::string file = dir / "save.3";
  const std::string prefix = file + ": not a Mahimahi or tracemod record: ";
  write(file, "\xff\xff\xff\xff");
  EXPECT_EQ(load_error(dir.path()), prefix + "not a RequestResponse message");
  write(file, "");
  EXPECT_EQ(load_error(dir.path()), prefix + "no request");
  pb::RequestResponse rr = record("GET / HTTP/1.1", "HTTP/1.1 200 OK");
  rr.clear_response();
  save(file, rr);
  EXPECT_EQ(load_error(dir.path()), prefix + "no response");
  save(file, record("GET / HTTP/1.1", "HTTP/1.1 200 OK"));
  save(dir / "save.4", record("GET / HTTP/1.1", "ICY 200 OK"));
  EXPECT_EQ(
      load_error(dir.path()).rfind(dir / "save.4: not a Mahimahi or tracemod record: status line 'ICY 200 OK': ", 0),
      0u);
  save(dir / "save.4", record("GET", "HTTP/1.1 200 OK"));
  EXPECT_EQ(load_error(dir.path()).rfind(dir / "save.4: not a Mahimahi or tracemod record: request line 'GET': ", 0),
            0u);
  pb::RequestResponse chunked = record("GET / HTTP/1.1", "HTTP/1.1 200 OK", "5\r\nab");
  auto* coding = chunked.mutable_response()->add_header();
  coding->set_key("Transfer-Encoding");
  coding->set_value("chunked");
  save(dir / "save.4", chunked);
  EXPECT_EQ(load_error(dir.path()), dir / "save.4: not a Mahimahi or tracemod record: response body: cut short");
  pb::RequestResponse odd = record("GET / HTTP/1.1", "HTTP/1.1 200 OK");
  odd.set_protocol("h3");
  save(dir / "save.4", odd);
  EXPECT_EQ(load_error(dir.path()),
            dir / "save.4: not a Mahimahi or tracemod record: protocol 'h3' is neither h2 nor http/1.1");
}

TEST(WebRecording, AMissingPathOrAnEmptyRecordingIsAnError) {
  TempDir dir;
  EXPECT_EQ(load_error(dir / "nowhere"), dir / "nowhere: No such file or directory");
  EXPECT_EQ(load_error(dir.path()), dir.path() + ": no recorded exchanges");
  write(dir / "ca.pem", "x");
  EXPECT_EQ(load_error(dir.path()), dir.path() + ": no recorded exchanges");
}

TEST(WebHar, ReadsDecodedBodiesAndHttp2AsAServerReplaysThem) {
  const std::string har = kData + "/handmade.har";
  const Recording r = load_recording(har);
  ASSERT_EQ(r.exchanges.size(), 4u);
  EXPECT_EQ(r.skipped, 1u);         // the blocked request (status 0)
  EXPECT_EQ(r.missing_bodies, 1u);  // big.js, saved without its content
  const Exchange& page = r.exchanges[0];
  EXPECT_EQ(page.source, har + ": entry 1");
  EXPECT_EQ(page.scheme, Scheme::kHttps);
  EXPECT_EQ(page.host, "www.example.org");
  EXPECT_EQ(page.address, "93.184.216.34");
  EXPECT_EQ(page.port, 443);
  EXPECT_EQ(page.protocol, "h2");
  EXPECT_EQ(page.request.version, "HTTP/2");
  EXPECT_EQ(page.request.target, "/");  // the fragment is the browser's
  EXPECT_EQ(header(page.request.headers, "Host"), "www.example.org");
  EXPECT_EQ(header(page.request.headers, ":path"), "(none)");
  EXPECT_EQ(page.response.status, 200);
  EXPECT_EQ(page.response.body, "<html>h\xc3\xa9llo, world</html>");
  EXPECT_EQ(header(page.response.headers, "content-encoding"), "(none)");  // the body is decoded
  EXPECT_EQ(header(page.response.headers, "content-length"), "(none)");
  EXPECT_EQ(header(page.response.headers, "cache-control"), "max-age=600");
  const Exchange& logo = r.exchanges[1];
  EXPECT_EQ(logo.response.body, std::string("\x89PNG\r\n\x1a\n\0\xff", 10));
  EXPECT_EQ(logo.address, "93.184.216.34");  // from the cache: the address the page came from
  const Exchange& api = r.exchanges[2];
  EXPECT_EQ(api.scheme, Scheme::kHttp);
  EXPECT_EQ(api.host, "v6.example.net");
  EXPECT_EQ(api.address, "2001:db8::1");
  EXPECT_EQ(api.port, 8080);
  EXPECT_EQ(api.protocol, "http/1.1");
  EXPECT_EQ(api.request.method, "POST");
  EXPECT_EQ(api.request.target, "/api?x=1&y=2");
  EXPECT_EQ(api.request.body, "k=v");
  EXPECT_EQ(api.response.reason, "Created");
  EXPECT_EQ(api.response.body, "created");
  EXPECT_EQ(header(api.response.headers, "Transfer-Encoding"), "(none)");
  EXPECT_EQ(r.exchanges[3].response.body, "");
  EXPECT_EQ(r.exchanges[3].protocol, "h2");
}

TEST(WebHar, RefusesABadFileNamingTheLineOrEntry) {
  TempDir dir;
  const std::string har = dir / "site.har";
  write(har, "{\n  \"log\": {\n    \"entries\": [,]\n  }\n}\n");
  EXPECT_EQ(load_error(har).rfind(har + ": line 3: syntax error", 0), 0u) << load_error(har);
  write(har, "{\"log\": 1e999999999999999999999}");
  EXPECT_EQ(load_error(har), har + ": not a HAR file: number overflow parsing '1e999999999999999999999'");
  write(har, "{\"log\": {}}");
  EXPECT_EQ(load_error(har), har + ": not a HAR file: no log.entries");
  write(har, "{\"log\": {\"entries\": []}}");
  EXPECT_EQ(load_error(har), har + ": no recorded exchanges");
  const std::string ok = R"({"request": {"method": "GET", "url": "http://a.example/"}, "response": {"status": 200}})";
  write(har, R"({"log": {"entries": [)" + ok + R"(, {"request": {"method": "GET", "url": "http://a.example/"},
                 "response": {"statusText": "OK"}}]}})");
  EXPECT_EQ(load_error(har), har + ": entry 2: no response.status");
  write(har, R"({"log": {"entries": [{"request": {"url": "http://a.example/"}, "response": {"status": 200}}]}})");
  EXPECT_EQ(load_error(har), har + ": entry 1: no request.method");
  write(har, R"({"log": {"entries": [{"request": {"method": "GET", "url": 7}, "response": {"status": 200}}]}})");
  EXPECT_EQ(load_error(har), har + ": entry 1: request.url is not a string");
  write(har, R"({"log": {"entries": [{"request": {"method": "GET", "url": "http://a.example/"},
                 "response": {"status": 200, "content": {"text": "a*b", "encoding": "base64"}}}]}})");
  EXPECT_EQ(load_error(har), har + ": entry 1: response.content.text is not base64");
  write(har, R"({"log": {"entries": [{"request": {"method": "GET", "url": "http://a.example:99999/"},
                 "response": {"status": 200}}]}})");
  EXPECT_EQ(load_error(har), har + ": entry 1: request.url 'http://a.example:99999/' has no valid port");
}

TEST(WebHar, TakesTheHostFromTheUrlPastItsUserAndReadsWrappedBase64) {
  TempDir dir;
  const std::string har = dir / "site.har";
  write(har, R"({"log": {"entries": [{"request": {"method": "GET", "url": "https://me:pw@[2001:db8::9]:8443/a?b#c"},
                 "response": {"status": 200, "content": {"text": "aGVs\r\nbG8=", "encoding": "base64"}}}]}})");
  const Recording r = load_recording(har);
  ASSERT_EQ(r.exchanges.size(), 1u);
  EXPECT_EQ(r.exchanges[0].host, "2001:db8::9");
  EXPECT_EQ(r.exchanges[0].port, 8443);
  EXPECT_EQ(r.exchanges[0].address, "");  // none recorded, none to borrow: the caller assigns one
  EXPECT_EQ(r.exchanges[0].request.target, "/a?b");
  EXPECT_EQ(r.exchanges[0].response.body, "hello");
}

TEST(WebOrigins, OneOriginPerAddressAndPortWithItsNamesSortedOnce) {
  const std::vector<Origin> o = origins(load_recording(kData + "/handmade.har"));
  ASSERT_EQ(o.size(), 3u);
  EXPECT_EQ(o[0].address, "2001:db8::1");
  EXPECT_EQ(o[0].port, 8080);
  EXPECT_EQ(o[0].scheme, Scheme::kHttp);
  EXPECT_EQ(o[0].names, std::vector<std::string>{"v6.example.net"});
  EXPECT_EQ(o[1].address, "203.0.113.9");
  EXPECT_EQ(o[1].names, std::vector<std::string>{"cdn.example.com"});
  EXPECT_EQ(o[2].address, "93.184.216.34");
  EXPECT_EQ(o[2].port, 443);
  EXPECT_EQ(o[2].scheme, Scheme::kHttps);
  EXPECT_EQ(o[2].names, std::vector<std::string>{"www.example.org"});  // two exchanges, one name
}

// A HAR entry without serverIPAddress: each such name gets an address of its own in 198.18.0.0/15, in the names'
// order, so two loads of one file agree (the shell and its far side's server each load it).
TEST(WebOrigins, NamesWithoutAnAddressGetOneEachTheSameEveryTime) {
  Recording r;
  r.path = "x.har";
  for (const char* host : {"b.test", "a.test", "b.test", "c.test"}) {
    Exchange e;
    e.host = host;
    e.port = 443;
    r.exchanges.push_back(e);
  }
  r.exchanges[3].address = "192.0.2.7";  // c.test has one: kept
  EXPECT_EQ(give_addresses(r), 2u);
  EXPECT_EQ(r.exchanges[1].address, "198.18.0.1");  // a.test
  EXPECT_EQ(r.exchanges[0].address, "198.18.0.2");  // b.test
  EXPECT_EQ(r.exchanges[2].address, "198.18.0.2");
  EXPECT_EQ(r.exchanges[3].address, "192.0.2.7");
  EXPECT_EQ(give_addresses(r), 0u);
}

// The recordings of tests/data/web/README.md: one site, by Mahimahi's mm-webrecord and by Chromium.
const Exchange* find(const Recording& r, Scheme scheme, const std::string& host, uint16_t port,
                     const std::string& target) {
  for (const Exchange& e : r.exchanges)
    if (e.scheme == scheme && e.host == host && e.port == port && e.request.target == target) return &e;
  return nullptr;
}

TEST(WebRealRecording, MahimahisRecordingOfTheSiteMatchesChromiumsHar) {
  const Recording mm = load_recording(kData + "/mahimahi-site");
  const Recording har = load_recording(kData + "/site.har");
  ASSERT_EQ(mm.exchanges.size(), 42u);
  ASSERT_EQ(har.exchanges.size(), 42u);
  EXPECT_EQ(har.skipped + har.missing_bodies, 0u);
  size_t chunked = 0, identical = 0;
  for (const Exchange& e : mm.exchanges) {
    EXPECT_EQ(e.protocol, "http/1.1");  // Mahimahi's proxy offers no ALPN
    const Exchange* h = find(har, e.scheme, e.host, e.port, e.request.target);
    ASSERT_NE(h, nullptr) << e.source;
    EXPECT_EQ(e.response.status, h->response.status) << e.source;
    if (header(e.response.headers, "Transfer-Encoding") == "chunked") {
      ++chunked;  // nginx's gzip on the fly: the chunking is gone, the gzip stays (gzip's magic first)
      EXPECT_EQ(e.response.body.substr(0, 2), "\x1f\x8b") << e.source;
    } else if (header(e.response.headers, "Content-Encoding") == "(none)" && e.response.status == 200) {
      ++identical;
      EXPECT_EQ(e.response.body, h->response.body) << e.source;
    }
  }
  EXPECT_EQ(chunked, 14u);
  EXPECT_GE(identical, 20u);  // the PNGs and the font at least
}

TEST(WebRealRecording, AnOriginOnItsOwnPortIsFoundByNameAndPort) {
  const Recording mm = load_recording(kData + "/mahimahi-site");
  const Exchange* plain = find(mm, Scheme::kHttp, "api.replay.test", 8080, "/api/plain.js");
  ASSERT_NE(plain, nullptr);
  EXPECT_EQ(header(plain->request.headers, "Host"), "api.replay.test:8080");
  const Matcher m(mm);
  EXPECT_EQ(m.match(Scheme::kHttp, "10.77.0.3", 8080, "api.replay.test", "GET", "/api/plain.js"), plain);
  EXPECT_EQ(m.match(Scheme::kHttp, "10.77.0.3", 80, "api.replay.test", "GET", "/api/plain.js"), nullptr);
  for (const Exchange& e : mm.exchanges)
    EXPECT_EQ(m.match(e.scheme, e.address, e.port, e.host, e.request.method, e.request.target), &e) << e.source;
  const Exchange* id3 = m.match(Scheme::kHttps, "10.77.0.3", 443, "api.replay.test", "GET", "/api/data?id=3");
  const Exchange* id4 = m.match(Scheme::kHttps, "10.77.0.3", 443, "api.replay.test", "GET", "/api/data?id=4");
  ASSERT_TRUE(id3 && id4);
  EXPECT_NE(id3->response.body, id4->response.body);
  const std::vector<Origin> o = origins(mm);
  ASSERT_EQ(o.size(), 6u);
  EXPECT_EQ(o[3].address, "10.77.0.2");
  EXPECT_EQ(o[3].port, 443);
  EXPECT_EQ(o[3].names, (std::vector<std::string>{"img.replay.test", "static.replay.test"}));
}

TEST(WebRealRecording, ChromiumsHarIsHttp2WithDecodedBodies) {
  const Recording har = load_recording(kData + "/site.har");
  for (const Exchange& e : har.exchanges) {
    EXPECT_EQ(e.protocol, e.scheme == Scheme::kHttps ? "h2" : "http/1.1") << e.source;
    EXPECT_NE(header(e.request.headers, "Host"), "(none)") << e.source;
    for (const Header& h : e.request.headers) EXPECT_NE(h.name[0], ':') << e.source;
    EXPECT_EQ(header(e.response.headers, "content-encoding"), "(none)") << e.source;
  }
  const Exchange* page = find(har, Scheme::kHttps, "www.replay.test", 443, "/");
  ASSERT_NE(page, nullptr);
  EXPECT_EQ(page->address, "10.77.0.1");
  EXPECT_NE(page->response.body.find("<html"), std::string::npos);
  const Exchange* moved = find(har, Scheme::kHttps, "www.replay.test", 443, "/old/logo.png");
  ASSERT_NE(moved, nullptr);
  EXPECT_EQ(moved->response.status, 301);
  EXPECT_EQ(header(moved->response.headers, "location"), "https://img.replay.test/img/logo.png");
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
                 exchange("GET", "/", "plain", "a.example", Scheme::kHttp, 80),
                 exchange("GET", "/", "other port", "a.example", Scheme::kHttps, 8443)};
  return r;
}

class WebMatcher : public testing::Test {
 protected:
  std::string body(const std::string& method, const std::string& target, const std::string& host = "a.example",
                   Scheme scheme = Scheme::kHttps, uint16_t port = 443) const {
    const Exchange* e = matcher_.match(scheme, "198.51.100.1", port, host, method, target);
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
}

TEST_F(WebMatcher, AnotherQueryGetsTheLongestCommonPrefix) {
  EXPECT_EQ(body("GET", "/s?q=cat&p=3"), "cat 1");  // ties with p=2: the first recorded wins
  EXPECT_EQ(body("GET", "/s?q=do"), "dog");
  EXPECT_EQ(body("GET", "/s?q=cat"), "cat");  // equal beats "/s?q=cat&p=1", which only extends it
  EXPECT_EQ(body("GET", "/s?q=ca"), "cat 1");
  EXPECT_EQ(body("GET", "/t?c"), "first");  // nothing in common after "?": the first
  EXPECT_EQ(body("GET", "/s?"), "cat 1");
}

TEST_F(WebMatcher, WithOrWithoutAQueryMatchesOnlyItsKind) {
  EXPECT_EQ(body("GET", "/s"), "no query");
  EXPECT_EQ(body("GET", "/t"), "(none)");
  EXPECT_EQ(body("GET", "/?x"), "(none)");
}

TEST_F(WebMatcher, MethodPathSchemeHostAndPortMustAgree) {
  EXPECT_EQ(body("PUT", "/"), "(none)");
  EXPECT_EQ(body("POST", "/s?q=dog"), "posted");  // method and path agree, the query is closest
  EXPECT_EQ(body("GET", "/s/"), "(none)");
  EXPECT_EQ(body("GET", "/", "b.example"), "(none)");
  EXPECT_EQ(body("GET", "/", "a.example", Scheme::kHttp, 443), "(none)");
  EXPECT_EQ(body("GET", "/", "a.example", Scheme::kHttps, 444), "(none)");
}

TEST_F(WebMatcher, NamesAreCaseInsensitiveAndAnAbsoluteTargetIsReduced) {
  EXPECT_EQ(body("GET", "/s?q=dog", "A.Example"), "dog");
  EXPECT_EQ(body("GET", "https://a.example/s?q=dog"), "dog");
  EXPECT_EQ(body("get", "/"), "(none)");  // methods are case-sensitive
}

TEST(WebMatcherRecording, MatchesTheMahimahiSample) {
  const Recording r = load_recording(kData + "/mahimahi-sample");
  const Matcher m(r);
  const Exchange* e = m.match(Scheme::kHttps, "93.184.216.34", 443, "www.example.org", "GET", "/search?q=dogs");
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->source, kData + "/mahimahi-sample/save.Kk09Lm");
  EXPECT_EQ(m.match(Scheme::kHttps, "93.184.216.34", 443, "www.example.org", "GET", "/search"), nullptr);
  EXPECT_NE(m.match(Scheme::kHttp, "198.51.100.7", 80, "plain.example.net", "POST", "/form"), nullptr);
}

}  // namespace
}  // namespace tracemod::web
