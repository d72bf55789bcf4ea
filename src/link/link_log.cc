#include "link/link_log.hh"

#include <cerrno>
#include <charconv>
#include <cstring>
#include <iostream>

#include "link/trace.hh"
#include "util/error.hh"

namespace tracemod {

LinkLog::LinkLog(const std::string& path, Format format)
    : path_(path), format_(format), f_(std::fopen(path.c_str(), "we")), buffer_(1 << 20) {
  if (!f_) throw UsageError(path + ": cannot open for writing: " + std::strerror(errno));
  std::setvbuf(f_, buffer_.data(), _IOFBF, buffer_.size());
}

LinkLog::~LinkLog() {
  // A full disk must not pass unnoticed: the log is the experiment's record.
  const bool failed = std::ferror(f_) != 0;
  if (std::fclose(f_) != 0 || failed) std::cerr << path_ << ": write error: the link log is incomplete\n";
}

void LinkLog::header(const std::vector<std::string>& lines, Nanos base) {
  for (const std::string& l : lines) std::fprintf(f_, "# %s\n", l.c_str());
  std::fputs("# base timestamp: ", f_);
  put_ms(base);
  put('\n');
}

void LinkLog::put_uint(uint64_t v) {
  char text[24];
  const auto r = std::to_chars(text, text + sizeof text, v);
  std::fwrite(text, 1, static_cast<size_t>(r.ptr - text), f_);
}

// Milliseconds with three decimals, e.g. 1234.567, or whole ones as Mahimahi writes them.
void LinkLog::put_ms(Nanos t) {
  const uint64_t us = static_cast<uint64_t>(t < 0 ? 0 : t) / 1000;
  put_uint(us / 1000);
  if (format_ == Format::kMahimahi) return;
  const unsigned frac = static_cast<unsigned>(us % 1000);
  put('.');
  put(static_cast<char>('0' + frac / 100));
  put(static_cast<char>('0' + frac / 10 % 10));
  put(static_cast<char>('0' + frac % 10));
}

void LinkLog::line(Nanos t, char kind, uint64_t a) {
  put_ms(t);
  put(' ');
  put(kind);
  put(' ');
  put_uint(a);
}

void LinkLog::opportunity(Nanos t) {
  line(t, '#', kOpportunityBytes);
  put('\n');
}

void LinkLog::arrival(Nanos t, uint32_t bytes) {
  line(t, '+', bytes);
  put('\n');
}

void LinkLog::departure(Nanos t, uint32_t bytes, Nanos enqueued) {
  line(t, '-', bytes);
  put(' ');
  // In whole milliseconds the delay is the difference of the two logged times, as in Mahimahi.
  const Nanos whole = kMillisecond;
  put_ms(format_ == Format::kMahimahi ? (t / whole - enqueued / whole) * whole : t - enqueued);
  put('\n');
}

void LinkLog::drop(Nanos t, uint32_t packets, uint64_t bytes) {
  if (format_ == Format::kMahimahi) return;
  line(t, 'd', packets);
  put(' ');
  put_uint(bytes);
  put('\n');
}

}  // namespace tracemod
