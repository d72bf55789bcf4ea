// HAR 1.2 files as browsers' developer tools save them "with content" (Chromium, Firefox).
#include <algorithm>
#include <cctype>
#include <map>
#include <nlohmann/json.hpp>
#include <utility>

#include "util/error.hh"
#include "util/file_descriptor.hh"
#include "web/reading.hh"

namespace tracemod::web {
namespace {

using nlohmann::json;

// Where a HAR entry is, for messages ("site.har: entry 12", counted from 1), and its reading.
struct Where {
  std::string text;
  [[noreturn]] void fail(const std::string& why) const { throw UsageError(text + ": " + why); }
};

// OBJ's member KEY, or null if OBJ is no object or lacks it (a JSON null counts as absent).
const json* member(const json& obj, const char* key) {
  if (!obj.is_object()) return nullptr;
  const auto it = obj.find(key);
  return it == obj.end() || it->is_null() ? nullptr : &*it;
}

// KEY of OBJ as a string (NAME in messages, e.g. "request.url"); "" if absent and not REQUIRED.
std::string string_at(const json& obj, const char* key, const std::string& name, const Where& where,
                      bool required = false) {
  const json* value = member(obj, key);
  if (!value) {
    if (required) where.fail("no " + name);
    return "";
  }
  if (!value->is_string()) where.fail(name + " is not a string");
  return value->get<std::string>();
}

const json& object_at(const json& obj, const char* key, const std::string& name, const Where& where) {
  const json* value = member(obj, key);
  if (!value) where.fail("no " + name);
  if (!value->is_object()) where.fail(name + " is not an object");
  return *value;
}

json parse_har(const std::string& path) {
  const std::string text = read_file(path);
  try {
    return json::parse(text);
  } catch (const json::parse_error& e) {
    // nlohmann counts bytes; a line is what an editor shows. Its message, after "... column C: ", says why.
    const size_t at = std::min<size_t>(e.byte == 0 ? 0 : e.byte - 1, text.size());
    const auto line = 1 + std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(at), '\n');
    std::string why = e.what();
    const size_t column = why.find(", column ");
    if (column != std::string::npos && why.find(": ", column) != std::string::npos)
      why = why.substr(why.find(": ", column) + 2);
    throw UsageError(path + ": line " + std::to_string(line) + ": " + why);
  } catch (const json::exception& e) {  // a number too large for any type: no place given
    const std::string why = e.what();
    throw UsageError(path + ": not a HAR file: " + why.substr(why.find("] ") + 2));
  }
}

const std::string kBase64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

// Content the HAR holds in base64 (a binary body), decoded; false if it is not base64.
bool decode_base64(const std::string& text, std::string& out) {
  uint32_t bits = 0;
  int count = 0;
  size_t padding = 0;
  for (char c : text) {
    if (c == '\n' || c == '\r') continue;  // a line-wrapped encoding
    if (c == '=') {
      ++padding;
      continue;
    }
    const size_t value = kBase64.find(c);
    if (value == std::string::npos || padding > 0) return false;
    bits = (bits << 6) | static_cast<uint32_t>(value);
    if ((count += 6) >= 8) out.push_back(static_cast<char>((bits >> (count -= 8)) & 0xff));
  }
  return padding <= 2 && count < 6;
}

std::vector<Header> read_headers(const json& message, const std::string& name, const Where& where) {
  std::vector<Header> headers;
  const json* list = member(message, "headers");
  if (!list) return headers;
  if (!list->is_array()) where.fail(name + ".headers is not an array");
  for (const json& h : *list)
    headers.push_back({string_at(h, "name", name + ".headers[].name", where, true),
                       string_at(h, "value", name + ".headers[].value", where)});
  return headers;
}

// HTTP/2's pseudo-headers in a HAR (Chromium lists them): :authority becomes Host, the others go.
void drop_pseudo_headers(std::vector<Header>& headers, bool keep_authority) {
  if (keep_authority && !find_header(headers, "Host")) {
    for (Header& h : headers)
      if (h.name == ":authority") h.name = "Host";
  }
  headers.erase(std::remove_if(headers.begin(), headers.end(),
                               [](const Header& h) { return !h.name.empty() && h.name[0] == ':'; }),
                headers.end());
}

// A HAR holds the body decoded (content coding undone), so the headers that described the coded body go; the
// server frames the body again itself.
void drop_framing_headers(std::vector<Header>& headers) {
  headers.erase(std::remove_if(headers.begin(), headers.end(),
                               [](const Header& h) {
                                 return iequals(h.name, "Content-Encoding") || iequals(h.name, "Content-Length") ||
                                        iequals(h.name, "Transfer-Encoding");
                               }),
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

// "h2" for what browsers write for HTTP/2 ("h2", "HTTP/2", "http/2.0"); "http/1.1" for anything else.
std::string protocol_of(std::string version) {
  for (char& c : version) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return version == "h2" || version == "http/2" || version == "http/2.0" ? "h2" : "http/1.1";
}

std::string request_version(const std::string& protocol, const std::string& har_version) {
  if (protocol == "h2") return "HTTP/2";
  return iequals(har_version, "HTTP/1.0") ? "HTTP/1.0" : "HTTP/1.1";
}

bool may_have_body(int status, const std::string& method) {
  return status >= 200 && status != 204 && status != 304 && method != "HEAD";
}

// The response body; counts in MISSING a body the response had but the file did not save.
std::string read_content(const json& response, int status, const std::string& method, const Where& where,
                         size_t& missing) {
  const json* content = member(response, "content");
  if (!content) return "";
  const json* text = member(*content, "text");
  if (!text) {
    const json* size = member(*content, "size");
    if (size && size->is_number() && size->get<double>() > 0 && may_have_body(status, method)) ++missing;
    return "";
  }
  if (!text->is_string()) where.fail("response.content.text is not a string");
  if (string_at(*content, "encoding", "response.content.encoding", where) != "base64") return text->get<std::string>();
  std::string body;
  if (!decode_base64(text->get<std::string>(), body)) where.fail("response.content.text is not base64");
  return body;
}

int read_status(const json& response, const Where& where) {
  const json* status = member(response, "status");
  if (!status) where.fail("no response.status");
  if (!status->is_number_integer() || status->get<int64_t>() < 0 || status->get<int64_t>() > 999)
    where.fail("response.status is not a status code");
  return status->get<int>();
}

Request read_request(const json& request, const std::string& protocol, const Url& url, const Where& where) {
  Request r;
  r.method = string_at(request, "method", "request.method", where, true);
  r.target = url.target;
  r.version = request_version(protocol, string_at(request, "httpVersion", "request.httpVersion", where));
  r.headers = read_headers(request, "request", where);
  drop_pseudo_headers(r.headers, true);
  if (const json* post = member(request, "postData")) r.body = string_at(*post, "text", "request.postData.text", where);
  return r;
}

Response read_response(const json& response, int status, const std::string& method, const Where& where,
                       size_t& missing) {
  Response r;
  r.status = status;
  r.reason = string_at(response, "statusText", "response.statusText", where);
  r.headers = read_headers(response, "response", where);
  drop_pseudo_headers(r.headers, false);
  drop_framing_headers(r.headers);
  r.body = read_content(response, status, method, where, missing);
  return r;
}

// ENTRY as an exchange, or false if it is none the replay could serve; counts in MISSING a body not saved.
bool read_entry(const json& entry, const Where& where, size_t& missing, Exchange& e) {
  const json& request = object_at(entry, "request", "request", where);
  const json& response = object_at(entry, "response", "response", where);
  const std::string url_text = string_at(request, "url", "request.url", where, true);
  const int status = read_status(response, where);
  const Url url = split_url(url_text);
  if (status == 0 || (url.scheme != "http" && url.scheme != "https")) return false;  // no response; data:, ws:
  std::string version = string_at(response, "httpVersion", "response.httpVersion", where);
  if (version.empty()) version = string_at(request, "httpVersion", "request.httpVersion", where);
  e.scheme = url.scheme == "https" ? Scheme::kHttps : Scheme::kHttp;
  e.port = url_port(url, url_text, where);
  e.protocol = protocol_of(version);
  e.request = read_request(request, e.protocol, url, where);
  const std::string* host = find_header(e.request.headers, "Host");
  e.host = host_name(host ? *host : url.authority);
  e.address = string_at(entry, "serverIPAddress", "serverIPAddress", where);
  if (!e.address.empty() && e.address.front() == '[') e.address = e.address.substr(1, e.address.size() - 2);
  e.response = read_response(response, status, e.request.method, where, missing);
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
  const json har = parse_har(recording.path);
  const json* log = member(har, "log");
  const json* entries = log ? member(*log, "entries") : nullptr;
  if (!entries || !entries->is_array()) throw UsageError(recording.path + ": not a HAR file: no log.entries");
  for (size_t i = 0; i < entries->size(); ++i) {
    const Where where{recording.path + ": entry " + std::to_string(i + 1)};
    Exchange e;
    if (read_entry((*entries)[i], where, recording.missing_bodies, e)) {
      recording.exchanges.push_back(std::move(e));
    } else {
      ++recording.skipped;
    }
  }
  fill_addresses(recording);
}

}  // namespace tracemod::web
