// A web recording: every HTTP exchange a browser made, each with the origin that answered it, as tm-webrecord
// stores it and as tm-webreplay serves it. Read from tracemod's and Mahimahi's recording directories (one
// protobuf RequestResponse per file, web/http_record.proto) and from HAR files. Format: docs/web-recording.md.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace tracemod::web {

struct Header {
  std::string name, value;  // as recorded (case kept)
};

struct Request {
  std::string method;               // "GET"
  std::string target;               // origin form: "/path?query" (an absolute-form target is reduced to it)
  std::string version;              // "HTTP/1.1", "HTTP/2"
  std::vector<Header> headers;      // for HTTP/2, :authority is given as a Host header
  std::string body;
};

struct Response {
  int status = 0;
  std::string reason;               // "OK"; empty where the recording has none (HTTP/2, HAR)
  std::vector<Header> headers;      // as the origin sent them, hop-by-hop ones included
  std::string body;                 // the payload as the origin sent it: content coding kept, chunking removed
                                    // (from a HAR: decoded, and Content-Encoding, Content-Length and
                                    // Transfer-Encoding are dropped from the headers)
};

enum class Scheme { kHttp, kHttps };

struct Exchange {
  Scheme scheme = Scheme::kHttp;
  std::string host;                 // the name the request was for (Host or :authority, without a port)
  std::string address;              // the origin's IP address as recorded ("93.184.216.34", "2001:db8::1")
  uint16_t port = 0;
  std::string protocol;             // ALPN the origin chose: "h2" or "http/1.1" (the latter if not recorded)
  Request request;
  Response response;
  std::string source;               // where it was read from, for messages: "DIR/save.3", "site.har: entry 12"
};

struct Recording {
  std::string path;                 // the directory or HAR file it was read from
  std::vector<Exchange> exchanges;  // in the order read (files sorted by name; HAR entries in order)
  // What a HAR file lacked, for the caller to say (a directory's count is always 0):
  size_t missing_bodies = 0;        // entries kept with an empty body: the response had one, the file not
  size_t skipped = 0;               // entries left out: no response (status 0), or not an http(s) URL
};

// Reads PATH: a tracemod or Mahimahi recording directory, or a HAR file (HAR 1.2, with content). Throws Error
// naming the file (and entry) and what is wrong; a recording with no exchanges is an error too.
Recording load_recording(const std::string& path);

// Gives each name recorded with no address (a HAR entry without serverIPAddress) one of its own in 198.18.0.0/15
// (RFC 2544's benchmarking range, routed nowhere), by the names' order: the same recording always gets the same.
// Returns how many names it gave one.
size_t give_addresses(Recording& recording);

// Every origin in a recording: an address and port, its scheme, and the names recorded for it, sorted by
// address and port.
struct Origin {
  std::string address;
  uint16_t port = 0;
  Scheme scheme = Scheme::kHttp;
  std::vector<std::string> names;   // sorted, unique
};
std::vector<Origin> origins(const Recording& recording);

}  // namespace tracemod::web
