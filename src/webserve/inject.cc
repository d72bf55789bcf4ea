#include "webserve/inject.hh"

#include <gumbo.h>
#include <openssl/evp.h>

#include <algorithm>
#include <cctype>
#include <functional>
#include <utility>

namespace tracemod::webserve {
namespace {

// The script. A template of our own: TIME and SEED are filled in. mulberry32 for randomness: small, seeded,
// and good enough for pages; the clock moves 50 ms every 25 reads so that a page waiting for time to pass
// still sees it pass. The new Date is a function expression: a declaration would be hoisted over the line that
// keeps the real one.
constexpr std::string_view kScript = R"JS((() => {
const RealDate = globalThis.Date, start = TIME;
let now = start, reads = 0, state = SEED | 0;
const clock = () => { if (++reads > 25) { reads = 1; now += 50; } return now; };
const next = () => {
  state = (state + 0x6D2B79F5) | 0;
  let r = Math.imul(state ^ (state >>> 15), 1 | state);
  r = (r + Math.imul(r ^ (r >>> 7), 61 | r)) ^ r;
  return ((r ^ (r >>> 14)) >>> 0) / 4294967296;
};
const Date = function Date(...args) {
  if (!new.target) return new RealDate(clock()).toString();
  return Reflect.construct(RealDate, args.length ? args : [clock()], new.target);
};
Object.setPrototypeOf(Date, RealDate);
Date.prototype = RealDate.prototype;
Object.defineProperty(RealDate.prototype, "constructor", {value: Date, writable: true, configurable: true});
Date.now = function now() { return clock(); };
globalThis.Date = Date;
Math.random = function random() { return next(); };
const c = globalThis.crypto;
if (c && c.getRandomValues) {
  c.getRandomValues = function getRandomValues(a) {
    const b = new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
    for (let i = 0; i < b.length; i++) b[i] = (next() * 256) | 0;
    return a;
  };
}
if (c && c.randomUUID) {
  c.randomUUID = function randomUUID() {
    const b = c.getRandomValues(new Uint8Array(16));
    b[6] = (b[6] & 15) | 64; b[8] = (b[8] & 63) | 128;
    const h = Array.from(b, x => x.toString(16).padStart(2, "0")).join("");
    return h.slice(0, 8) + "-" + h.slice(8, 12) + "-" + h.slice(12, 16) + "-" + h.slice(16, 20) + "-" + h.slice(20);
  };
}
})();)JS";

std::string replace_all(std::string text, std::string_view what, const std::string& with) {
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + with.size()))
    text.replace(at, what.size(), with);
  return text;
}

std::string sha256_base64(std::string_view text) {
  unsigned char digest[32];
  unsigned int n = 0;
  EVP_Digest(text.data(), text.size(), digest, &n, EVP_sha256(), nullptr);
  unsigned char out[64];
  const int len = EVP_EncodeBlock(out, digest, static_cast<int>(n));
  return std::string(reinterpret_cast<char*>(out), static_cast<size_t>(len));
}

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

std::vector<std::string> words(std::string_view directive) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i < directive.size()) {
    while (i < directive.size() && std::isspace(static_cast<unsigned char>(directive[i]))) ++i;
    size_t j = i;
    while (j < directive.size() && !std::isspace(static_cast<unsigned char>(directive[j]))) ++j;
    if (j > i) out.emplace_back(directive.substr(i, j - i));
    i = j;
  }
  return out;
}

bool starts_with(const std::string& s, std::string_view prefix) {
  return lower(s).rfind(prefix, 0) == 0;
}

// One directive's words ("script-src", sources...) rewritten; NONCE set if it names one.
std::string allow_in_directive(std::vector<std::string> w, const Injection& injection, std::string* nonce) {
  bool hashes = false, inline_ok = false;
  for (const std::string& source : w) {
    if (starts_with(source, "'nonce-")) {
      const std::string value = source.substr(7, source.size() - 8);
      const bool base64 = !value.empty() && std::all_of(value.begin(), value.end(), [](unsigned char c) {
        return std::isalnum(c) || c == '+' || c == '/' || c == '=' || c == '-' || c == '_';
      });
      if (nonce && nonce->empty() && base64) *nonce = value;
      std::string out;
      for (const std::string& x : w) out += (out.empty() ? "" : " ") + x;
      return out;
    }
    hashes =
        hashes || starts_with(source, "'sha256-") || starts_with(source, "'sha384-") || starts_with(source, "'sha512-");
    inline_ok = inline_ok || lower(source) == "'unsafe-inline'";
  }
  if (inline_ok && !hashes) {
    std::string out;
    for (const std::string& x : w) out += (out.empty() ? "" : " ") + x;
    return out;
  }
  w.erase(std::remove_if(w.begin() + 1, w.end(), [](const std::string& s) { return lower(s) == "'none'"; }), w.end());
  w.push_back(injection.hash);
  std::string out;
  for (const std::string& x : w) out += (out.empty() ? "" : " ") + x;
  return out;
}

using Edit = std::pair<std::pair<size_t, size_t>, std::string>;  // (offset, length) replaced by text

const GumboNode* find_element(const GumboNode* node, const std::function<bool(const GumboElement&)>& want) {
  if (node->type != GUMBO_NODE_ELEMENT && node->type != GUMBO_NODE_DOCUMENT && node->type != GUMBO_NODE_TEMPLATE)
    return nullptr;
  if (node->type != GUMBO_NODE_DOCUMENT && want(node->v.element)) return node;
  const GumboVector& children =
      node->type == GUMBO_NODE_DOCUMENT ? node->v.document.children : node->v.element.children;
  for (unsigned i = 0; i < children.length; ++i)
    if (const GumboNode* found = find_element(static_cast<const GumboNode*>(children.data[i]), want)) return found;
  return nullptr;
}

void each_element(const GumboNode* node, const std::function<void(const GumboElement&)>& visit) {
  if (node->type != GUMBO_NODE_ELEMENT && node->type != GUMBO_NODE_DOCUMENT && node->type != GUMBO_NODE_TEMPLATE)
    return;
  if (node->type != GUMBO_NODE_DOCUMENT) visit(node->v.element);
  const GumboVector& children =
      node->type == GUMBO_NODE_DOCUMENT ? node->v.document.children : node->v.element.children;
  for (unsigned i = 0; i < children.length; ++i) each_element(static_cast<const GumboNode*>(children.data[i]), visit);
}

bool explicit_tag(const GumboElement& e) {
  return e.original_tag.length > 0 && e.original_tag.data;
}

// Where the script goes: after the <head> tag, else after the <html> tag, else before the first element written.
std::optional<size_t> insertion_point(const GumboOutput* out, std::string_view html) {
  for (GumboTag tag : {GUMBO_TAG_HEAD, GUMBO_TAG_HTML}) {
    const GumboNode* n =
        find_element(out->document, [&](const GumboElement& e) { return e.tag == tag && explicit_tag(e); });
    if (n) return static_cast<size_t>(n->v.element.original_tag.data - html.data()) + n->v.element.original_tag.length;
  }
  if (const GumboNode* first = find_element(out->document, explicit_tag))
    return static_cast<size_t>(first->v.element.original_tag.data - html.data());
  return std::nullopt;
}

// The edits that rewrite each <meta http-equiv="Content-Security-Policy" content="...">.
void meta_policies(const GumboOutput* out, std::string_view html, const Injection& injection, std::string* nonce,
                   std::vector<Edit>& edits) {
  each_element(out->document, [&](const GumboElement& e) {
    if (e.tag != GUMBO_TAG_META) return;
    const GumboAttribute* equiv = gumbo_get_attribute(&e.attributes, "http-equiv");
    const GumboAttribute* content = gumbo_get_attribute(&e.attributes, "content");
    if (!equiv || !content || lower(equiv->value) != "content-security-policy" || !content->original_value.data ||
        content->original_value.length == 0)
      return;
    std::string value = allow_script(content->value, injection, nonce);
    value = replace_all(replace_all(value, "&", "&amp;"), "\"", "&quot;");
    edits.push_back({{static_cast<size_t>(content->original_value.data - html.data()), content->original_value.length},
                     "\"" + value + "\""});
  });
}

}  // namespace

Injection deterministic_script(int64_t time_ms, uint64_t seed) {
  Injection i;
  i.script = replace_all(replace_all(std::string(kScript), "TIME", std::to_string(time_ms)), "SEED",
                         std::to_string(static_cast<uint32_t>(seed ^ (seed >> 32))));
  i.hash = "'sha256-" + sha256_base64(i.script) + "'";
  return i;
}

bool is_html_document(const web::Response& r) {
  const std::string* type = web::find_header(r.headers, "Content-Type");
  const bool shown = r.status == 200 || r.status == 203 || (r.status == 304 && !r.body.empty());
  return shown && !r.body.empty() && type && lower(*type).rfind("text/html", 0) == 0;
}

std::string allow_script(std::string_view policy, const Injection& injection, std::string* nonce) {
  // The directive that governs <script> elements: script-src-elem, else script-src, else default-src.
  std::vector<std::vector<std::string>> directives;
  size_t governing = std::string::npos;
  int rank = 0;
  for (size_t at = 0; at <= policy.size();) {
    const size_t end = std::min(policy.find(';', at), policy.size());
    directives.push_back(words(policy.substr(at, end - at)));
    const std::vector<std::string>& d = directives.back();
    const std::string name = d.empty() ? "" : lower(d[0]);
    const int r = name == "script-src-elem" ? 3 : name == "script-src" ? 2 : name == "default-src" ? 1 : 0;
    if (r > rank) rank = r, governing = directives.size() - 1;
    at = end + 1;
  }
  std::string out;
  for (size_t i = 0; i < directives.size(); ++i) {
    if (directives[i].empty()) continue;
    std::string d;
    if (i == governing) {
      d = allow_in_directive(directives[i], injection, nonce);
    } else {
      for (const std::string& x : directives[i]) d += (d.empty() ? "" : " ") + x;
    }
    out += (out.empty() ? "" : "; ") + d;
  }
  return out;
}

std::optional<std::string> inject(std::string_view html, const Injection& injection, const std::string& nonce) {
  if (html.size() >= 2 && ((html[0] == '\xFF' && html[1] == '\xFE') || (html[0] == '\xFE' && html[1] == '\xFF')))
    return std::nullopt;  // UTF-16: an ASCII script would be noise in it
  GumboOutput* out = gumbo_parse_with_options(&kGumboDefaultOptions, html.data(), html.size());
  std::optional<size_t> at = insertion_point(out, html);
  std::vector<Edit> edits;
  std::string tag_nonce = nonce;  // a policy's nonce: the headers' first, else a <meta>'s
  if (at) meta_policies(out, html, injection, &tag_nonce, edits);
  gumbo_destroy_output(&kGumboDefaultOptions, out);
  if (!at) return std::nullopt;
  const std::string tag = std::string("<script") + (tag_nonce.empty() ? "" : " nonce=\"" + tag_nonce + "\"") + ">" +
                          injection.script + "</script>";
  edits.push_back({{*at, 0}, tag});
  std::sort(edits.begin(), edits.end(), [](const Edit& a, const Edit& b) { return a.first.first > b.first.first; });
  std::string result(html);
  for (const Edit& e : edits) result.replace(e.first.first, e.first.second, e.second);
  return result;
}

bool inject_into(web::Response& response, const Injection& injection) {
  std::string nonce;
  std::vector<web::Header> headers = response.headers;
  for (web::Header& h : headers)
    if (web::iequals(h.name, "Content-Security-Policy")) h.value = allow_script(h.value, injection, &nonce);
  std::optional<std::string> body = inject(response.body, injection, nonce);
  if (!body) return false;
  response.body = std::move(*body);
  response.headers = std::move(headers);
  return true;
}

}  // namespace tracemod::webserve
