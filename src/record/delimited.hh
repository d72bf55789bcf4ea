// Length-delimited protobuf: a varint byte count, then the message. Raw records and the feedback
// connection both use it.
#pragma once

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/message_lite.h>

#include <string>

namespace tracemod::record {

inline void append_delimited(const google::protobuf::MessageLite& message, std::string& out) {
  const size_t size = message.ByteSizeLong();
  uint8_t prefix[10];
  uint8_t* end = google::protobuf::io::CodedOutputStream::WriteVarint32ToArray(static_cast<uint32_t>(size), prefix);
  out.append(reinterpret_cast<char*>(prefix), static_cast<size_t>(end - prefix));
  const size_t at = out.size();
  out.resize(at + size);
  message.SerializeWithCachedSizesToArray(reinterpret_cast<uint8_t*>(&out[at]));
}

}  // namespace tracemod::record
