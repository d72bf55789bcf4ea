// What the replay server makes of a recording others wrote, on loopback sockets and as pure functions: content
// codings (a HAR's decoded body encoded again to its recorded coding for a client that accepts it, a recorded
// coded body decoded for one that does not), dates moved to the replay's time, a 304 saved with its body served
// as the 200 it stands for, a revalidation answered 304, a miss marked for clients to count, each name served
// with the protocol it was recorded with, the other scheme's listeners, and the deterministic script with the
// Content-Security-Policy rewritten to let it run.
#include <gtest/gtest.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <sstream>
#include <string>
#include <thread>

#include "certs/certs.hh"
#include "fake.hh"
#include "web/http_date.hh"
#include "web/matcher.hh"
#include "web/recording.hh"
#include "webserve/bodies.hh"
#include "webserve/coding.hh"
#include "webserve/dates.hh"
#include "webserve/inject.hh"
#include "webserve/server.hh"

namespace tracemod::webserve {
namespace {

using web::Header;
using web::Scheme;
using certs::CertificateAuthority;
using certs::pem;

using fake::output_of;

#define NEEDS(tool) TM_NEEDS_TOOL(tool)

uint16_t port() {
  return static_cast<uint16_t>(21000 + getpid() % 19000);
}

TEST(WebserveCoding, EncodesAndDecodesWhatServersSend) {
  const std::string text = std::string(10000, 'a') + "tail";
  for (const char* coding : {"gzip", "deflate", "br"}) {
    const auto coded = encode(coding, text);
    ASSERT_TRUE(coded) << coding;
    EXPECT_LT(coded->size(), 200u) << coding;
    EXPECT_EQ(decode(coding, *coded), text) << coding;
    EXPECT_EQ(decode(coding, coded->substr(0, coded->size() / 2)), std::nullopt) << coding;  // cut short
  }
  EXPECT_EQ(decode("x-gzip", *encode("gzip", "x")), "x");
  EXPECT_EQ(encode("zstd", text), std::nullopt);
  EXPECT_FALSE(codable("zstd"));
  EXPECT_EQ(decode("gzip", *encode("gzip", text), 100), std::nullopt);  // over the limit
}

TEST(WebserveCoding, AcceptEncodingWithItsQValues) {
  const std::string browser = "gzip, deflate, br, zstd";
  EXPECT_TRUE(accepts(&browser, "br"));
  const std::string curl_identity = "identity";
  EXPECT_FALSE(accepts(&curl_identity, "gzip"));
  EXPECT_TRUE(accepts(&curl_identity, ""));
  const std::string refused = "gzip;q=0, *;q=0.5";
  EXPECT_FALSE(accepts(&refused, "gzip"));
  EXPECT_TRUE(accepts(&refused, "br"));
  const std::string upper = "GZIP; Q=1";
  EXPECT_TRUE(accepts(&upper, "gzip"));
  EXPECT_FALSE(accepts(nullptr, "gzip"));  // no field: what servers do, not all RFC 9110 §12.5.3 allows
  EXPECT_TRUE(accepts(nullptr, ""));
}

TEST(WebserveDates, MovedToTheReplaysTimeKeepingTheirDistance) {
  const int64_t recorded = *web::parse_http_date("Thu, 17 Aug 2017 12:00:00 GMT");
  const int64_t now = recorded + 365 * 86400;
  std::vector<Header> h = {{"Date", "Thu, 17 Aug 2017 12:00:00 GMT"},
                           {"Expires", "Thu, 17 Aug 2017 17:00:00 GMT"},
                           {"Last-Modified", "Wed, 16 Aug 2017 12:00:00 GMT"},
                           {"expires", "0"},
                           {"Set-Cookie", "id=1; Path=/; expires=Fri, 18-Aug-2017 12:00:00 GMT; Secure"},
                           {"Set-Cookie", "plain=1"}};
  refresh_dates(h, recorded * 1000, now);
  EXPECT_EQ(h[0].value, "Fri, 17 Aug 2018 12:00:00 GMT");
  EXPECT_EQ(h[1].value, "Fri, 17 Aug 2018 17:00:00 GMT");
  EXPECT_EQ(h[2].value, "Thu, 16 Aug 2018 12:00:00 GMT");
  EXPECT_EQ(h[3].value, "0");
  EXPECT_EQ(h[4].value, "id=1; Path=/; expires=Sat, 18 Aug 2018 12:00:00 GMT; Secure");
  EXPECT_EQ(h[5].value, "plain=1");
  std::vector<Header> undated = {{"Expires", "Thu, 17 Aug 2017 17:00:00 GMT"}};
  refresh_dates(undated, -1, now);  // no recorded time: Date is now, the rest as recorded
  EXPECT_EQ(undated,
            (std::vector<Header>{{"Expires", "Thu, 17 Aug 2017 17:00:00 GMT"}, {"Date", web::format_http_date(now)}}));
}

TEST(WebserveInject, TheScriptGoesFirstInTheHeadAndNeverBeforeTheDoctype) {
  const Injection i = deterministic_script(1500000000000, 7);
  EXPECT_NE(i.script.find("1500000000000"), std::string::npos);
  EXPECT_EQ(i.hash.rfind("'sha256-", 0), 0u);
  const std::string tag = "<script>" + i.script + "</script>";
  EXPECT_EQ(inject("<!DOCTYPE html><html><head lang=en><title>t</title></head></html>", i, ""),
            "<!DOCTYPE html><html><head lang=en>" + tag + "<title>t</title></head></html>");
  EXPECT_EQ(inject("<!doctype html><!-- <head> --><html><body>x</body></html>", i, ""),
            "<!doctype html><!-- <head> --><html>" + tag + "<body>x</body></html>");
  EXPECT_EQ(inject("<!DOCTYPE html>\n<title>t</title><p>x", i, ""), "<!DOCTYPE html>\n" + tag + "<title>t</title><p>x");
  EXPECT_EQ(inject("<HEAD><script>a()</script></HEAD>", i, "n0nce"),
            "<HEAD><script nonce=\"n0nce\">" + i.script + "</script><script>a()</script></HEAD>");
  EXPECT_EQ(inject("just text", i, ""), std::nullopt);
  EXPECT_EQ(inject(std::string("\xFF\xFE<\0h\0", 6), i, ""), std::nullopt);  // UTF-16
}

TEST(WebserveInject, ThePolicyLetsTheScriptRunAndNothingElse) {
  const Injection i = deterministic_script(0, 0);
  std::string nonce;
  EXPECT_EQ(allow_script("default-src 'self'; script-src 'self' https://cdn.example", i, &nonce),
            "default-src 'self'; script-src 'self' https://cdn.example " + i.hash);
  EXPECT_EQ(allow_script("script-src 'self' 'unsafe-inline'", i, &nonce), "script-src 'self' 'unsafe-inline'");
  EXPECT_EQ(allow_script("script-src 'unsafe-inline' 'sha256-abc='", i, &nonce),
            "script-src 'unsafe-inline' 'sha256-abc=' " + i.hash);  // the hash disables unsafe-inline: add ours
  EXPECT_EQ(allow_script("default-src 'none'; img-src *", i, &nonce), "default-src " + i.hash + "; img-src *");
  EXPECT_EQ(allow_script("img-src *", i, &nonce), "img-src *");  // nothing restricts scripts
  EXPECT_EQ(nonce, "");
  EXPECT_EQ(allow_script("script-src 'nonce-r4nd0m' 'strict-dynamic'; script-src-elem 'self'", i, &nonce),
            "script-src 'nonce-r4nd0m' 'strict-dynamic'; script-src-elem 'self' " + i.hash);
  EXPECT_EQ(nonce, "");  // script-src-elem governs <script>: its hash, not script-src's nonce
  EXPECT_EQ(allow_script("script-src 'nonce-r4nd0m'", i, &nonce), "script-src 'nonce-r4nd0m'");
  EXPECT_EQ(nonce, "r4nd0m");
  std::string bad;
  allow_script("script-src 'nonce-a\"b'", i, &bad);
  EXPECT_EQ(bad, "");  // no nonce that could break out of its attribute
  web::Response page;
  page.status = 200;
  page.headers = {{"Content-Type", "text/html"}, {"Content-Security-Policy", "script-src 'self'"}};
  page.body = "<html><head><meta http-equiv=\"Content-Security-Policy\" content=\"script-src 'none'\"></head></html>";
  ASSERT_TRUE(is_html_document(page));
  ASSERT_TRUE(inject_into(page, i));
  EXPECT_EQ(page.headers[1].value, "script-src 'self' " + i.hash);
  EXPECT_NE(page.body.find("content=\"script-src " + i.hash + "\""), std::string::npos) << page.body;
}

// A replay server on its own thread.
class Running {
 public:
  Running(const web::Recording& r, CertificateAuthority& ca, ServerOptions options = {})
      : matcher_(r), bodies_(r, nullptr, 2), server_(io_, matcher_, bodies_, ca, log_, options) {
    server_.listen();
    thread_ = std::thread([this] { io_.run(); });
  }
  ~Running() {
    io_.stop();
    thread_.join();
  }
  const std::ostringstream& log() const { return log_; }

 private:
  boost::asio::io_context io_{1};
  std::ostringstream log_;
  web::Matcher matcher_;
  Bodies bodies_;
  ReplayServer server_;
  std::thread thread_;
};

web::Exchange exchange(const std::string& host, const std::string& target, int status, std::string body,
                       std::vector<Header> headers, std::string protocol = "h2") {
  web::Exchange e;
  e.scheme = Scheme::kHttps;
  e.host = host;
  e.address = "127.0.0.6";
  e.port = port();
  e.protocol = std::move(protocol);
  e.request.method = "GET";
  e.request.target = target;
  e.response.status = status;
  e.response.headers = std::move(headers);
  e.response.body = std::move(body);
  return e;
}

struct Replay {
  fake::TempDir dir;
  CertificateAuthority ca = CertificateAuthority::load_or_create(dir.path());
  web::Recording recording;
  std::string text = "body{color:red}\n" + std::string(5000, ' ') + "/* end */\n";

  Replay() {
    web::Exchange har = exchange("a.test", "/har.css", 200, text, {{"Content-Type", "text/css"}, {"ETag", "\"v1\""}});
    har.response.coding = "br";  // as a HAR holds it: decoded, the coding recorded apart
    har.response.decoded = true;
    web::Exchange mm = exchange("a.test", "/mm.css", 200, *encode("gzip", text), {{"Content-Type", "text/css"}});
    mm.response.coding = "gzip";  // as Mahimahi holds it: as sent
    web::Exchange revalidated = exchange("a.test", "/cached.css", 304, text, {{"Content-Type", "text/css"}});
    web::Exchange dated =
        exchange("a.test", "/dated", 200, "d",
                 {{"Date", "Thu, 17 Aug 2017 12:00:00 GMT"}, {"Expires", "Thu, 17 Aug 2017 13:00:00 GMT"}});
    dated.recorded_ms = *web::parse_http_date("Thu, 17 Aug 2017 12:00:00 GMT") * 1000;
    web::Exchange old = exchange("old.test", "/", 200, "h1 only", {}, "http/1.1");
    recording.exchanges = {har, mm, revalidated, dated, old};
  }
  std::string curl(const std::string& name, const std::string& path, const std::string& options) const {
    const std::string p = std::to_string(port());
    return "curl -sS " + options + " --cacert " + dir / "ca.pem" + " --resolve " + name + ":" + p +
           ":127.0.0.6 https://" + name + ":" + p + path;
  }
};

TEST(WebserveReplay, BodiesComeInTheRecordedCodingOrWithoutAsTheClientAccepts) {
  NEEDS("curl");
  Replay r;
  Running server(r.recording, r.ca);
  const std::string br = output_of(r.curl("a.test", "/har.css", "-H 'Accept-Encoding: br' -D - -o " + r.dir / "br"));
  EXPECT_NE(br.find("content-encoding: br"), std::string::npos) << br;
  std::ifstream in(r.dir / "br", std::ios::binary);
  const std::string wire((std::istreambuf_iterator<char>(in)), {});
  EXPECT_LT(wire.size(), r.text.size() / 10);
  EXPECT_EQ(decode("br", wire), r.text);
  EXPECT_EQ(output_of(r.curl("a.test", "/har.css", "-H 'Accept-Encoding: identity'")), r.text);
  EXPECT_EQ(output_of(r.curl("a.test", "/mm.css", "-H 'Accept-Encoding: identity'")), r.text);  // decoded for it
  EXPECT_EQ(output_of(r.curl("a.test", "/mm.css", "--compressed")), r.text);                    // gzip, decoded by curl
  const std::string gz =
      output_of(r.curl("a.test", "/mm.css", "--http1.1 -H 'Accept-Encoding: gzip' -D - -o /dev/null"));
  EXPECT_NE(gz.find("Content-Encoding: gzip"), std::string::npos) << gz;
}

TEST(WebserveReplay, A304SavedWithItsBodyIsThe200ItStandsForAndRevalidationsGet304) {
  NEEDS("curl");
  Replay r;
  Running server(r.recording, r.ca);
  EXPECT_EQ(output_of(r.curl("a.test", "/cached.css", "-o /dev/null -w '%{http_code}'")), "200");
  EXPECT_EQ(output_of(r.curl("a.test", "/cached.css", "-H 'If-Modified-Since: x' -o /dev/null -w '%{http_code}'")),
            "304");
  EXPECT_EQ(output_of(r.curl("a.test", "/har.css", "-H 'If-None-Match: W/\"v1\"' -o /dev/null -w '%{http_code}'")),
            "304");
  EXPECT_EQ(output_of(r.curl("a.test", "/har.css", "-H 'If-None-Match: \"v2\"' -o /dev/null -w '%{http_code}'")),
            "200");
}

TEST(WebserveReplay, DatesAreTheReplaysUnlessKept) {
  NEEDS("curl");
  Replay r;
  {
    Running server(r.recording, r.ca);
    const std::string h = output_of(r.curl("a.test", "/dated", "-D - -o /dev/null"));
    const int64_t now = time(nullptr);
    const size_t at = h.find("date: ");
    ASSERT_NE(at, std::string::npos) << h;
    const int64_t date = *web::parse_http_date(h.substr(at + 6, h.find('\r', at) - at - 6));
    EXPECT_LE(std::abs(date - now), 5) << h;
    EXPECT_NE(h.find("expires: " + web::format_http_date(date + 3600)), std::string::npos) << h;
  }
  Running kept(r.recording, r.ca, ServerOptions{true, false});
  const std::string h = output_of(r.curl("a.test", "/dated", "-D - -o /dev/null"));
  EXPECT_NE(h.find("date: Thu, 17 Aug 2017 12:00:00 GMT"), std::string::npos) << h;
}

TEST(WebserveReplay, AMissIsMarkedAndSaidWithTheClosestRequest) {
  NEEDS("curl");
  Replay r;
  Running server(r.recording, r.ca);
  const std::string h = output_of(r.curl("a.test", "/har.cs", "-D - -o /dev/null"));
  EXPECT_EQ(h.rfind("HTTP/2 404", 0), 0u) << h;
  EXPECT_NE(h.find("x-tm-replay: miss"), std::string::npos) << h;
  EXPECT_NE(server.log().str().find("(closest recorded: GET https://a.test:" + std::to_string(port()) + "/har.css)"),
            std::string::npos);
}

TEST(WebserveReplay, EachNameIsServedWithTheProtocolItWasRecordedWith) {
  NEEDS("curl");
  Replay r;
  Running server(r.recording, r.ca);
  EXPECT_EQ(output_of(r.curl("a.test", "/dated", "--http2 -o /dev/null -w '%{http_version}'")), "2");
  EXPECT_EQ(output_of(r.curl("old.test", "/", "--http2 -o /dev/null -w '%{http_version}'")), "1.1");
}

TEST(WebserveReplay, AnAddressListensForTheSchemeItLacksUnlessStrict) {
  web::Recording r;
  web::Exchange plain = exchange("h.test", "/", 200, "x", {});
  plain.scheme = Scheme::kHttp;
  plain.port = 80;
  web::Exchange both = plain;
  both.address = "127.0.0.7";
  web::Exchange secure = both;
  secure.scheme = Scheme::kHttps;
  secure.port = 443;
  web::Exchange odd = exchange("o.test", "/", 200, "x", {});  // a port of its own: no counterpart
  r.exchanges = {plain, both, secure, odd};
  const std::vector<web::Origin> all = listeners(r, false);
  ASSERT_EQ(all.size(), 5u);
  EXPECT_EQ(all.back().address, "127.0.0.6");
  EXPECT_EQ(all.back().port, 443);
  EXPECT_EQ(all.back().scheme, Scheme::kHttps);
  EXPECT_EQ(listeners(r, true).size(), 4u);
}

}  // namespace
}  // namespace tracemod::webserve
