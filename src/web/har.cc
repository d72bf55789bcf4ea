// HAR 1.2 files as browsers' developer tools and other HAR writers save them "with content" (Chromium, Firefox,
// Safari, Firebug, Fiddler, Charles, WebPageTest, chrome-har...). simdjson reads the file (a 68 MB HAR in tens
// of milliseconds, its strings viewed in place); nlohmann-json reads it again only when simdjson refuses it, for
// the line a syntax error is on.
#include <simdjson.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <utility>

#include "util/error.hh"
#include "util/file_descriptor.hh"
#include "web/http_date.hh"
#include "web/reading.hh"
#include "web/wire.hh"

namespace tracemod::web {
namespace {

using simdjson::dom::element;

// Where a HAR entry is, for messages ("site.har: entry 12", counted from 1).
struct Where {
  std::string text;
  [[noreturn]] void fail(const std::string& why) const { throw UsageError(text + ": " + why); }
};

// OBJ's member KEY, or nothing if OBJ is no object or lacks it (a JSON null counts as absent).
std::optional<element> member(element obj, std::string_view key) {
  simdjson::dom::object o;
  element value;
  if (obj.get(o) || o.at_key(key).get(value) || value.is_null()) return std::nullopt;
  return value;
}

// KEY of OBJ as a string (NAME in messages, e.g. "request.url"); "" if absent and not REQUIRED.
std::string_view string_at(element obj, std::string_view key, const std::string& name, const Where& where,
                           bool required = false) {
  const std::optional<element> value = member(obj, key);
  if (!value) {
    if (required) where.fail("no " + name);
    return {};
  }
  std::string_view s;
  if (value->get(s)) where.fail(name + " is not a string");
  return s;
}

element object_at(element obj, std::string_view key, const std::string& name, const Where& where) {
  const std::optional<element> value = member(obj, key);
  if (!value) where.fail("no " + name);
  if (!value->is_object()) where.fail(name + " is not an object");
  return *value;
}

// A number at KEY of OBJ, if there is one.
std::optional<double> number_at(element obj, std::string_view key) {
  const std::optional<element> value = member(obj, key);
  double d;
  if (!value || !value->is_number() || value->get(d)) return std::nullopt;
  return d;
}

// The line (counted from 1) of the syntax error nlohmann finds in TEXT and its reason, for a file simdjson refused.
std::string syntax_error(const std::string& path, std::string_view text, const char* simdjson_reason) {
  try {
    const nlohmann::json parsed = nlohmann::json::parse(text.begin(), text.end());
    (void)parsed;
  } catch (const nlohmann::json::parse_error& e) {
    // nlohmann counts bytes; a line is what an editor shows. Its message, after "... column C: ", says why.
    const size_t at = std::min<size_t>(e.byte == 0 ? 0 : e.byte - 1, text.size());
    const auto line = 1 + std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(at), '\n');
    std::string why = e.what();
    const size_t column = why.find(", column ");
    if (column != std::string::npos && why.find(": ", column) != std::string::npos)
      why = why.substr(why.find(": ", column) + 2);
    return path + ": line " + std::to_string(line) + ": " + why;
  } catch (const nlohmann::json::exception& e) {  // a number too large for any type: no place given
    const std::string why = e.what();
    return path + ": not a HAR file: " + why.substr(why.find("] ") + 2);
  }
  return path + ": not a HAR file: " + simdjson_reason;
}

// The file's text, which must be a regular file (a FIFO would block the check forever), its UTF-8 byte order
// mark (Fiddler writes one) left out.
simdjson::padded_string read_text(const std::string& path) {
  open_regular(path, "give a HAR file or a recording directory");
  simdjson::padded_string text;
  if (const auto error = simdjson::padded_string::load(path).get(text)) {
    if (error == simdjson::IO_ERROR) throw_errno(path, errno ? errno : EIO);
    throw UsageError(path + ": " + simdjson::error_message(error));
  }
  if (text.size() >= 3 && std::memcmp(text.data(), "\xEF\xBB\xBF", 3) == 0)
    text = simdjson::padded_string(text.data() + 3, text.size() - 3);
  return text;
}

// Each byte's value in base64, -1 for what is no base64 digit: a table made at compile time, so the decoding loop
// is a load per character.
constexpr std::array<int8_t, 256> kBase64Values = [] {
  std::array<int8_t, 256> t{};
  for (int8_t& v : t) v = -1;
  const char* alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  for (int i = 0; i < 64; ++i) t[static_cast<unsigned char>(alphabet[i])] = static_cast<int8_t>(i);
  return t;
}();

inline int base64_value(unsigned char c) {
  return kBase64Values[c];
}

// Content the HAR holds in base64 (a binary body), decoded; false if it is not base64. Four characters at a time
// where they are plain (most of a 68 MB HAR), one at a time across line breaks and padding.
bool decode_base64(std::string_view text, std::string& out) {
  out.resize(text.size() / 4 * 3 + 3);
  auto* in = reinterpret_cast<const unsigned char*>(text.data());
  char* o = out.data();
  uint32_t bits = 0;
  int count = 0;
  size_t padding = 0;
  for (size_t i = 0; i < text.size();) {
    if (count == 0 && padding == 0 && i + 4 <= text.size()) {
      const int a = base64_value(in[i]), b = base64_value(in[i + 1]), c = base64_value(in[i + 2]),
                d = base64_value(in[i + 3]);
      if ((a | b | c | d) >= 0) {
        const auto v = static_cast<uint32_t>(a << 18 | b << 12 | c << 6 | d);
        *o++ = static_cast<char>(v >> 16);
        *o++ = static_cast<char>(v >> 8);
        *o++ = static_cast<char>(v);
        i += 4;
        continue;
      }
    }
    const unsigned char ch = in[i++];
    if (ch == '\n' || ch == '\r') continue;  // a line-wrapped encoding
    if (ch == '=') {
      ++padding;
      continue;
    }
    const int value = base64_value(ch);
    if (value < 0 || padding > 0) return false;
    bits = (bits << 6) | static_cast<uint32_t>(value);
    if ((count += 6) >= 8) *o++ = static_cast<char>((bits >> (count -= 8)) & 0xff);
  }
  out.resize(static_cast<size_t>(o - out.data()));
  return padding <= 2 && count < 6;
}

std::vector<Header> read_headers(element message, const std::string& name, const Where& where) {
  std::vector<Header> headers;
  const std::optional<element> list = member(message, "headers");
  if (!list) return headers;
  simdjson::dom::array array;
  if (list->get(array)) where.fail(name + ".headers is not an array");
  for (element h : array)
    headers.push_back({std::string(string_at(h, "name", name + ".headers[].name", where, true)),
                       std::string(string_at(h, "value", name + ".headers[].value", where))});
  return headers;
}

// HTTP/2's pseudo-headers in a HAR request (Chromium lists them): :authority becomes Host, the others go.
void drop_pseudo_headers(std::vector<Header>& headers) {
  if (!find_header(headers, "Host")) {
    for (Header& h : headers)
      if (h.name == ":authority") h.name = "Host";
  }
  headers.erase(std::remove_if(headers.begin(), headers.end(),
                               [](const Header& h) { return !h.name.empty() && h.name[0] == ':'; }),
                headers.end());
}

struct Url {
  std::string scheme, authority, target;  // target in origin form, without the fragment
};

Url split_url(const std::string& url) {
  Url u;
  const size_t colon = url.find("://");
  if (colon == std::string::npos) return u;
  u.scheme = url.substr(0, colon);
  for (char& c : u.scheme) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  const size_t end = url.find_first_of("/?#", colon + 3);
  u.authority = end == std::string::npos ? url.substr(colon + 3) : url.substr(colon + 3, end - colon - 3);
  u.authority.erase(0, u.authority.rfind('@') + 1);  // "user:password@" (npos + 1 erases nothing)
  u.target = origin_form(url.substr(0, url.find('#')));
  return u;
}

uint16_t url_port(const Url& url, const std::string& text, const Where& where) {
  const size_t bracket = url.authority.find(']');
  const size_t colon = url.authority.find(':', bracket == std::string::npos ? 0 : bracket);
  if (colon == std::string::npos || colon + 1 == url.authority.size()) return url.scheme == "https" ? 443 : 80;
  const std::string digits = url.authority.substr(colon + 1);
  if (digits.size() > 5 || !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }) ||
      std::stoi(digits) == 0 || std::stoi(digits) > 65535)
    where.fail("request.url " + quote_text(text) + " has no valid port");
  return static_cast<uint16_t>(std::stoi(digits));
}

// "h2" for what HAR writers write for HTTP/2 ("h2", "HTTP/2", "http/2.0"), and for HTTP/3 (an origin that spoke h3
// to the browser speaks h2 over TCP too); "http/1.1" for HTTP/1.x; "" where the file does not say ("unknown", "").
std::string protocol_of(std::string_view text) {
  std::string version(text);
  for (char& c : version) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (version == "h2" || version == "http/2" || version == "http/2.0" || version == "h3" || version == "http/3" ||
      version.rfind("h3-", 0) == 0)
    return "h2";
  if (version.rfind("http/1", 0) == 0 || version == "http/0.9") return "http/1.1";
  return "";
}

std::string request_version(const std::string& protocol, std::string_view har_version) {
  if (protocol == "h2") return "HTTP/2";
  return iequals(std::string(har_version), "HTTP/1.0") ? "HTTP/1.0" : "HTTP/1.1";
}

// The Content-Length the response was recorded with, or 0.
uint64_t recorded_length(const std::vector<Header>& headers) {
  const std::string* length = find_header(headers, "Content-Length");
  return length ? std::strtoull(length->c_str(), nullptr, 10) : 0;
}

bool may_have_body(int status, const std::string& method) {
  return status >= 200 && status != 204 && status != 304 && method != "HEAD";
}

// The response body into R; counts in NOTES a body the response had but the file did not save, one shorter than
// its content.size, and one with no size to check.
void read_content(element response, Response& r, const std::string& method, const Where& where, ReadNotes& notes) {
  const std::optional<element> content = member(response, "content");
  if (!content) return;
  const std::optional<double> size = number_at(*content, "size");
  const std::optional<element> text = member(*content, "text");
  std::string_view s;
  if (text && text->get(s)) where.fail("response.content.text is not a string");
  if (s.empty()) {
    // No text, where the response had a body: a size over 0, or, where a writer gave 0 (WebPageTest), the
    // Content-Length a 2xx was recorded with (a redirect's page, which DevTools never keeps, is no loss).
    const bool sized = size && *size > 0, long_2xx = r.status / 100 == 2 && recorded_length(r.headers) > 0;
    if ((sized || long_2xx) && may_have_body(r.status, method)) ++notes.missing_bodies;
    return;
  }
  if (string_at(*content, "encoding", "response.content.encoding", where) != "base64") {
    r.body = std::string(s);
  } else if (!decode_base64(s, r.body)) {
    where.fail("response.content.text is not base64");
  }
  if (!size) {
    if (!r.body.empty()) ++notes.unsized;
  } else if (*size > static_cast<double>(r.body.size())) {
    if (notes.short_bodies++ == 0)
      notes.first_short = where.text + ": " + std::to_string(r.body.size()) + " of " +
                          std::to_string(static_cast<uint64_t>(*size)) + " bytes";
  }
  // A status that has no body but was saved with one (Firefox keeps a 304's cached body beside it) stands for
  // the 200 the body came with: its type, which the 304 does not repeat, is the content's.
  const std::string_view type = string_at(*content, "mimeType", "response.content.mimeType", where);
  if (!r.body.empty() && !may_have_body(r.status, method) && !type.empty() && !find_header(r.headers, "Content-Type"))
    r.headers.push_back({"Content-Type", std::string(type)});
}

int read_status(element response, const Where& where) {
  const std::optional<element> status = member(response, "status");
  if (!status) where.fail("no response.status");
  int64_t value;
  if (status->get(value) || value < 0 || value > 999) where.fail("response.status is not a status code");
  return static_cast<int>(value);
}

Request read_request(element request, const std::string& protocol, const Url& url, const Where& where) {
  Request r;
  r.method = std::string(string_at(request, "method", "request.method", where, true));
  if (!is_token(r.method)) where.fail("request.method " + quote_text(r.method) + " is not a method");
  r.target = url.target;
  r.version = request_version(protocol, string_at(request, "httpVersion", "request.httpVersion", where));
  r.headers = read_headers(request, "request", where);
  drop_pseudo_headers(r.headers);
  if (const std::optional<element> post = member(request, "postData"))
    r.body = std::string(string_at(*post, "text", "request.postData.text", where));
  return r;
}

Response read_response(element response, int status, const std::string& method, const Where& where, ReadNotes& notes) {
  Response r;
  r.status = status;
  r.reason = std::string(string_at(response, "statusText", "response.statusText", where));
  r.headers = read_headers(response, "response", where);
  r.decoded = true;  // a HAR holds what the browser decoded, saved or not
  read_content(response, r, method, where, notes);
  fit_for_wire(r, notes);
  return r;
}

// Whether a response of status 0 was saved all the same, headers and body: one the browser did receive.
bool saved_anyway(element response) {
  const std::optional<element> content = member(response, "content");
  const std::optional<element> text = content ? member(*content, "text") : std::nullopt;
  simdjson::dom::array headers;
  const std::optional<element> list = member(response, "headers");
  return text && list && !list->get(headers) && headers.size() > 0;
}

// The address ENTRY was served from: the URL's own if its host is an IP literal, else serverIPAddress; "" (for
// give_addresses) if that is none a replay can serve at (a proxy's 127.0.0.1), counted in NOTES.
std::string entry_address(element entry, const std::string& host, const Where& where, ReadNotes& notes) {
  if (std::string literal = servable_address(host); !literal.empty()) return literal;
  std::string_view recorded = string_at(entry, "serverIPAddress", "serverIPAddress", where);
  if (recorded.size() > 1 && recorded.front() == '[') recorded = recorded.substr(1, recorded.size() - 2);
  if (recorded.empty()) return "";
  std::string address = servable_address(recorded);
  if (address.empty()) ++notes.readdressed;
  return address;
}

// ENTRY as an exchange, or false if it is none the replay could serve (no response, not http(s)).
bool read_entry(element entry, const Where& where, ReadNotes& notes, Exchange& e) {
  const element request = object_at(entry, "request", "request", where);
  const element response = object_at(entry, "response", "response", where);
  const std::string url_text(string_at(request, "url", "request.url", where, true));
  int status = read_status(response, where);
  const Url url = split_url(url_text);
  if (url.scheme != "http" && url.scheme != "https") return false;  // data:, ws:
  if (status == 0 && !saved_anyway(response)) return false;         // no response: blocked, aborted, failed
  if (status == 0) status = 200, ++notes.zero_status;
  std::string_view version = string_at(response, "httpVersion", "response.httpVersion", where);
  if (protocol_of(version).empty()) version = string_at(request, "httpVersion", "request.httpVersion", where);
  e.scheme = url.scheme == "https" ? Scheme::kHttps : Scheme::kHttp;
  e.port = url_port(url, url_text, where);
  e.protocol = protocol_of(version);
  e.request = read_request(request, e.protocol, url, where);
  const std::string* host = find_header(e.request.headers, "Host");
  e.host = host_name(host ? *host : url.authority);
  if (!requestable_host(e.host)) where.fail("request.url " + quote_text(url_text) + ": no host a client can ask for");
  e.address = entry_address(entry, e.host, where, notes);
  e.response = read_response(response, status, e.request.method, where, notes);
  if (const std::string* date = find_header(e.response.headers, "Date"); date && parse_http_date(*date))
    e.recorded_ms = *parse_http_date(*date) * 1000;
  else if (auto started = parse_iso8601_ms(string_at(entry, "startedDateTime", "startedDateTime", where)))
    e.recorded_ms = *started;
  e.source = where.text;
  return true;
}

// Entries served from the browser's cache name no address: they get the one another entry for the same name and
// port was served from (none found: the address stays empty, for the caller to assign).
void fill_addresses(Recording& recording) {
  std::map<std::pair<std::string, uint16_t>, std::string> known;
  for (const Exchange& e : recording.exchanges)
    if (!e.address.empty()) known.try_emplace({e.host, e.port}, e.address);
  for (Exchange& e : recording.exchanges) {
    const auto it = known.find({e.host, e.port});
    if (e.address.empty() && it != known.end()) e.address = it->second;
  }
}

}  // namespace

void read_har(Recording& recording) {
  const simdjson::padded_string text = read_text(recording.path);
  simdjson::dom::parser parser;
  element har;
  if (const auto error = parser.parse(text).get(har))
    throw UsageError(
        syntax_error(recording.path, std::string_view(text.data(), text.size()), simdjson::error_message(error)));
  const std::optional<element> log = member(har, "log");
  const std::optional<element> entries = log ? member(*log, "entries") : std::nullopt;
  simdjson::dom::array list;
  if (!entries || entries->get(list)) throw UsageError(recording.path + ": not a HAR file: no log.entries");
  ReadNotes& notes = recording.notes;
  size_t n = 0;
  for (element entry : list) {
    const Where where{recording.path + ": entry " + std::to_string(++n)};
    Exchange e;
    try {
      if (!read_entry(entry, where, notes, e)) {
        ++notes.skipped;
        continue;
      }
    } catch (const UsageError& bad) {
      if (notes.malformed++ == 0) notes.first_malformed = bad.what();
      continue;
    }
    recording.exchanges.push_back(std::move(e));
  }
  fill_addresses(recording);
}

}  // namespace tracemod::web
