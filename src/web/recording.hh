// A web recording: every HTTP exchange a browser made, each with the origin that answered it, as tm-webrecord
// stores it and as tm-webreplay serves it. Read from tracemod's and Mahimahi's recording directories (one
// protobuf RequestResponse per file, web/http_record.proto) and from HAR files, and made fit to be served on the
// way in (web/wire.hh). Format: docs/web-recording.md.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace tracemod::web {

struct Header {
  std::string name, value;  // as recorded (case kept)
  bool operator==(const Header& o) const { return name == o.name && value == o.value; }
};

struct Request {
  std::string method;           // "GET"
  std::string target;           // origin form: "/path?query" (an absolute-form target is reduced to it)
  std::string version;          // "HTTP/1.1", "HTTP/2"
  std::vector<Header> headers;  // for HTTP/2, :authority is given as a Host header
  std::string body;
};

struct Response {
  int status = 0;
  std::string reason;  // "OK"; empty where the recording has none (HTTP/2, HAR)
  // As the origin sent them, made fit for the wire (web/wire.hh): no field a server must not send again as it
  // is (Content-Length, Transfer-Encoding, Connection and the other connection-specific ones; a server frames
  // the body itself), and no Content-Encoding: CODING holds it.
  std::vector<Header> headers;
  std::string coding;    // the Content-Encoding the origin sent, lower case: "gzip", "br"; "" for none
  std::string body;      // the payload, chunking removed: in CODING as the origin sent it, or, where
  bool decoded = false;  // DECODED says so, without it (a HAR holds bodies decoded)
};

enum class Scheme { kHttp, kHttps };

struct Exchange {
  Scheme scheme = Scheme::kHttp;
  std::string host;     // the name the request was for (Host or :authority, without a port)
  std::string address;  // the origin's IP address as recorded ("93.184.216.34", "2001:db8::1")
  uint16_t port = 0;
  std::string protocol;      // ALPN the origin chose: "h2" or "http/1.1"; "" where the recording does not say
  int64_t recorded_ms = -1;  // when it was recorded (ms since the epoch): the response's Date, else the HAR
                             // entry's startedDateTime; -1 if neither says
  Request request;
  Response response;
  std::string source;  // where it was read from, for messages: "DIR/save.3", "site.har: entry 12"
};

// What a reader left out or changed, for the caller to say once (docs/web-recording.md, "What is said").
struct ReadNotes {
  size_t skipped = 0;      // entries no replay could serve: no response (status 0), not an http(s) URL
  size_t zero_status = 0;  // entries of status 0 that saved a response all the same (headers, a body:
                           // Firefox writes that for streams the server pushed): served as 200
  size_t malformed = 0;    // entries (or files) that could not be read: left out, the first one's reason:
  std::string first_malformed;
  size_t missing_bodies = 0;  // kept with an empty body: the response had one, the file did not save it
  size_t short_bodies = 0;    // bodies shorter than the size recorded for them (content.size,
  std::string first_short;    // Content-Length): served as they are, the first one named
  size_t unsized = 0;         // HAR bodies with no content.size to check them against
  size_t readdressed = 0;     // entries whose recorded address no replay can serve at (a proxy's loopback,
                              // unspecified, multicast, link-local): given one of their own
  size_t split = 0, repaired = 0, dropped = 0;  // header fields: joined values split, a name cut at the wrong
                                                // colon mended, fields dropped (no token name, a control byte)
};

struct Recording {
  std::string path;                 // the directory or HAR file it was read from
  std::vector<Exchange> exchanges;  // in the order read (files sorted by name; HAR entries in order)
  ReadNotes notes;
};

// Reads PATH: a tracemod or Mahimahi recording directory, or a HAR file (HAR 1.2, with content). A file or entry
// that cannot be read is left out and counted (notes.malformed); what cannot be read at all (no such path, not
// JSON, no log.entries, not a regular file) throws UsageError naming the file (and line); a recording with no
// exchanges left is an error too, naming the first reason if entries were left out.
Recording load_recording(const std::string& path);

// Gives each name recorded with no address (a HAR entry without serverIPAddress, or with one left out as
// unusable) one of its own in 198.18.0.0/15 (RFC 2544's benchmarking range, routed nowhere), by the names'
// order: the same recording always gets the same. Returns how many names it gave one.
size_t give_addresses(Recording& recording);

// Every origin in a recording: an address and port, its scheme, and the names recorded for it, sorted by
// address and port.
struct Origin {
  std::string address;
  uint16_t port = 0;
  Scheme scheme = Scheme::kHttp;
  std::vector<std::string> names;  // sorted, unique
};
std::vector<Origin> origins(const Recording& recording);

// The value of the first header named NAME (case-insensitive), or null.
const std::string* find_header(const std::vector<Header>& headers, const std::string& name);

// Names equal regardless of ASCII case.
bool iequals(const std::string& a, const std::string& b);

// The notes as the lines a tool says, each beginning with the recording's path; none if there is nothing to say.
std::vector<std::string> describe_notes(const Recording& recording);

}  // namespace tracemod::web
