// tm-webreplay's far side on loopback sockets: the CA (created 0600, reloaded, its leaves verified with their
// names), the replay server answered by curl, nghttp and a raw socket (HTTP/2 and HTTP/1.1 by ALPN over TLS,
// plain HTTP/1.1 with pipelining, bodies byte for byte with their content coding, HEAD, 404 and its log line,
// SNI choosing the certificate, IPv6), and the DNS responder (A, AAAA, NXDOMAIN, no data, malformed queries).
#include <gtest/gtest.h>
#include <ldns/ldns.h>
#include <openssl/x509v3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ip/udp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <thread>

#include "certs/certs.hh"
#include "fake.hh"
#include "util/error.hh"
#include "web/matcher.hh"
#include "web/recording.hh"
#include "web/wire.hh"
#include "webserve/bodies.hh"
#include "webserve/dns.hh"
#include "webserve/serve.hh"
#include "webserve/server.hh"

namespace tracemod::webserve {
namespace {

namespace asio = boost::asio;
using web::Scheme;
using certs::CertificateAuthority;
using certs::pem;

using fake::TempDir;

// Ports from the process id, so two runs of the suite side by side do not collide.
uint16_t port(int offset) {
  return static_cast<uint16_t>(20000 + getpid() % 20000 + offset);
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

using fake::output_of;

#define NEEDS(tool) TM_NEEDS_TOOL(tool)

std::string random_bytes(size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::string s(n, '\0');
  for (char& c : s) c = static_cast<char>(gen());
  return s;
}

web::Exchange exchange(Scheme scheme, const std::string& host, const std::string& address, uint16_t p,
                       const std::string& target, std::string body, std::vector<web::Header> headers = {}) {
  web::Exchange e;
  e.scheme = scheme;
  e.host = host;
  e.address = address;
  e.port = p;
  e.request.method = "GET";
  e.request.target = target;
  e.response.status = 200;
  e.response.reason = "OK";
  e.response.headers = std::move(headers);
  e.response.body = std::move(body);
  return e;
}

// A replay server on its own thread, stopped and joined on destruction.
class Running {
 public:
  Running(const web::Recording& r, CertificateAuthority& ca, ServerOptions options = {},
          const Injection* injection = nullptr)
      : matcher_(r), bodies_(r, injection, 1), server_(io_, matcher_, bodies_, ca, log_, options) {
    server_.listen();
    thread_ = std::thread([this] { io_.run(); });
  }
  ~Running() { stop(); }
  void stop() {
    io_.stop();
    if (thread_.joinable()) thread_.join();
  }
  std::string log() {
    stop();
    return log_.str();
  }

 private:
  asio::io_context io_{1};
  std::ostringstream log_;
  web::Matcher matcher_;
  Bodies bodies_;
  ReplayServer server_;
  std::thread thread_;
};

TEST(WebserveCa, CreatesKeyPrivatelyAndReloadsTheSameCa) {
  TempDir dir;
  const std::string ca_dir = dir / "ca";
  CertificateAuthority ca = CertificateAuthority::load_or_create(ca_dir);
  struct stat st {};
  ASSERT_EQ(stat((ca_dir + "/ca.key").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  CertificateAuthority again = CertificateAuthority::load_or_create(ca_dir);
  EXPECT_EQ(X509_cmp(ca.certificate(), again.certificate()), 0);
  char cn[256] = "";
  X509_NAME_get_text_by_NID(X509_get_subject_name(ca.certificate()), NID_commonName, cn, sizeof cn);
  EXPECT_EQ(std::string(cn).rfind("tracemod web replay CA ", 0), 0u) << cn;
  EXPECT_EQ(X509_check_ca(ca.certificate()), 1);
}

TEST(WebserveCa, NamesTheFileThatIsCorruptOrMissing) {
  TempDir dir;
  CertificateAuthority::load_or_create(dir.path());
  std::ofstream(dir / "ca.pem") << "not a certificate\n";
  try {
    CertificateAuthority::load_or_create(dir.path());
    FAIL() << "a corrupt ca.pem was read";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(dir / "ca.pem"), std::string::npos) << e.what();
  }
  std::filesystem::remove(dir / "ca.key");
  try {
    CertificateAuthority::load_or_create(dir.path());
    FAIL() << "a CA without its key was read";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(dir / "ca.key"), std::string::npos) << e.what();
  }
}

TEST(WebserveCa, LeavesVerifyAgainstTheCaWithTheirNames) {
  TempDir dir;
  CertificateAuthority ca = CertificateAuthority::load_or_create(dir.path());
  X509* leaf = ca.leaf("www.example.com");
  EXPECT_EQ(ca.leaf("www.example.com"), leaf);  // cached
  X509* ip_leaf = ca.leaf("192.0.2.7");
  X509_STORE* store = X509_STORE_new();
  X509_STORE_add_cert(store, ca.certificate());
  for (X509* x : {leaf, ip_leaf}) {
    X509_STORE_CTX* ctx = X509_STORE_CTX_new();
    X509_STORE_CTX_init(ctx, store, x, nullptr);
    X509_STORE_CTX_set_purpose(ctx, X509_PURPOSE_SSL_SERVER);
    EXPECT_EQ(X509_verify_cert(ctx), 1) << X509_verify_cert_error_string(X509_STORE_CTX_get_error(ctx));
    X509_STORE_CTX_free(ctx);
  }
  X509_STORE_free(store);
  EXPECT_EQ(X509_check_host(leaf, "www.example.com", 0, 0, nullptr), 1);
  EXPECT_NE(X509_check_host(leaf, "example.com", 0, 0, nullptr), 1);
  EXPECT_EQ(X509_check_ip_asc(ip_leaf, "192.0.2.7", 0), 1);
  EXPECT_EQ(X509_cmp(ca.leaf("a.test"), leaf) != 0, true);
  EXPECT_EQ(ca.leaf_spki_sha256_base64().size(), 44u);  // 32 bytes in base64
  const time_t in_a_year = time(nullptr) + 364 * 86400, past_it = time(nullptr) + 367 * 86400;
  EXPECT_GT(X509_cmp_time(X509_get0_notAfter(leaf), const_cast<time_t*>(&in_a_year)), 0);
  EXPECT_LT(X509_cmp_time(X509_get0_notAfter(leaf), const_cast<time_t*>(&past_it)), 0);
}

TEST(WebserveCa, SpkiHashIsWhatChromiumIsGiven) {
  NEEDS("openssl");
  TempDir dir;
  CertificateAuthority ca = CertificateAuthority::load_or_create(dir.path());
  std::ofstream(dir / "leaf.pem") << pem(ca.leaf("a.test"));
  // The recipe Chromium's documentation gives for --ignore-certificate-errors-spki-list.
  const std::string spki = output_of("openssl x509 -in " + dir / "leaf.pem" +
                                     " -pubkey -noout | openssl pkey -pubin -outform der | openssl dgst -sha256 -binary"
                                     " | base64");
  EXPECT_EQ(spki, ca.leaf_spki_sha256_base64() + "\n");
}

// An HTTPS origin with two names, a plain HTTP one, and one on IPv6.
struct Site {
  TempDir dir;
  CertificateAuthority ca = CertificateAuthority::load_or_create(dir.path());
  web::Recording recording;
  std::string big = random_bytes(100 * 1024, 1);
  std::string gzipped = random_bytes(5000, 2);  // stands for a gzip body: served as stored, never re-coded
  uint16_t tls_port = port(0), plain_port = port(1), v6_port = port(2);

  Site() {
    recording.exchanges = {
        exchange(Scheme::kHttps, "a.test", "127.0.0.2", tls_port, "/big", big,
                 {{"Content-Type", "application/octet-stream"},
                  {"Transfer-Encoding", "chunked"},
                  {"Connection", "keep-alive"},
                  {"X-Recorded", "yes"}}),
        exchange(Scheme::kHttps, "b.test", "127.0.0.2", tls_port, "/page.js?v=1", gzipped,
                 {{"Content-Encoding", "gzip"}, {"Content-Length", "12"}}),
        exchange(Scheme::kHttp, "plain.test", "127.0.0.3", plain_port, "/", "hello\n"),
        exchange(Scheme::kHttp, "plain.test", "127.0.0.3", plain_port, "/two", "second\n"),
        exchange(Scheme::kHttps, "v6.test", "::1", v6_port, "/", "over IPv6\n"),
        exchange(Scheme::kHttps, "a.test", "127.0.0.2", tls_port, "/form", "posted\n"),
    };
    recording.exchanges.back().request.method = "POST";
    web::ReadNotes notes;
    for (web::Exchange& e : recording.exchanges) web::fit_for_wire(e.response, notes);  // as every reader does
  }
  std::string https(const std::string& name, const std::string& path, const std::string& options) {
    const std::string p = std::to_string(tls_port);
    return "curl -sS " + options + " --cacert " + dir / "ca.pem" + " --resolve " + name + ":" + p +
           ":127.0.0.2 https://" + name + ":" + p + path;
  }
};

TEST(WebserveServer, ServesHttp2AndHttp11ByAlpnByteForByte) {
  NEEDS("curl");
  Site site;
  Running server(site.recording, site.ca);
  EXPECT_EQ(output_of(site.https("a.test", "/big", "--http2 -o " + site.dir / "h2 -w '%{http_version} %{http_code}'")),
            "2 200");
  EXPECT_TRUE(slurp(site.dir / "h2") == site.big);  // not _EQ: a failure would print 100 KB
  EXPECT_EQ(
      output_of(site.https("a.test", "/big", "--http1.1 -o " + site.dir / "h1 -w '%{http_version} %{http_code}'")),
      "1.1 200");
  EXPECT_TRUE(slurp(site.dir / "h1") == site.big);
  // The stored gzip body as it is, its Content-Length corrected (curl without --compressed does not decode).
  EXPECT_TRUE(output_of(site.https("b.test", "/page.js?v=1", "--http2")) == site.gzipped);
  const std::string headers = output_of(site.https("b.test", "/page.js?v=1", "--http1.1 -D - -o /dev/null"));
  EXPECT_NE(headers.find("Content-Encoding: gzip"), std::string::npos) << headers;
  EXPECT_NE(headers.find("Content-Length: 5000"), std::string::npos) << headers;
  const std::string h2_headers = output_of(site.https("a.test", "/big", "--http2 -D - -o /dev/null"));
  EXPECT_NE(h2_headers.find("x-recorded: yes"), std::string::npos) << h2_headers;
  EXPECT_EQ(h2_headers.find("transfer-encoding"), std::string::npos) << h2_headers;
  EXPECT_EQ(h2_headers.find("connection"), std::string::npos) << h2_headers;
  // A request body is read and ignored (the matcher does not look at it), over either protocol.
  const std::string form = " -d @" + site.dir / "h1" + " -H 'Content-Type: application/octet-stream'";
  EXPECT_EQ(output_of(site.https("a.test", "/form", "--http2" + form)), "posted\n");
  EXPECT_EQ(output_of(site.https("a.test", "/form", "--http1.1" + form)), "posted\n");
  EXPECT_EQ(server.log(), "");
}

TEST(WebserveServer, NghttpGetsManyStreamsOnOneConnection) {
  NEEDS("nghttp");
  Site site;
  Running server(site.recording, site.ca);
  // nghttp does not check certificates; it sends SNI and :authority from the URI (the address here).
  const std::string base = "https://127.0.0.2:" + std::to_string(site.tls_port);
  const std::string out = output_of("nghttp -m 20 -H ':authority: a.test' " + base + "/big 2>/dev/null");
  EXPECT_EQ(out.size(), 20 * site.big.size());
  // nghttp writes the streams' bodies as their frames arrive, interleaved: compare how often each byte occurs.
  std::array<size_t, 256> got{}, want{};
  for (const unsigned char c : out) ++got[c];
  for (const unsigned char c : site.big) want[c] += 20;
  EXPECT_TRUE(got == want);
}

TEST(WebserveServer, UnmatchedIs404WithALogLineAndHeadHasNoBody) {
  NEEDS("curl");
  Site site;
  Running server(site.recording, site.ca);
  EXPECT_EQ(output_of(site.https("a.test", "/nope", "--http2 -o /dev/null -w '%{http_code}'")), "404");
  const std::string head = output_of(site.https("a.test", "/big", "--http1.1 -I"));
  EXPECT_NE(head.find("Content-Length: 102400"), std::string::npos) << head;
  const std::string head2 = output_of(site.https("a.test", "/big", "--http2 -I"));
  EXPECT_NE(head2.find("content-length: 102400"), std::string::npos) << head2;
  EXPECT_EQ(server.log(), "unmatched: GET https://a.test:" + std::to_string(site.tls_port) +
                              "/nope (closest recorded: GET https://a.test:" + std::to_string(site.tls_port) +
                              "/big)\n");
}

TEST(WebserveServer, SniChoosesTheCertificateForEachName) {
  NEEDS("curl");
  NEEDS("openssl");
  Site site;
  Running server(site.recording, site.ca);
  const std::string at = "127.0.0.2:" + std::to_string(site.tls_port);
  for (const std::string name : {"a.test", "b.test"}) {
    const std::string subject = output_of("openssl s_client -connect " + at + " -servername " + name +
                                          " </dev/null 2>/dev/null | openssl x509 -noout -subject");
    EXPECT_NE(subject.find("CN = " + name), std::string::npos) << subject;
  }
  // No SNI (a client that connects to the address): the certificate for the address.
  EXPECT_EQ(
      output_of("curl -sS --cacert " + site.dir / "ca.pem" + " https://" + at + "/nope -o /dev/null -w '%{http_code}'"),
      "404");
}

TEST(WebserveServer, PlainHttp11PipelinesAndIpv6Serves) {
  NEEDS("curl");
  Site site;
  Running server(site.recording, site.ca);
  asio::io_context io;
  asio::ip::tcp::socket s(io);
  s.connect({asio::ip::make_address("127.0.0.3"), site.plain_port});
  const std::string two =
      "GET / HTTP/1.1\r\nHost: plain.test\r\n\r\nGET /two HTTP/1.1\r\nHost: plain.test\r\n"
      "Connection: close\r\n\r\n";
  asio::write(s, asio::buffer(two));
  std::string reply;
  boost::system::error_code ec;
  asio::read(s, asio::dynamic_buffer(reply), ec);
  EXPECT_EQ(ec, asio::error::eof);
  EXPECT_EQ(reply.find("HTTP/1.1 200 OK\r\nDate: "), 0u) << reply;  // the replay's time
  EXPECT_NE(reply.find("Content-Length: 6\r\n\r\nhello\nHTTP/1.1 200 OK\r\n"), std::string::npos) << reply;
  EXPECT_NE(reply.find("Content-Length: 7\r\n"), std::string::npos) << reply;
  EXPECT_EQ(reply.substr(reply.size() - 11), "\r\n\r\nsecond\n") << reply;
  const std::string p = std::to_string(site.v6_port);
  EXPECT_EQ(output_of("curl -sS --cacert " + site.dir / "ca.pem" + " --resolve v6.test:" + p +
                      ":[::1] https://v6.test:" + p + "/"),
            "over IPv6\n");
}

// A DNS query message for NAME and TYPE, built with ldns.
std::string query(const std::string& name, ldns_rr_type type) {
  ldns_pkt* q = ldns_pkt_query_new(ldns_dname_new_frm_str(name.c_str()), type, LDNS_RR_CLASS_IN, LDNS_RD);
  ldns_pkt_set_id(q, 4242);
  uint8_t* data = nullptr;
  size_t size = 0;
  ldns_pkt2wire(&data, q, &size);
  std::string out(reinterpret_cast<char*>(data), size);
  free(data);
  ldns_pkt_free(q);
  return out;
}

// The reply's RCODE and its answers' addresses, as text.
std::pair<ldns_pkt_rcode, std::vector<std::string>> parse(const std::string& reply) {
  ldns_pkt* p = nullptr;
  if (ldns_wire2pkt(&p, reinterpret_cast<const uint8_t*>(reply.data()), reply.size()) != LDNS_STATUS_OK)
    return {LDNS_RCODE_SERVFAIL, {"unparsable"}};
  std::vector<std::string> addresses;
  for (size_t i = 0; i < ldns_pkt_ancount(p); ++i) {
    char* text = ldns_rdf2str(ldns_rr_rdf(ldns_rr_list_rr(ldns_pkt_answer(p), i), 0));
    addresses.push_back(text);
    free(text);
  }
  EXPECT_EQ(ldns_pkt_id(p), 4242);
  const ldns_pkt_rcode rcode = ldns_pkt_get_rcode(p);
  ldns_pkt_free(p);
  return {rcode, addresses};
}

TEST(WebserveDns, AnswersRecordedNamesOnly) {
  asio::io_context io;
  const std::vector<web::Origin> origins = {{"192.0.2.1", 443, Scheme::kHttps, {"a.test", "www.a.test"}},
                                            {"192.0.2.2", 443, Scheme::kHttps, {"a.test"}},
                                            {"2001:db8::1", 443, Scheme::kHttps, {"A.test"}}};
  DnsResponder dns(io, origins);
  using Answer = std::pair<ldns_pkt_rcode, std::vector<std::string>>;
  EXPECT_EQ(parse(dns.reply(query("a.test.", LDNS_RR_TYPE_A))),
            (Answer{LDNS_RCODE_NOERROR, {"192.0.2.1", "192.0.2.2"}}));
  EXPECT_EQ(parse(dns.reply(query("WWW.A.TEST", LDNS_RR_TYPE_A))), (Answer{LDNS_RCODE_NOERROR, {"192.0.2.1"}}));
  EXPECT_EQ(parse(dns.reply(query("a.test", LDNS_RR_TYPE_AAAA))), (Answer{LDNS_RCODE_NOERROR, {"2001:db8::1"}}));
  EXPECT_EQ(parse(dns.reply(query("www.a.test", LDNS_RR_TYPE_AAAA))), (Answer{LDNS_RCODE_NOERROR, {}}));
  EXPECT_EQ(parse(dns.reply(query("a.test", LDNS_RR_TYPE_MX))), (Answer{LDNS_RCODE_NOERROR, {}}));
  EXPECT_EQ(parse(dns.reply(query("b.test", LDNS_RR_TYPE_A))), (Answer{LDNS_RCODE_NXDOMAIN, {}}));
}

TEST(WebserveDns, TruncatesOverUdpWhatTcpCarries) {
  asio::io_context io;
  std::vector<web::Origin> origins;
  for (int i = 1; i <= 60; ++i) origins.push_back({"192.0.2." + std::to_string(i), 443, Scheme::kHttps, {"many.test"}});
  DnsResponder dns(io, origins);
  const std::string q = query("many.test", LDNS_RR_TYPE_A);
  EXPECT_EQ(parse(dns.reply(q)).second.size(), 60u);
  const std::string cut = dns.reply(q, true);
  EXPECT_LE(cut.size(), 512u);
  EXPECT_TRUE(cut[2] & 0x02);  // TC
  EXPECT_TRUE(parse(cut).second.empty());
}

TEST(WebserveDns, RefusesMalformedQueriesAndAnswersOverUdp) {
  asio::io_context io;
  DnsResponder dns(io, {{"127.0.0.9", 443, Scheme::kHttps, {"a.test"}}});
  std::string bad = query("a.test", LDNS_RR_TYPE_A);
  bad.resize(bad.size() - 3);  // the question cut short
  const std::string reply = dns.reply(bad);
  ASSERT_EQ(reply.size(), 12u);
  EXPECT_EQ(reply[3] & 0xf, LDNS_RCODE_FORMERR);
  EXPECT_EQ(dns.reply("abc"), "");
  for (unsigned seed = 0; seed < 2000; ++seed) dns.reply(random_bytes(seed % 80, seed));  // must not crash

  dns.listen("127.0.0.1", port(3));
  std::thread t([&io] { io.run_for(std::chrono::seconds(5)); });
  asio::io_context client_io;
  asio::ip::udp::socket client(client_io, asio::ip::udp::v4());
  const std::string q = query("a.test", LDNS_RR_TYPE_A);
  client.send_to(asio::buffer(q), {asio::ip::make_address("127.0.0.1"), port(3)});
  std::string answer(512, '\0');
  answer.resize(client.receive(asio::buffer(answer)));
  io.stop();
  t.join();
  EXPECT_EQ(parse(answer), (std::pair<ldns_pkt_rcode, std::vector<std::string>>{LDNS_RCODE_NOERROR, {"127.0.0.9"}}));
}

// One query over TCP to ADDRESS:PORT: its two-byte length, then the message; the reply read the same way.
std::string tcp_query(const std::string& address, uint16_t p, const std::string& message) {
  asio::io_context io;
  asio::ip::tcp::socket s(io);
  s.connect({asio::ip::make_address(address), p});
  const std::string framed =
      std::string{static_cast<char>(message.size() >> 8), static_cast<char>(message.size())} + message;
  asio::write(s, asio::buffer(framed));
  unsigned char length[2];
  asio::read(s, asio::buffer(length));
  std::string reply(length[0] << 8 | length[1], '\0');
  asio::read(s, asio::buffer(reply));
  return reply;
}

TEST(WebserveServe, SignalsReadyServesAndStopsOnSigterm) {
  NEEDS("curl");
  TempDir dir;
  web::Recording r;
  r.exchanges = {exchange(Scheme::kHttps, "s.test", "127.0.0.4", port(4), "/", "served\n")};
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  std::ostringstream log;
  ServeConfig config;
  config.recording = &r;
  config.ca_dir = dir / "ca";
  config.dns_addresses = {"127.0.0.4"};
  config.dns_port = port(5);
  config.log = &log;
  config.ready_fd = ready[1];
  int status = -1;
  std::thread t([&] { status = serve(config); });
  char byte;
  ASSERT_EQ(read(ready[0], &byte, 1), 1);
  const std::string p = std::to_string(port(4));
  EXPECT_EQ(output_of("curl -sS --cacert " + dir / "ca/ca.pem" + " --resolve s.test:" + p +
                      ":127.0.0.4 https://s.test:" + p + "/"),
            "served\n");
  EXPECT_EQ(parse(tcp_query("127.0.0.4", port(5), query("s.test", LDNS_RR_TYPE_A))),
            (std::pair<ldns_pkt_rcode, std::vector<std::string>>{LDNS_RCODE_NOERROR, {"127.0.0.4"}}));
  kill(getpid(), SIGTERM);
  t.join();
  close(ready[0]);
  close(ready[1]);
  EXPECT_EQ(status, 0);
  EXPECT_EQ(log.str(), "serving 1 exchange on 1 address and port (1 name)\n");
}

}  // namespace
}  // namespace tracemod::webserve
