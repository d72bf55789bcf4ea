// tracemod's and Mahimahi's recording directories: one RequestResponse (web/http_record.proto) per file.
#include <google/protobuf/stubs/logging.h>

#include <algorithm>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <filesystem>
#include <limits>
#include <string_view>

#include "util/error.hh"
#include "util/file_descriptor.hh"
#include "web/http_date.hh"
#include "web/http_record.pb.h"
#include "web/reading.hh"
#include "web/wire.hh"

namespace tracemod::web {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;
namespace fs = std::filesystem;

UsageError not_a_record(const std::string& file, const std::string& why) {
  return UsageError(file + ": not a Mahimahi or tracemod record: " + why);
}

// The files tracemod keeps beside the exchanges (the replay's certificate authority), and hidden files.
bool is_side_file(const std::string& name) {
  auto ends_with = [&](std::string_view tail) {
    return name.size() >= tail.size() && name.compare(name.size() - tail.size(), tail.size(), tail) == 0;
  };
  return name[0] == '.' || ends_with(".pem") || ends_with(".key");
}

// The regular files of DIR that may hold an exchange, sorted by name (readdir's order is the file system's).
std::vector<std::string> record_files(const std::string& dir) {
  std::error_code ec;
  std::vector<std::string> names;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (it->is_regular_file(ec) && !is_side_file(name)) names.push_back(name);
  }
  if (ec) throw Error(dir + ": " + ec.message());
  std::sort(names.begin(), names.end());
  return names;
}

// Feeds TEXT, the whole message, to PARSER and ends it (a body without a length ends with the text).
template <class Parser>
void parse_all(Parser& parser, std::string_view text, beast::error_code& ec) {
  while (!parser.is_done() && !text.empty()) {
    const size_t used = parser.put(boost::asio::buffer(text.data(), text.size()), ec);
    text.remove_prefix(used);
    if (ec == http::error::need_more) ec = {};
    if (ec || used == 0) break;
  }
  if (!ec && !parser.is_done()) parser.put_eof(ec);
}

std::string version_text(unsigned version) {
  return "HTTP/" + std::to_string(version / 10) + "." + std::to_string(version % 10);
}

Request read_request(const pb::HTTPMessage& m, const std::string& file) {
  http::request_parser<http::empty_body> parser;
  beast::error_code ec;
  parse_all(parser, m.first_line() + "\r\n\r\n", ec);
  if (ec) throw not_a_record(file, "request line " + quote_text(m.first_line()) + ": " + ec.message());
  Request r;
  r.method = std::string(parser.get().method_string());
  r.target = std::string(parser.get().target());
  r.version = version_text(parser.get().version());
  for (const pb::HTTPHeader& h : m.header()) r.headers.push_back({h.key(), h.value()});
  r.body = m.body();
  return r;
}

// A body shorter than the Content-Length its response gave (a recorder stopped mid-body): served as it is, said.
void note_short_body(const Response& r, bool head, const std::string& file, ReadNotes& notes) {
  const std::string* length = find_header(r.headers, "Content-Length");
  if (!length || head || r.status < 200 || r.status == 204 || r.status == 304 ||
      find_header(r.headers, "Transfer-Encoding"))
    return;
  char* end = nullptr;
  const unsigned long long n = std::strtoull(length->c_str(), &end, 10);
  if (end == length->c_str() || n <= r.body.size()) return;
  if (notes.short_bodies++ == 0)
    notes.first_short = file + ": " + std::to_string(r.body.size()) + " of " + std::to_string(n) + " bytes";
}

// Mahimahi stores a body as it came after the headers, so a chunked one keeps its framing. Beast reads the
// status line and the framing Mahimahi itself went by (Transfer-Encoding; HEAD, 1xx, 204 and 304 have no body)
// and removes the chunking; the headers themselves are taken as recorded, not through a parser that could
// refuse an origin's odd one, and then made fit for the wire (web/wire.hh).
Response read_response(const pb::HTTPMessage& m, bool head, const std::string& file, ReadNotes& notes) {
  Response r;
  for (const pb::HTTPHeader& h : m.header()) r.headers.push_back({h.key(), h.value()});
  std::string framing;  // every Transfer-Encoding field: the origin's framing is the last coding of them all
  for (const Header& h : r.headers)
    if (iequals(h.name, "Transfer-Encoding")) framing += "Transfer-Encoding: " + h.value + "\r\n";
  http::response_parser<http::string_body> parser;
  parser.body_limit(std::numeric_limits<std::uint64_t>::max());
  parser.skip(head);
  beast::error_code ec;
  parse_all(parser, m.first_line() + "\r\n" + framing + "\r\n" + m.body(), ec);
  if (!parser.is_header_done())
    throw not_a_record(file, "status line " + quote_text(m.first_line()) + ": " + ec.message());
  if (ec == http::error::partial_message) throw not_a_record(file, "response body: cut short");
  if (ec) throw not_a_record(file, "response body: " + ec.message());
  r.status = static_cast<int>(parser.get().result_int());
  r.reason = std::string(parser.get().reason());
  r.body = std::move(parser.get().body());
  note_short_body(r, head, file, notes);
  fit_for_wire(r, notes);
  return r;
}

std::string checked_protocol(const pb::RequestResponse& rr, const std::string& file) {
  if (!rr.has_protocol()) return "http/1.1";
  if (rr.protocol() != "h2" && rr.protocol() != "http/1.1")
    throw not_a_record(file, "protocol " + quote_text(rr.protocol()) + " is neither h2 nor http/1.1");
  return rr.protocol();
}

// The name the request was for: ours records it; Mahimahi's has the Host header (or an absolute target).
std::string request_host(const pb::RequestResponse& rr, const Request& request) {
  if (rr.has_host()) return host_name(rr.host());
  if (const std::string* host = find_header(request.headers, "Host")) return host_name(*host);
  const size_t colon = request.target.find("://");
  if (colon == std::string::npos || request.target[0] == '/') return "";
  return host_name(request.target.substr(colon + 3, request.target.find('/', colon + 3) - colon - 3));
}

Exchange read_exchange(const std::string& file, ReadNotes& notes) {
  const std::string data = read_file(file);
  pb::RequestResponse rr;
  bool parsed = false;
  {
    const google::protobuf::LogSilencer quiet;  // the error below says what is wrong, in one line
    parsed = rr.ParseFromString(data);
  }
  if (!parsed) throw not_a_record(file, "not a RequestResponse message");
  if (!rr.has_request() || !rr.request().has_first_line()) throw not_a_record(file, "no request");
  if (!rr.has_response() || !rr.response().has_first_line()) throw not_a_record(file, "no response");
  if (rr.ip().empty()) throw not_a_record(file, "no ip");
  if (rr.port() == 0 || rr.port() > 65535) throw not_a_record(file, "port " + std::to_string(rr.port()));
  Exchange e;
  e.scheme = rr.scheme() == pb::RequestResponse::HTTPS ? Scheme::kHttps : Scheme::kHttp;
  const std::string ip = rr.ip().front() == '[' ? rr.ip().substr(1, rr.ip().size() - 2) : rr.ip();
  if (!is_ip_address(ip)) throw not_a_record(file, "ip " + quote_text(rr.ip()) + " is no IP address");
  e.address = servable_address(ip);
  if (e.address.empty()) ++notes.readdressed;  // a loopback address: give_addresses gives one
  e.port = static_cast<uint16_t>(rr.port());
  e.protocol = checked_protocol(rr, file);
  e.request = read_request(rr.request(), file);
  e.host = request_host(rr, e.request);
  if (!requestable_host(e.host))
    throw not_a_record(file, "host " + quote_text(e.host) + " is no name a client can ask for");
  e.request.target = origin_form(e.request.target);
  if (e.protocol == "h2") e.request.version = "HTTP/2";
  e.response = read_response(rr.response(), e.request.method == "HEAD", file, notes);
  if (const std::string* date = find_header(e.response.headers, "Date"))
    if (const auto seconds = parse_http_date(*date)) e.recorded_ms = *seconds * 1000;
  e.source = file;
  return e;
}

}  // namespace

void read_directory(Recording& recording) {
  ReadNotes& notes = recording.notes;
  for (const std::string& name : record_files(recording.path)) {
    try {
      recording.exchanges.push_back(read_exchange((fs::path(recording.path) / name).string(), notes));
    } catch (const UsageError& bad) {
      if (notes.malformed++ == 0) notes.first_malformed = bad.what();
    }
  }
}

}  // namespace tracemod::web
