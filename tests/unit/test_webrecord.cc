// tm-webrecord's recorder, the parts without a shell: a connection told by its first bytes whatever its port
// (TLS record headers, HTTP/1.x request lines, h2c's preface, anything else, bytes still to come), the wait for
// them on loopback TCP sockets (peeked and left for the relay, the origin speaking first, a line never
// finished), the byte relay (both ways, half-closes passed on), HTTP/1.1's relay with a body over --max-body,
// and the exit line's counts and wording.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "util/clock.hh"
#include "util/file_descriptor.hh"
#include "webrecord/conn.hh"
#include "webrecord/http1_relay.hh"
#include "webrecord/opaque.hh"
#include "webrecord/opening.hh"
#include "webrecord/tally.hh"

namespace tracemod::webrecord {
namespace {

using namespace std::string_literals;

TEST(Opening, TlsIsItsRecordHeaderWhateverFollows) {
  EXPECT_EQ(classify("\x16\x03\x01\x02\x00\x01"s, false), Opening::kTls);
  EXPECT_EQ(classify("\x16\x03\x04"s, false), Opening::kTls);
  EXPECT_EQ(classify("\x16\x03"s, false), Opening::kUndecided);  // the version's minor still to come
  EXPECT_EQ(classify("\x16"s, true), Opening::kOther);
  EXPECT_EQ(classify("\x16\x03\x05"s, false), Opening::kOther);
  EXPECT_EQ(classify("\x16\x02\x01"s, false), Opening::kOther);
  EXPECT_EQ(classify("\x80\x2e\x01"s, false), Opening::kOther);  // SSL 2's hello
}

TEST(Opening, HttpIsARequestLine) {
  EXPECT_EQ(classify("GET / HTTP/1.1\r\nHost: a\r\n\r\n", false), Opening::kHttp);
  EXPECT_EQ(classify("POST /x?y=1 HTTP/1.0\r\n", false), Opening::kHttp);
  EXPECT_EQ(classify("GET http://a.test/ HTTP/1.1\n", false), Opening::kHttp);  // absolute form, bare LF
  EXPECT_EQ(classify("M-SEARCH * HTTP/1.1\r\n", false), Opening::kHttp);
  EXPECT_EQ(classify("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", false), Opening::kH2c);
  for (const char* prefix :
       {"G", "GET", "GET ", "GET /a", "GET /a ", "GET /a HTTP/", "GET /a HTTP/1.1", "GET / HTTP/1.1\r"})
    EXPECT_EQ(classify(prefix, false), Opening::kUndecided) << prefix;
  EXPECT_EQ(classify("GET /a HTTP/1.1", true), Opening::kOther);  // the client ended (or waited) before the line did
}

TEST(Opening, AnythingElseIsOther) {
  for (const std::string& bytes :
       {"SSH-2.0-OpenSSH_9.2\r\n"s, "get key\r\n"s, "*1\r\n$4\r\nPING\r\n"s, "\0\0\0\x08\x04\xd2\x16\x2f"s,
        "GET / FTP/1.0\r\n"s, "GET  / HTTP/1.1\r\n"s, "GET / HTTP/1.1 \r\n"s, "GET / HTTP/3.0\r\n"s,
        "GET / HTTP/1.x\r\n"s, "hello\n"s, " GET / HTTP/1.1\r\n"s, std::string(40, 'A') + " / HTTP/1.1\r\n"})
    EXPECT_EQ(classify(bytes, false), Opening::kOther) << bytes;
  EXPECT_EQ(classify("", false), Opening::kUndecided);
  EXPECT_EQ(classify("", true), Opening::kClosed);
}

// A connected TCP pair on loopback: [0] the client's end, [1] the recorder's.
struct TcpPair {
  FileDescriptor ends[2];
  TcpPair() {
    FileDescriptor listener(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    EXPECT_EQ(::bind(listener.get(), reinterpret_cast<sockaddr*>(&a), len), 0);
    EXPECT_EQ(::listen(listener.get(), 1), 0);
    EXPECT_EQ(::getsockname(listener.get(), reinterpret_cast<sockaddr*>(&a), &len), 0);
    ends[0] = FileDescriptor(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    EXPECT_EQ(::connect(ends[0].get(), reinterpret_cast<sockaddr*>(&a), len), 0);
    ends[1] = FileDescriptor(::accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC));
  }
  void send(int i, const std::string& s) { EXPECT_EQ(::send(ends[i].get(), s.data(), s.size(), 0), ssize_t(s.size())); }
  std::string read(int i, size_t n) {
    std::string out(n, '\0');
    size_t got = 0;
    while (got < n) {
      const ssize_t r = ::read(ends[i].get(), out.data() + got, n - got);
      if (r <= 0) break;
      got += static_cast<size_t>(r);
    }
    return out.substr(0, got);
  }
};

TEST(OpeningWait, ARequestLineInPiecesIsPeekedAndLeftForTheRelay) {
  TcpPair client, origin;
  std::thread sender([&] {
    client.send(0, "GE");
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    client.send(0, "T /x HTTP/1.1\r\n\r\n");
  });
  EXPECT_EQ(wait_for_opening(client.ends[1].get(), origin.ends[1].get()), Opening::kHttp);
  sender.join();
  EXPECT_EQ(client.read(1, 19), "GET /x HTTP/1.1\r\n\r\n");
}

TEST(OpeningWait, TheOriginSpeakingFirstDecides) {
  TcpPair client, origin;
  origin.send(0, "220 smtp ready\r\n");
  EXPECT_EQ(wait_for_opening(client.ends[1].get(), origin.ends[1].get()), Opening::kOriginFirst);
}

TEST(OpeningWait, AClientClosingWithoutAWordIsClosed) {
  TcpPair client, origin;
  client.ends[0].reset();
  EXPECT_EQ(wait_for_opening(client.ends[1].get(), origin.ends[1].get()), Opening::kClosed);
}

TEST(OpeningWait, ALineNeverFinishedIsOtherAfterTheWait) {
  TcpPair client, origin;
  client.send(0, "hello");  // a prompt's answer, say, waiting for the server
  const Nanos start = monotonic_now();
  EXPECT_EQ(wait_for_opening(client.ends[1].get(), origin.ends[1].get()), Opening::kOther);
  const Nanos waited = monotonic_now() - start;
  EXPECT_GE(waited, (kFinishWaitMs - 10) * kMillisecond);
  EXPECT_LT(waited, 5 * kFinishWaitMs * kMillisecond);
}

TEST(RelayBytes, BothWaysWithHalfClosesPassedOn) {
  TcpPair client, origin;
  const std::string up(300000, 'u'), down(200000, 'd');
  std::thread relay([&] { relay_bytes(client.ends[1].get(), origin.ends[1].get()); });
  std::thread far([&] {
    EXPECT_EQ(origin.read(0, up.size() + 1), up);  // then the client's end
    origin.send(0, down);
    ::shutdown(origin.ends[0].get(), SHUT_WR);
  });
  client.send(0, up);
  ::shutdown(client.ends[0].get(), SHUT_WR);
  EXPECT_EQ(client.read(0, down.size() + 1), down);
  far.join();
  relay.join();
}

// Everything FD can read until its peer closes.
std::string read_to_end(int fd) {
  std::string out;
  char buf[65536];
  for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) out.append(buf, static_cast<size_t>(n));
  return out;
}

// One plain connection relayed by relay_http1 with MAX_BODY: the client sends REQUESTS and the origin RESPONSES,
// both small enough for the sockets' buffers (there before the relay starts), then each half-closes.
struct Http1Relayed {
  std::vector<web::RawExchange> recorded, too_large;
  std::optional<Unrecorded> why;
  std::string client_got, origin_got;

  Http1Relayed(const std::string& requests, const std::string& responses, uint64_t max_body) {
    int client[2], origin[2];
    EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, client), 0);
    EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, origin), 0);
    FileDescriptor browser(client[1]), server(origin[1]);
    EXPECT_EQ(::write(browser.get(), requests.data(), requests.size()), static_cast<ssize_t>(requests.size()));
    EXPECT_EQ(::write(server.get(), responses.data(), responses.size()), static_cast<ssize_t>(responses.size()));
    ::shutdown(browser.get(), SHUT_WR);
    ::shutdown(server.get(), SHUT_WR);
    web::RawExchange base;
    base.address = base.host = "192.0.2.7";
    base.port = 80;
    {
      Conn to_client{FileDescriptor(client[0])}, to_origin{FileDescriptor(origin[0])};
      why = relay_http1(to_client, to_origin, base,
                        {max_body, [&](const web::RawExchange& e) { recorded.push_back(e); },
                         [&](const web::RawExchange& e) { too_large.push_back(e); }});
    }
    client_got = read_to_end(browser.get());
    origin_got = read_to_end(server.get());
  }
};

TEST(RelayHttp1, ABodyOverTheLimitIsRelayedWholeNotRecordedAndTheConnectionGoesOn) {
  const std::string requests = "GET /big HTTP/1.1\r\nHost: a.test\r\n\r\nGET /small HTTP/1.1\r\nHost: a.test\r\n\r\n";
  const std::string responses = "HTTP/1.1 200 OK\r\nContent-Length: 1001\r\n\r\n" + std::string(1001, 'b') +
                                "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n";
  const Http1Relayed r(requests, responses, 1000);
  EXPECT_EQ(r.client_got, responses);  // each byte passed on
  EXPECT_EQ(r.origin_got, requests);
  ASSERT_EQ(r.too_large.size(), 1u);
  EXPECT_EQ(r.too_large[0].request.first_line, "GET /big HTTP/1.1");
  EXPECT_EQ(r.too_large[0].response.first_line, "HTTP/1.1 200 OK");
  EXPECT_LE(r.too_large[0].response.body.size(), 1000u);
  ASSERT_EQ(r.recorded.size(), 1u);
  EXPECT_EQ(r.recorded[0].request.first_line, "GET /small HTTP/1.1");
  EXPECT_EQ(r.recorded[0].host, "a.test");
  EXPECT_EQ(r.recorded[0].response.body, "3\r\nabc\r\n0\r\n\r\n");  // as sent
  EXPECT_EQ(r.why, Unrecorded::kTooLarge);

  Tally t;
  t.recorded();
  t.unrecorded(*r.why);
  EXPECT_EQ(t.summary("rec"),
            "rec: 1 exchange recorded; 1 connection not recorded (1 with a body over --max-body (relayed, that "
            "exchange not recorded))");
  EXPECT_FALSE(t.failed());
}

TEST(RelayHttp1, ABodyAtTheLimitIsRecorded) {
  const Http1Relayed r("POST /form HTTP/1.1\r\nHost: a.test\r\nContent-Length: 10\r\n\r\n0123456789",
                       "HTTP/1.1 204 No Content\r\n\r\n", 10);
  ASSERT_EQ(r.recorded.size(), 1u);
  EXPECT_EQ(r.recorded[0].request.body, "0123456789");
  EXPECT_TRUE(r.too_large.empty());
  EXPECT_FALSE(r.why);
}

TEST(Tally, TheExitLineCountsByReason) {
  Tally t;
  EXPECT_EQ(t.summary("rec"), "rec: 0 exchanges recorded; 0 connections not recorded");
  t.recorded();
  t.unrecorded(Unrecorded::kNotHttp);
  EXPECT_EQ(t.summary("rec"), "rec: 1 exchange recorded; 1 connection not recorded (1 not HTTP, relayed as it was)");
  t.recorded();
  t.unrecorded(Unrecorded::kNotHttp);
  t.unrecorded(Unrecorded::kUnreachable);
  t.unrecorded(Unrecorded::kClientTls);
  EXPECT_EQ(t.summary("rec"),
            "rec: 2 exchanges recorded; 4 connections not recorded (2 not HTTP, relayed as they were; 1 origin "
            "unreachable; 1 TLS handshake with the client failed)");
  EXPECT_FALSE(t.failed());
}

TEST(Tally, RecordsNotWrittenFailTheRunAndTheFirstIsNamed) {
  Tally t;
  EXPECT_TRUE(t.unwritten("rec/save.00000001: No space left on device"));
  EXPECT_FALSE(t.unwritten("rec/save.00000002: No space left on device"));
  EXPECT_TRUE(t.failed());
  EXPECT_EQ(t.summary("rec"),
            "rec: 0 exchanges recorded; 2 exchanges not written (the first: rec/save.00000001: No space left on "
            "device); 0 connections not recorded");
}

}  // namespace
}  // namespace tracemod::webrecord
