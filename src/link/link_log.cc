#include "link/link_log.hh"

#include <charconv>

#include "link/trace.hh"

namespace tracemod {

LinkLog::LinkLog(const std::string& path, Format format, const std::string& option)
    : path_(path),
      format_(format),
      file_(std::make_shared<RecordFile>(option + " " + path, "log lines", create_for_writing(path))) {}

void LinkLog::header(const std::vector<std::string>& lines, Nanos base) {
  for (const std::string& l : lines) {
    file_->append("# ", 2);
    file_->append(l.data(), l.size());
    put('\n');
    end_line();
  }
  static const char kBase[] = "# base timestamp: ";
  file_->append(kBase, sizeof kBase - 1);
  put_ms(base);
  put('\n');
  end_line();
}

void LinkLog::put_uint(uint64_t v) {
  char text[24];
  const auto r = std::to_chars(text, text + sizeof text, v);
  file_->append(text, static_cast<size_t>(r.ptr - text));
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
  end_line();
}

void LinkLog::arrival(Nanos t, uint32_t bytes) {
  line(t, '+', bytes);
  put('\n');
  end_line();
}

void LinkLog::departure(Nanos t, uint32_t bytes, Nanos enqueued) {
  line(t, '-', bytes);
  put(' ');
  // In whole milliseconds the delay is the difference of the two logged times, as in Mahimahi.
  const Nanos whole = kMillisecond;
  put_ms(format_ == Format::kMahimahi ? (t / whole - enqueued / whole) * whole : t - enqueued);
  put('\n');
  end_line();
}

void LinkLog::drop(Nanos t, uint32_t packets, uint64_t bytes) {
  if (format_ == Format::kMahimahi) return;
  line(t, 'd', packets);
  put(' ');
  put_uint(bytes);
  put('\n');
  end_line();
}

}  // namespace tracemod
