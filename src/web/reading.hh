// What the recording readers share (recording.cc, mahimahi.cc, har.cc): one reader per format, and the few
// rules every format applies alike. Private to src/web.
#pragma once

#include <string>
#include <vector>

#include "web/recording.hh"

namespace tracemod::web {

// A tracemod or Mahimahi recording directory; a HAR file. Each fills RECORDING (its path set by the caller) and
// throws UsageError naming the file (and entry) on what it cannot read.
void read_directory(Recording& recording);
void read_har(Recording& recording);

// The name in a Host header or a URL's authority: port and IPv6 brackets removed, in lower case (names are
// case-insensitive, and one spelling makes one origin name and one matcher key).
std::string host_name(const std::string& authority);

// TARGET in origin form: an absolute-form target ("http://a.example/x?y") reduced to "/x?y"; others as they are.
std::string origin_form(const std::string& target);

}  // namespace tracemod::web
