#include "webserve/coding.hh"

#include <brotli/decode.h>
#include <brotli/encode.h>
#include <zlib.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>

namespace tracemod::webserve {
namespace {

constexpr int kZlibLevel = 6, kBrotliQuality = 5;

bool is(std::string_view coding, std::string_view name) {
  return coding == name || (name == "gzip" && coding == "x-gzip");
}

// zlib's window bits for gzip (16 + 15) and for deflate (zlib's own wrapper, 15, as RFC 9110 means it).
int window_bits(std::string_view coding) {
  return is(coding, "gzip") ? 31 : 15;
}

std::optional<std::string> zlib_encode(std::string_view coding, std::string_view body) {
  z_stream z{};
  if (deflateInit2(&z, kZlibLevel, Z_DEFLATED, window_bits(coding), 8, Z_DEFAULT_STRATEGY) != Z_OK) return {};
  std::string out(deflateBound(&z, body.size()), '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(body.data()));
  z.avail_in = static_cast<uInt>(body.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  const int rc = deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  if (rc != Z_STREAM_END) return {};
  return out;
}

std::optional<std::string> zlib_decode(std::string_view coding, std::string_view body, size_t limit) {
  z_stream z{};
  // gzip: 32 + 15 reads gzip or zlib alike; deflate: a zlib stream, or raw deflate as some servers send it.
  const bool gzip = is(coding, "gzip");
  const auto b0 = body.empty() ? 0u : static_cast<unsigned char>(body[0]);
  const auto b1 = body.size() < 2 ? 0u : static_cast<unsigned char>(body[1]);
  const bool zlib_header = (b0 & 0x0f) == 8 && ((b0 << 8) | b1) % 31 == 0;
  const bool raw = !gzip && !zlib_header;
  if (inflateInit2(&z, gzip ? 47 : raw ? -15 : 15) != Z_OK) return {};
  std::string out;
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(body.data()));
  z.avail_in = static_cast<uInt>(body.size());
  int rc = Z_OK;
  while (rc == Z_OK) {
    char buf[65536];
    z.next_out = reinterpret_cast<Bytef*>(buf);
    z.avail_out = sizeof buf;
    rc = inflate(&z, Z_NO_FLUSH);
    out.append(buf, sizeof buf - z.avail_out);
    if (out.size() > limit) rc = Z_MEM_ERROR;
    if (rc == Z_BUF_ERROR && z.avail_in == 0) break;  // input ended before the stream: cut short
  }
  inflateEnd(&z);
  if (rc != Z_STREAM_END) return {};
  return out;
}

std::optional<std::string> brotli_encode(std::string_view body) {
  size_t size = BrotliEncoderMaxCompressedSize(body.size());
  if (size == 0) size = body.size() + 1024;
  std::string out(size, '\0');
  if (!BrotliEncoderCompress(kBrotliQuality, BROTLI_DEFAULT_WINDOW, BROTLI_MODE_GENERIC, body.size(),
                             reinterpret_cast<const uint8_t*>(body.data()), &size,
                             reinterpret_cast<uint8_t*>(out.data())))
    return {};
  out.resize(size);
  return out;
}

std::optional<std::string> brotli_decode(std::string_view body, size_t limit) {
  BrotliDecoderState* s = BrotliDecoderCreateInstance(nullptr, nullptr, nullptr);
  if (!s) return {};
  std::string out;
  size_t in_left = body.size();
  auto* in = reinterpret_cast<const uint8_t*>(body.data());
  BrotliDecoderResult rc = BROTLI_DECODER_RESULT_NEEDS_MORE_OUTPUT;
  while (rc == BROTLI_DECODER_RESULT_NEEDS_MORE_OUTPUT && out.size() <= limit) {
    uint8_t buf[65536];
    uint8_t* next = buf;
    size_t out_left = sizeof buf;
    rc = BrotliDecoderDecompressStream(s, &in_left, &in, &out_left, &next, nullptr);
    out.append(reinterpret_cast<char*>(buf), sizeof buf - out_left);
  }
  BrotliDecoderDestroyInstance(s);
  if (rc != BROTLI_DECODER_RESULT_SUCCESS || out.size() > limit) return {};
  return out;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool iequal(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

// The q-value of one Accept-Encoding element's parameters (";q=0.5"): 1 if none is given.
double q_value(std::string_view params) {
  for (size_t at = 0; at < params.size();) {
    const size_t end = std::min(params.find(';', at), params.size());
    const std::string_view p = trim(params.substr(at, end - at));
    if (p.size() > 2 && (p[0] == 'q' || p[0] == 'Q') && p[1] == '=') return std::atof(std::string(p.substr(2)).c_str());
    at = end + 1;
  }
  return 1.0;
}

}  // namespace

bool codable(std::string_view coding) {
  return is(coding, "gzip") || coding == "deflate" || coding == "br";
}

std::optional<std::string> encode(std::string_view coding, std::string_view body) {
  if (coding == "br") return brotli_encode(body);
  if (codable(coding)) return zlib_encode(coding, body);
  return {};
}

std::optional<std::string> decode(std::string_view coding, std::string_view body, size_t limit) {
  if (coding == "br") return brotli_decode(body, limit);
  if (codable(coding)) return zlib_decode(coding, body, limit);
  return {};
}

bool accepts(const std::string* value, std::string_view coding) {
  if (coding.empty()) return true;
  if (!value) return false;
  double named = -1, star = -1;
  std::string_view rest = *value;
  while (!rest.empty()) {
    const size_t comma = std::min(rest.find(','), rest.size());
    const std::string_view element = rest.substr(0, comma);
    rest.remove_prefix(std::min(comma + 1, rest.size()));
    const size_t semi = std::min(element.find(';'), element.size());
    const std::string_view name = trim(element.substr(0, semi));
    const double q = q_value(element.substr(semi));
    if (iequal(name, coding) || (coding == "gzip" && iequal(name, "x-gzip"))) named = std::max(named, q);
    if (name == "*") star = q;
  }
  return named >= 0 ? named > 0 : star > 0;
}

}  // namespace tracemod::webserve
