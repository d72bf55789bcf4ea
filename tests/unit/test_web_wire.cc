// What readers do to a recorded response before anything serves it (web/wire.hh): header fields that HTTP
// forbids, as real HAR writers wrote them, are split, mended or dropped and counted, and no CR or LF is left in a
// value; the framing goes, the coding is kept apart. Dates as servers and HAR files write them
// (web/http_date.hh), addresses a replay can serve at, and the snapshot a recording is handed on in.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "util/error.hh"
#include "util/file_descriptor.hh"
#include "web/http_date.hh"
#include "web/recording.hh"
#include "web/snapshot.hh"
#include "web/wire.hh"

namespace tracemod::web {
namespace {

std::vector<Header> fit(std::vector<Header> headers, ReadNotes& notes, std::string* coding = nullptr) {
  Response r;
  r.headers = std::move(headers);
  fit_for_wire(r, notes);
  if (coding) *coding = r.coding;
  return r.headers;
}

TEST(WebWire, JoinedValuesAreSplitIntoOneFieldEach) {
  ReadNotes notes;
  // chrome-har joins repeated fields with "\n".
  const auto out = fit({{"set-cookie", "a=1; Path=/\nb=2; HttpOnly"}, {"vary", "Accept\r\nOrigin"}}, notes);
  EXPECT_EQ(
      out,
      (std::vector<Header>{
          {"set-cookie", "a=1; Path=/"}, {"set-cookie", "b=2; HttpOnly"}, {"vary", "Accept"}, {"vary", "Origin"}}));
  EXPECT_EQ(notes.split, 2u);
}

TEST(WebWire, AFieldCutAtTheWrongColonIsMendedAndOthersDropped) {
  ReadNotes notes;
  // As WebPageTest wrote en.wikipedia.org's two cookies in 2015 (tests/data/web/real/), and a whole line in a name.
  const auto out = fit({{"set-cookie", "GeoIP=US:VA; Path=/; Domain=.wikipedia.org"},
                        {"WMF-Last-Access=29-Aug-2015;Path=/;HttpOnly;Expires=Wed, 30 Sep 2015 12", "00:00 GMT"},
                        {"X-Whole: line at 10", "00"},
                        {"Set-Cookie", "a=1"},
                        {"GeoIP=US:VA:Chantilly; Expires=Wed, 30 Sep 2015 12", "00:00 GMT"},
                        {"Bad Name", "x"},
                        {"", "x"},
                        {"Content-Type ", "text/html"}},
                       notes);
  EXPECT_EQ(out,
            (std::vector<Header>{
                {"set-cookie", "GeoIP=US:VA; Path=/; Domain=.wikipedia.org"},
                {"set-cookie", "WMF-Last-Access=29-Aug-2015;Path=/;HttpOnly;Expires=Wed, 30 Sep 2015 12:00:00 GMT"},
                {"X-Whole", "line at 10:00"},
                {"Set-Cookie", "a=1"},
                {"Set-Cookie", "GeoIP=US:VA:Chantilly; Expires=Wed, 30 Sep 2015 12:00:00 GMT"},
                {"Content-Type", "text/html"}}));
  EXPECT_EQ(notes.repaired, 3u);
  EXPECT_EQ(notes.dropped, 2u);
}

// Response splitting: a value holding "\r\n" and a header of its own never reaches the wire as one.
TEST(WebWire, NoControlByteIsLeftInAValue) {
  ReadNotes notes;
  const auto out =
      fit({{"X-Note", "a\r\nSet-Cookie: evil=1"}, {"X-Nul", std::string("a\0b", 3)}, {"X-Tab", "a\tb"}}, notes);
  for (const Header& h : out)
    for (char c : h.value) EXPECT_TRUE(c == '\t' || static_cast<unsigned char>(c) >= 0x20) << h.name;
  EXPECT_EQ(out, (std::vector<Header>{{"X-Note", "a"}, {"X-Note", "Set-Cookie: evil=1"}, {"X-Tab", "a\tb"}}));
  EXPECT_EQ(notes.dropped, 1u);
}

TEST(WebWire, FramingGoesAndTheCodingIsKeptApart) {
  ReadNotes notes;
  std::string coding;
  const auto out = fit({{":status", "200"},
                        {"Content-Length", "3"},
                        {"Transfer-Encoding", "chunked"},
                        {"Connection", "keep-alive"},
                        {"Keep-Alive", "timeout=5"},
                        {"Content-Encoding", " GZIP "},
                        {"ETag", "\"x\""}},
                       notes, &coding);
  EXPECT_EQ(out, (std::vector<Header>{{"ETag", "\"x\""}}));
  EXPECT_EQ(coding, "gzip");
  EXPECT_EQ(notes.split + notes.repaired + notes.dropped, 0u);  // framing is no change worth a word
}

TEST(WebWire, AddressesAReplayCanServeAt) {
  EXPECT_EQ(servable_address("93.184.216.34"), "93.184.216.34");
  EXPECT_EQ(servable_address("2001:DB8:0:0::1"), "2001:db8::1");
  for (const char* bad : {"127.0.0.1", "0.0.0.0", "224.0.0.1", "255.255.255.255", "169.254.1.1", "::1", "::", "ff02::1",
                          "fe80::1", "::ffff:1.2.3.4", "not-an-ip", ""})
    EXPECT_EQ(servable_address(bad), "") << bad;
  EXPECT_TRUE(is_ip_address("127.0.0.1"));
  EXPECT_FALSE(is_ip_address("a.example"));
  EXPECT_TRUE(requestable_host("www.example.org"));
  EXPECT_TRUE(requestable_host("2001:db8::1"));
  for (const std::string& bad :
       std::vector<std::string>{"", "a b", "a..b", ".a", std::string(64, 'x') + ".example", std::string(254, 'x')})
    EXPECT_FALSE(requestable_host(bad)) << bad;
}

TEST(WebDate, ReadsEveryFormServersSend) {
  const int64_t t = 784111777;  // Sun, 06 Nov 1994 08:49:37 GMT
  EXPECT_EQ(parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT"), t);
  EXPECT_EQ(parse_http_date("Sunday, 06-Nov-94 08:49:37 GMT"), t);
  EXPECT_EQ(parse_http_date("Sun Nov  6 08:49:37 1994"), t);
  EXPECT_EQ(parse_http_date("Sun, 06-Nov-1994 08:49:37 GMT"), t);  // a cookie's dashes
  EXPECT_EQ(parse_http_date("0"), std::nullopt);
  EXPECT_EQ(parse_http_date("-1"), std::nullopt);
  EXPECT_EQ(parse_http_date("Sun, 06 Nov 1994"), std::nullopt);
  EXPECT_EQ(format_http_date(t), "Sun, 06 Nov 1994 08:49:37 GMT");
  EXPECT_EQ(parse_iso8601_ms("2026-11-26T10:00:00.123Z"), 1795687200123);
  EXPECT_EQ(parse_iso8601_ms("2026-11-26T11:00:00.1+01:00"), 1795687200100);
  EXPECT_EQ(parse_iso8601_ms("yesterday"), std::nullopt);
}

TEST(WebSnapshot, ARecordingComesBackWhole) {
  Recording r;
  r.path = "site.har";
  Exchange e;
  e.scheme = Scheme::kHttps;
  e.host = "a.example";
  e.address = "2001:db8::1";
  e.port = 8443;
  e.protocol = "h2";
  e.recorded_ms = 1795687200123;
  e.request = {"GET", "/x?y", "HTTP/2", {{"Host", "a.example"}}, "body"};
  e.response.status = 304;
  e.response.reason = "Not Modified";
  e.response.headers = {{"ETag", "\"\xff\""}};  // not UTF-8: bytes, not strings
  e.response.coding = "br";
  e.response.body = std::string("\0\x01\x02", 3);
  e.response.decoded = true;
  e.source = "site.har: entry 1";
  r.exchanges = {e, e};
  r.exchanges[1].request.target = "/other";
  const FileDescriptor fd(memfd_create("snapshot test", MFD_CLOEXEC));
  Recording moved = r;
  write_snapshot(moved, fd.get());
  const Recording back = read_snapshot(fd.get());
  EXPECT_EQ(back.path, r.path);
  ASSERT_EQ(back.exchanges.size(), 2u);
  const Exchange& b = back.exchanges[0];
  EXPECT_EQ(b.scheme, e.scheme);
  EXPECT_EQ(b.host + b.address + b.protocol + b.source, e.host + e.address + e.protocol + e.source);
  EXPECT_EQ(b.port, e.port);
  EXPECT_EQ(b.recorded_ms, e.recorded_ms);
  EXPECT_EQ(b.request.method + b.request.target + b.request.version + b.request.body, "GET/x?yHTTP/2body");
  EXPECT_EQ(b.request.headers, e.request.headers);
  EXPECT_EQ(b.response.status, 304);
  EXPECT_EQ(b.response.reason, e.response.reason);
  EXPECT_EQ(b.response.headers, e.response.headers);
  EXPECT_EQ(b.response.coding, "br");
  EXPECT_EQ(b.response.body, e.response.body);
  EXPECT_TRUE(b.response.decoded);
  EXPECT_EQ(back.exchanges[1].request.target, "/other");
  ASSERT_EQ(ftruncate(fd.get(), 20), 0);  // cut short: refused, not half-served
  EXPECT_THROW(read_snapshot(fd.get()), Error);
}

}  // namespace
}  // namespace tracemod::web
