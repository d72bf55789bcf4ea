#include "web/wire.hh"

#include <arpa/inet.h>

#include <algorithm>
#include <cctype>

#include "web/reading.hh"

namespace tracemod::web {
namespace {

bool token_char(unsigned char c) {
  static const std::string_view kSpecials = "!#$%&'*+-.^_`|~";
  return std::isalnum(c) || kSpecials.find(static_cast<char>(c)) != std::string_view::npos;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool has_control_byte(std::string_view value) {
  return std::any_of(value.begin(), value.end(), [](char c) {
    const auto u = static_cast<unsigned char>(c);
    return (u < 0x20 && u != '\t') || u == 0x7f;
  });
}

// What a server frames itself, or HTTP/2 forbids: never served as recorded.
bool framing(const std::string& name) {
  for (const char* f :
       {"content-length", "transfer-encoding", "connection", "keep-alive", "proxy-connection", "upgrade", "te"})
    if (iequals(name, f)) return true;
  return !name.empty() && name[0] == ':';
}

// H's name mended where a HAR writer split a line at the wrong colon, else false. Two cases seen in real files:
// the whole line in the name ("Set-Cookie: a=b; Expires=... 12" and "00:00 GMT"): the name is what precedes its
// first colon; and a second cookie of a multi-line Set-Cookie taken for a field of its own (WebPageTest:
// "WMF-Last-Access=...; Expires=Wed, 30 Sep 2015 12" and "00:00 GMT", after a set-cookie): another Set-Cookie.
bool mend_name(Header& h, const std::vector<Header>& before) {
  const size_t colon = h.name.find(':');
  if (colon != std::string::npos && is_token(trim(std::string_view(h.name).substr(0, colon)))) {
    const std::string name(trim(std::string_view(h.name).substr(0, colon)));
    h.value = std::string(trim(std::string_view(h.name).substr(colon + 1))) + ":" + h.value;
    h.name = name;
    return true;
  }
  if (before.empty() || !iequals(before.back().name, "Set-Cookie") || h.name.find('=') == std::string::npos)
    return false;
  h.value = h.name + ":" + h.value;
  h.name = before.back().name;
  return true;
}

// Appends to OUT the fields H stands for: one per line of its value, each trimmed; a line with a control byte
// is dropped.
void add_lines(const Header& h, std::vector<Header>& out, ReadNotes& notes) {
  std::string_view rest = h.value;
  size_t lines = 0;
  for (;;) {
    const size_t end = rest.find('\n');
    std::string_view line = rest.substr(0, end);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    line = trim(line);
    const bool last = end == std::string_view::npos;
    if (has_control_byte(line)) {
      ++notes.dropped;
    } else if (!line.empty() || (last && lines == 0)) {
      out.push_back({h.name, std::string(line)});
      ++lines;
    }
    if (last) break;
    rest.remove_prefix(end + 1);
  }
  if (h.value.find('\n') != std::string::npos) ++notes.split;
}

}  // namespace

bool is_token(std::string_view name) {
  return !name.empty() && std::all_of(name.begin(), name.end(), [](char c) { return token_char(c); });
}

void fit_for_wire(Response& response, ReadNotes& notes) {
  std::vector<Header> out;
  out.reserve(response.headers.size());
  for (Header h : response.headers) {
    if (!h.name.empty() && h.name[0] == ':') continue;  // HTTP/2's pseudo-headers: the server's own
    std::string_view name = trim(h.name);
    if (name.size() != h.name.size()) h.name = std::string(name);
    if (!is_token(h.name)) {
      if (!mend_name(h, out)) {
        ++notes.dropped;
        continue;
      }
      ++notes.repaired;
    }
    if (framing(h.name)) continue;
    if (iequals(h.name, "Content-Encoding")) {
      response.coding = std::string(trim(h.value));
      std::transform(response.coding.begin(), response.coding.end(), response.coding.begin(),
                     [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
      if (response.coding == "identity") response.coding.clear();
      continue;
    }
    add_lines(h, out, notes);
  }
  response.headers = std::move(out);
}

std::string servable_address(std::string_view text) {
  const std::string s(text);
  unsigned char b[16];
  char out[INET6_ADDRSTRLEN];
  if (inet_pton(AF_INET, s.c_str(), b) == 1) {
    const bool bad = b[0] == 127 || b[0] == 0 || b[0] >= 224 || (b[0] == 169 && b[1] == 254);
    return bad ? "" : inet_ntop(AF_INET, b, out, sizeof out);
  }
  if (inet_pton(AF_INET6, s.c_str(), b) == 1) {
    static const unsigned char kZero[16] = {};
    const bool unspecified_or_loopback = std::equal(b, b + 15, kZero) && (b[15] == 0 || b[15] == 1);
    const bool multicast = b[0] == 0xff, link_local = b[0] == 0xfe && (b[1] & 0xc0) == 0x80;
    const bool mapped = std::equal(b, b + 10, kZero) && b[10] == 0xff && b[11] == 0xff;  // ::ffff:a.b.c.d
    return unspecified_or_loopback || multicast || link_local || mapped ? "" : inet_ntop(AF_INET6, b, out, sizeof out);
  }
  return "";
}

bool is_ip_address(std::string_view text) {
  unsigned char b[16];
  const std::string s(text);
  return inet_pton(AF_INET, s.c_str(), b) == 1 || inet_pton(AF_INET6, s.c_str(), b) == 1;
}

bool requestable_host(std::string_view name) {
  unsigned char b[16];
  const std::string s(name);
  if (inet_pton(AF_INET6, s.c_str(), b) == 1) return true;
  if (name.empty() || name.size() > 253) return false;
  size_t label = 0;
  for (char c : name) {
    const auto u = static_cast<unsigned char>(c);
    if (u <= 0x20 || u == 0x7f || c == '/' || c == '\\' || c == '@' || c == '#' || c == '?') return false;
    label = c == '.' ? 0 : label + 1;
    if (label > 63) return false;
  }
  return name.front() != '.' && name.find("..") == std::string_view::npos;
}

}  // namespace tracemod::web
