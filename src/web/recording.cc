#include "web/recording.hh"

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <map>
#include <tuple>
#include <utility>

#include "util/error.hh"
#include "web/reading.hh"

namespace tracemod::web {

bool iequals(const std::string& a, const std::string& b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

const std::string* find_header(const std::vector<Header>& headers, const std::string& name) {
  for (const Header& h : headers)
    if (iequals(h.name, name)) return &h.value;
  return nullptr;
}

std::string host_name(const std::string& authority) {
  std::string name = authority;
  if (!name.empty() && name[0] == '[') {
    name = name.substr(1, name.find(']') - 1);  // "[2001:db8::1]:443"
  } else if (std::count(name.begin(), name.end(), ':') == 1) {
    name.erase(name.find(':'));  // "a.example:8080" (several colons: a bare IPv6 address)
  }
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return name;
}

std::string origin_form(const std::string& target) {
  const size_t colon = target.find("://");
  if (target.empty() || target[0] == '/' || colon == std::string::npos) return target;
  const size_t end = target.find_first_of("/?#", colon + 3);
  if (end == std::string::npos || target[end] == '#') return "/";
  return target[end] == '/' ? target.substr(end) : "/" + target.substr(end);
}

Recording load_recording(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    const std::string why = std::strerror(errno);
    if (errno == ENOENT || errno == ENOTDIR) throw UsageError(path + ": " + why);
    throw Error(path + ": " + why);
  }
  Recording recording;
  recording.path = path;
  if (S_ISDIR(st.st_mode)) {
    read_directory(recording);
  } else {
    read_har(recording);
  }
  if (recording.exchanges.empty()) {
    const ReadNotes& n = recording.notes;
    throw UsageError(n.malformed ? n.first_malformed + " (and no other exchange could be read either)"
                                 : path + ": no recorded exchanges");
  }
  return recording;
}

namespace {

// WHERE ("site.har: entry 12: why") without the recording's own path, which the line begins with already.
std::string without_path(const std::string& where, const std::string& path) {
  return where.rfind(path + ": ", 0) == 0 ? where.substr(path.size() + 2) : where;
}

std::string count(size_t n, const std::string& one, const std::string& many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

}  // namespace

std::vector<std::string> describe_notes(const Recording& recording) {
  const ReadNotes& n = recording.notes;
  const std::string& p = recording.path;
  const size_t fields = n.split + n.repaired + n.dropped;
  // Each kind of entry the reader changed or left out: how many, the noun as one and as many, what befell them.
  const std::tuple<size_t, const char*, const char*, std::string> said[] = {
      {n.malformed, "entry", "entries", std::string(" could not be read and ") + (n.malformed == 1 ? "is" : "are") +
                                            " left out (the first, " + without_path(n.first_malformed, p) + ")"},
      {n.skipped, "entry has", "entries have", " no response or no http(s) URL: left out"},
      {n.zero_status, "entry has", "entries have",
       " status 0 but a response saved (Firefox writes that for pushed streams): served as 200"},
      {n.missing_bodies, "response was", "responses were", " saved without their content: served with an empty body"},
      {n.short_bodies, "body is", "bodies are",
       " shorter than the size recorded for them (the first, " + without_path(n.first_short, p) + "): served as they are"},
      {n.unsized, "body has", "bodies have", " no recorded size (content.size) to check them against"},
      {n.readdressed, "entry was", "entries were",
       " recorded at an address no replay can serve at (loopback, a proxy's; unspecified, multicast, link-local): "
       "their names get addresses of their own"},
      {fields, "header field", "header fields",
       " changed to be sent: " + std::to_string(n.split) + " joined values split, " + std::to_string(n.repaired) +
           " names cut at the wrong colon mended, " + std::to_string(n.dropped) +
           " dropped (no token for a name, or a control byte in the value)"},
  };
  std::vector<std::string> lines;
  for (const auto& [number, one, many, what] : said)
    if (number) lines.push_back(p + ": " + count(number, one, many) + what);
  return lines;
}

size_t give_addresses(Recording& recording) {
  std::map<std::string, std::string> given;
  for (const Exchange& e : recording.exchanges)
    if (e.address.empty()) given.emplace(e.host, "");
  if (given.size() > 65534) throw UsageError(recording.path + ": over 65534 names without an address");
  uint32_t n = 0;
  for (auto& [name, address] : given) {
    ++n;
    address = "198.18." + std::to_string(n >> 8) + "." + std::to_string(n & 0xff);
  }
  for (Exchange& e : recording.exchanges)
    if (e.address.empty()) e.address = given[e.host];
  return given.size();
}

std::vector<Origin> origins(const Recording& recording) {
  std::map<std::pair<std::string, uint16_t>, Origin> by_address;
  for (const Exchange& e : recording.exchanges) {
    auto [it, added] = by_address.try_emplace({e.address, e.port});
    if (added) it->second = Origin{e.address, e.port, e.scheme, {}};  // the first exchange's scheme
    if (!e.host.empty()) it->second.names.push_back(e.host);
  }
  std::vector<Origin> out;
  for (auto& [key, origin] : by_address) {
    std::sort(origin.names.begin(), origin.names.end());
    origin.names.erase(std::unique(origin.names.begin(), origin.names.end()), origin.names.end());
    out.push_back(std::move(origin));
  }
  return out;
}

}  // namespace tracemod::web
