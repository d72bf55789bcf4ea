// tm-webrecord's writer: what it writes, load_recording reads back as it was (HTTP/1.1 and h2, chunked bodies
// with their framing removed on reading, IPv6, a HEAD), in the order written, numbered on after what is there,
// and nothing else in the directory (no temporary file, also when a write fails).
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <string>

#include "fake.hh"
#include "util/error.hh"
#include "web/recording.hh"
#include "web/writer.hh"

namespace tracemod::web {
namespace {

namespace fs = std::filesystem;

using fake::TempDir;

RawExchange exchange(const std::string& target, const std::string& body) {
  RawExchange e;
  e.address = "10.77.0.1";
  e.port = 443;
  e.scheme = Scheme::kHttps;
  e.host = "www.replay.test";
  e.protocol = "http/1.1";
  e.request = {"GET " + target + " HTTP/1.1", {{"Host", "www.replay.test"}, {"Accept-Encoding", "gzip"}}, ""};
  e.response = {
      "HTTP/1.1 200 OK", {{"Content-Type", "text/plain"}, {"Content-Length", std::to_string(body.size())}}, body};
  return e;
}

std::vector<std::string> names(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& entry : fs::directory_iterator(dir)) out.push_back(entry.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

TEST(WebWriter, WhatItWritesIsReadBackAsItWas) {
  TempDir dir;
  RecordWriter writer(dir.path());
  const RawExchange plain = exchange("/a?x=1", std::string("\0binary\xff", 8));
  RawExchange chunked = exchange("/b", "");
  chunked.response.headers = {{"Transfer-Encoding", "chunked"}, {"content-encoding", "gzip"}};
  chunked.response.body = "5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\nTrailer: x\r\n\r\n";
  RawExchange h2 = exchange("/c", "two");
  h2.address = "fd77::3";
  h2.protocol = "h2";
  h2.scheme = Scheme::kHttp;
  h2.port = 8080;
  RawExchange head = exchange("/d", "");
  head.request.first_line = "HEAD /d HTTP/1.1";
  head.request.body = "";
  head.response.first_line = "HTTP/1.1 404 Not Found";
  EXPECT_EQ(writer.write(plain), dir.path() + "/save.00000001");
  writer.write(chunked);
  writer.write(h2);
  writer.write(head);
  EXPECT_EQ(names(dir.path()),
            (std::vector<std::string>{"save.00000001", "save.00000002", "save.00000003", "save.00000004"}));
  const Recording r = load_recording(dir.path());
  ASSERT_EQ(r.exchanges.size(), 4u);
  const Exchange& a = r.exchanges[0];
  EXPECT_EQ(a.address, "10.77.0.1");
  EXPECT_EQ(a.port, 443);
  EXPECT_EQ(a.scheme, Scheme::kHttps);
  EXPECT_EQ(a.host, "www.replay.test");
  EXPECT_EQ(a.protocol, "http/1.1");
  EXPECT_EQ(a.request.method, "GET");
  EXPECT_EQ(a.request.target, "/a?x=1");
  ASSERT_EQ(a.request.headers.size(), 2u);
  EXPECT_EQ(a.request.headers[1].name, "Accept-Encoding");
  EXPECT_EQ(a.request.headers[1].value, "gzip");
  EXPECT_EQ(a.response.status, 200);
  EXPECT_EQ(a.response.reason, "OK");
  EXPECT_EQ(a.response.body, plain.response.body);
  EXPECT_EQ(a.response.headers.size(), 1u);                // Content-Length goes on reading: the server frames the body
  EXPECT_EQ(r.exchanges[1].response.body, "hello world");  // the framing written as received, removed on reading
  EXPECT_EQ(r.exchanges[2].address, "fd77::3");
  EXPECT_EQ(r.exchanges[2].protocol, "h2");
  EXPECT_EQ(r.exchanges[2].request.version, "HTTP/2");
  EXPECT_EQ(r.exchanges[2].port, 8080);
  EXPECT_EQ(r.exchanges[2].scheme, Scheme::kHttp);
  EXPECT_EQ(r.exchanges[3].response.status, 404);
  EXPECT_EQ(r.exchanges[3].request.method, "HEAD");
}

TEST(WebWriter, NumbersOnAfterWhatIsThereAndLeavesSideFilesAlone) {
  TempDir dir;
  std::ofstream(dir.path() + "/ca.pem") << "x";
  std::ofstream(dir.path() + "/save.00000041") << "";
  std::ofstream(dir.path() + "/save.notanumber") << "";
  RecordWriter writer(dir.path());
  EXPECT_EQ(writer.write(exchange("/", "x")), dir.path() + "/save.00000042");
  EXPECT_EQ(RecordWriter(dir.path()).write(exchange("/", "y")), dir.path() + "/save.00000043");
}

TEST(WebWriter, ADirectoryThatIsGoneIsAnError) {
  TempDir dir;
  EXPECT_THROW(RecordWriter(dir.path() + "/gone"), Error);
  RecordWriter writer(dir.path());
  fs::remove_all(dir.path());
  EXPECT_THROW(writer.write(exchange("/", "x")), Error);
}

TEST(WebWriter, AWriteThatFailsNamesItsFileLeavesNothingAndSpendsItsNumber) {
  TempDir dir;
  RecordWriter writer(dir.path());
  // A file size limit fails the write as a full disk would (EFBIG, with SIGXFSZ ignored as the recorder does).
  const auto handler = std::signal(SIGXFSZ, SIG_IGN);
  rlimit before{};
  ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &before), 0);
  rlimit small = before;
  small.rlim_cur = 1000;
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &small), 0);
  std::string what;
  try {
    writer.write(exchange("/", std::string(5000, 'x')));
  } catch (const Error& e) {
    what = e.what();
  }
  setrlimit(RLIMIT_FSIZE, &before);
  std::signal(SIGXFSZ, handler);
  EXPECT_EQ(what, dir.path() + "/save.00000001: File too large");
  EXPECT_EQ(names(dir.path()), std::vector<std::string>{});
  EXPECT_EQ(writer.write(exchange("/", "x")), dir.path() + "/save.00000002");  // the failed one's number unused
}

}  // namespace
}  // namespace tracemod::web
