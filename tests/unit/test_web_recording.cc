// tm-webreplay's recordings: Mahimahi's own files (a sample encoded with Mahimahi's schema, and a site recorded
// by mm-webrecord itself, checked against Chromium's HAR of the same site) and tracemod's extensions, read
// alike; HAR files (decoded bodies, h2 pseudo-headers, IPv6, cache entries); what the readers leave out and
// count, each reason naming the file and the problem; what they refuse outright; origins. (The matcher:
// test_web_matcher.cc; what is made fit for the wire: test_web_wire.cc.)
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
  EXPECT_EQ(r.notes.missing_bodies + r.notes.skipped + r.notes.malformed, 0u);
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
  EXPECT_EQ(page.response.body, "<html>hello</html>");                      // two chunks, one with an extension
  EXPECT_EQ(header(page.response.headers, "Transfer-Encoding"), "(none)");  // the server frames the body itself
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
  EXPECT_EQ(header(r.exchanges[0].response.headers, "Content-Length"), "(none)");  // the server sets its own
  EXPECT_EQ(r.notes.short_bodies, 0u);                                             // HEAD: no body to be short
  EXPECT_EQ(r.exchanges[1].request.version, "HTTP/1.0");
  EXPECT_EQ(r.exchanges[1].response.body, "until the connection closed");
}

// The reason the one file of DIR (or the first of several) is left out for, as the error of a recording with no
// other exchange says it.
std::string reason(const std::string& dir) {
  const std::string e = load_error(dir);
  const std::string tail = " (and no other exchange could be read either)";
  return e.size() > tail.size() && e.compare(e.size() - tail.size(), tail.size(), tail) == 0
             ? e.substr(0, e.size() - tail.size())
             : "(loaded: " + e + ")";
}

TEST(WebMahimahi, AFileThatIsNoRecordIsLeftOutNamedAndCounted) {
  TempDir dir;
  const std::string file = dir / "save.3";
  const std::string prefix = file + ": not a Mahimahi or tracemod record: ";
  write(file, "\xff\xff\xff\xff");
  EXPECT_EQ(reason(dir.path()), prefix + "not a RequestResponse message");
  write(file, "");
  EXPECT_EQ(reason(dir.path()), prefix + "no request");
  pb::RequestResponse rr = record("GET / HTTP/1.1", "HTTP/1.1 200 OK");
  rr.clear_response();
  save(file, rr);
  EXPECT_EQ(reason(dir.path()), prefix + "no response");
  rr = record("GET / HTTP/1.1", "HTTP/1.1 200 OK");
  rr.set_ip("not-an-ip");
  save(file, rr);
  EXPECT_EQ(reason(dir.path()), prefix + "ip 'not-an-ip' is no IP address");
  rr = record("GET / HTTP/1.1", "HTTP/1.1 200 OK");
  rr.set_host("a host");
  save(file, rr);
  EXPECT_EQ(reason(dir.path()), prefix + "host 'a host' is no name a client can ask for");
  save(file, record("GET / HTTP/1.1", "ICY 200 OK"));
  EXPECT_EQ(reason(dir.path()).rfind(prefix + "status line 'ICY 200 OK': ", 0), 0u);
  save(file, record("GET", "HTTP/1.1 200 OK"));
  EXPECT_EQ(reason(dir.path()).rfind(prefix + "request line 'GET': ", 0), 0u);
  pb::RequestResponse chunked = record("GET / HTTP/1.1", "HTTP/1.1 200 OK", "5\r\nab");
  auto* coding = chunked.mutable_response()->add_header();
  coding->set_key("Transfer-Encoding");
  coding->set_value("chunked");
  save(file, chunked);
  EXPECT_EQ(reason(dir.path()), prefix + "response body: cut short");
  pb::RequestResponse odd = record("GET / HTTP/1.1", "HTTP/1.1 200 OK");
  odd.set_protocol("h3");
  save(file, odd);
  EXPECT_EQ(reason(dir.path()), prefix + "protocol 'h3' is neither h2 nor http/1.1");
  // Beside a good one, the bad file is left out and counted, its reason kept: the rest replays.
  save(dir / "save.1", record("GET / HTTP/1.1", "HTTP/1.1 200 OK"));
  const Recording r = load_recording(dir.path());
  EXPECT_EQ(r.exchanges.size(), 1u);
  EXPECT_EQ(r.notes.malformed, 1u);
  EXPECT_EQ(r.notes.first_malformed, prefix + "protocol 'h3' is neither h2 nor http/1.1");
}

TEST(WebMahimahi, ALoopbackAddressIsGivenAnotherAndAShortBodyIsSaid) {
  TempDir dir;
  pb::RequestResponse rr = record("GET / HTTP/1.1", "HTTP/1.1 200 OK", "12345");
  rr.set_ip("127.0.0.1");  // recorded through a proxy on the recorder's own machine
  auto* length = rr.mutable_response()->add_header();
  length->set_key("Content-Length");
  length->set_value("10");
  save(dir / "save.1", rr);
  Recording r = load_recording(dir.path());
  ASSERT_EQ(r.exchanges.size(), 1u);
  EXPECT_EQ(r.exchanges[0].address, "");
  EXPECT_EQ(r.notes.readdressed, 1u);
  EXPECT_EQ(r.notes.short_bodies, 1u);
  EXPECT_EQ(r.notes.first_short, dir / "save.1: 5 of 10 bytes");
  EXPECT_EQ(give_addresses(r), 1u);
  EXPECT_EQ(r.exchanges[0].address, "198.18.0.1");
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
  EXPECT_EQ(r.notes.skipped, 1u);         // the blocked request (status 0)
  EXPECT_EQ(r.notes.missing_bodies, 1u);  // big.js, saved without its content
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
  EXPECT_TRUE(page.response.decoded);
  EXPECT_EQ(page.response.coding, "gzip");     // as the origin sent it: the server encodes the body again
  EXPECT_EQ(page.recorded_ms, 1795687200000);  // its startedDateTime: no Date was recorded
  EXPECT_EQ(header(page.response.headers, "content-encoding"), "(none)");
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

TEST(WebHar, RefusesABadFileNamingTheLine) {
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
  EXPECT_EQ(load_error("/dev/null"), "/dev/null: not a regular file (give a HAR file or a recording directory)");
}

// One entry a HAR writer got wrong costs that entry, not the file: it is left out, counted, and the first one's
// reason kept for the one line the tool says.
TEST(WebHar, LeavesOutAMalformedEntryNamingTheFirst) {
  TempDir dir;
  const std::string har = dir / "site.har";
  const std::string ok = R"({"request": {"method": "GET", "url": "http://a.example/"}, "response": {"status": 200}})";
  const auto entry_error = [&](const std::string& entry) {
    write(har, R"({"log": {"entries": [)" + ok + ", " + entry + "]}}");
    const Recording r = load_recording(har);
    EXPECT_EQ(r.exchanges.size(), 1u);
    EXPECT_EQ(r.notes.malformed, 1u);
    return r.notes.first_malformed;
  };
  EXPECT_EQ(entry_error(R"({"request": {"method": "GET", "url": "http://a.example/"}, "response": {}})"),
            har + ": entry 2: no response.status");
  EXPECT_EQ(entry_error(R"({"request": {"method": null, "url": "http://a.example/"}, "response": {"status": 200}})"),
            har + ": entry 2: no request.method");
  EXPECT_EQ(entry_error(R"({"request": {"method": "GE T", "url": "http://a.example/"}, "response": {"status": 200}})"),
            har + ": entry 2: request.method 'GE T' is not a method");
  EXPECT_EQ(entry_error(R"({"request": {"method": "GET", "url": 7}, "response": {"status": 200}})"),
            har + ": entry 2: request.url is not a string");
  EXPECT_EQ(entry_error(R"({"request": {"method": "GET", "url": "http://a b/"}, "response": {"status": 200}})"),
            har + ": entry 2: request.url 'http://a b/': no host a client can ask for");
  EXPECT_EQ(entry_error(R"({"request": {"method": "GET", "url": "http://a.example/"},
                 "response": {"status": 200, "content": {"text": "a*b", "encoding": "base64"}}})"),
            har + ": entry 2: response.content.text is not base64");
  EXPECT_EQ(entry_error(R"({"request": {"method": "GET", "url": "http://a.example:99999/"},
                 "response": {"status": 200}})"),
            har + ": entry 2: request.url 'http://a.example:99999/' has no valid port");
  write(har, R"({"log": {"entries": [{"request": {"method": "GET"}, "response": {"status": 200}}]}})");
  EXPECT_EQ(load_error(har), har + ": entry 1: no request.url (and no other exchange could be read either)");
}

TEST(WebHar, ABodyOfSizeZeroWithAContentLengthIsOneNotSaved) {
  TempDir dir;
  const std::string har = dir / "wpt.har";
  // As WebPageTest 2.17 wrote en.wikipedia.org's (tests/data/web/real/): no text, size 0, the length in a field.
  write(har, R"({"log": {"entries": [{"request": {"method": "GET", "url": "https://a.example/"},
     "response": {"status": 200, "headers": [{"name": "content-length", "value": "16681"},
                                             {"name": "content-encoding", "value": "gzip"}],
                  "content": {"size": 0, "mimeType": "text/html"}}}]}})");
  const Recording r = load_recording(har);
  EXPECT_EQ(r.notes.missing_bodies, 1u);
  EXPECT_TRUE(r.exchanges[0].response.decoded);  // an empty body, not an empty gzip stream
}

TEST(WebHar, SaysWhatItCouldNotCheckOrServeAsRecorded) {
  TempDir dir;
  const std::string har = dir / "site.har";
  // A short body; one with no size; a 304 saved with its body (Firefox), which keeps the type it came with; a
  // proxy's loopback address; a byte order mark before it all (Fiddler).
  write(har,
        "\xEF\xBB\xBF"
        R"({"log": {"entries": [
    {"request": {"method": "GET", "url": "http://a.example/"}, "serverIPAddress": "127.0.0.1",
     "response": {"status": 200, "content": {"size": 100, "text": "short"}}},
    {"request": {"method": "GET", "url": "http://a.example/x"},
     "response": {"status": 200, "content": {"text": "unsized"}}},
    {"request": {"method": "GET", "url": "http://a.example/y"},
     "response": {"status": 304, "headers": [{"name": "ETag", "value": "\"1\""}],
                  "content": {"size": 4, "mimeType": "text/css", "text": "p{} "}}}]}})");
  const Recording r = load_recording(har);
  ASSERT_EQ(r.exchanges.size(), 3u);
  EXPECT_EQ(r.notes.short_bodies, 1u);
  EXPECT_EQ(r.notes.first_short, har + ": entry 1: 5 of 100 bytes");
  EXPECT_EQ(r.notes.unsized, 1u);
  EXPECT_EQ(r.notes.readdressed, 1u);
  EXPECT_EQ(r.exchanges[0].address, "");
  EXPECT_EQ(header(r.exchanges[2].response.headers, "Content-Type"), "text/css");
  EXPECT_EQ(r.exchanges[2].response.body, "p{} ");
  const std::vector<std::string> lines = describe_notes(r);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0], har +
                          ": 1 body is shorter than the size recorded for them (the first, entry 1: 5 of 100 "
                          "bytes): served as they are");
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
  EXPECT_EQ(r.exchanges[0].address, "2001:db8::9");  // an IP literal: where a client connects
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
  EXPECT_EQ(har.notes.skipped + har.notes.missing_bodies + har.notes.malformed, 0u);
  size_t chunked = 0, identical = 0;
  for (const Exchange& e : mm.exchanges) {
    EXPECT_EQ(e.protocol, "http/1.1");  // Mahimahi's proxy offers no ALPN
    const Exchange* h = find(har, e.scheme, e.host, e.port, e.request.target);
    ASSERT_NE(h, nullptr) << e.source;
    EXPECT_EQ(e.response.status, h->response.status) << e.source;
    if (e.response.coding == "gzip") {
      ++chunked;  // nginx's gzip (on the fly, chunked; or gzip_static): the chunking is gone, the gzip stays
      EXPECT_EQ(e.response.body.substr(0, 2), "\x1f\x8b") << e.source;
      EXPECT_FALSE(e.response.decoded);
    } else if (e.response.status == 200) {
      ++identical;
      EXPECT_EQ(e.response.body, h->response.body) << e.source;
    }
  }
  EXPECT_EQ(chunked, 15u);
  EXPECT_GE(identical, 20u);  // the PNGs and the font at least
}

TEST(WebRealRecording, AnOriginOnItsOwnPortIsFoundByNameAndPort) {
  const Recording mm = load_recording(kData + "/mahimahi-site");
  const Exchange* plain = find(mm, Scheme::kHttp, "api.replay.test", 8080, "/api/plain.js");
  ASSERT_NE(plain, nullptr);
  EXPECT_EQ(header(plain->request.headers, "Host"), "api.replay.test:8080");
  const Matcher m(mm);
  const auto ask = [&](Scheme scheme, uint16_t port, const char* host, const char* target) {
    return m.match(Asked{scheme, port, host, "GET", target});
  };
  EXPECT_EQ(ask(Scheme::kHttp, 8080, "api.replay.test", "/api/plain.js"), plain);
  EXPECT_EQ(ask(Scheme::kHttp, 80, "api.replay.test", "/api/plain.js"), nullptr);
  for (const Exchange& e : mm.exchanges)
    EXPECT_EQ(m.match(Asked{e.scheme, e.port, e.host, e.request.method, e.request.target}), &e) << e.source;
  const Exchange* id3 = ask(Scheme::kHttps, 443, "api.replay.test", "/api/data?id=3");
  const Exchange* id4 = ask(Scheme::kHttps, 443, "api.replay.test", "/api/data?id=4");
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
    EXPECT_EQ(header(e.response.headers, "content-encoding"), "(none)") << e.source;  // in coding, for the server
    EXPECT_TRUE(e.response.decoded || e.response.body.empty()) << e.source;
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

}  // namespace
}  // namespace tracemod::web
