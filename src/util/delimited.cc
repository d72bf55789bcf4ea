#include "util/delimited.hh"

#include <cerrno>
#include <utility>
#include <vector>

namespace tracemod {
namespace {
constexpr size_t kBufferBytes = 64 * 1024;
}  // namespace

bool has_unknown_fields(const google::protobuf::Message& message) {
  const google::protobuf::Reflection* r = message.GetReflection();
  if (!r->GetUnknownFields(message).empty()) return true;
  std::vector<const google::protobuf::FieldDescriptor*> fields;
  r->ListFields(message, &fields);
  for (const google::protobuf::FieldDescriptor* f : fields) {
    if (f->cpp_type() != google::protobuf::FieldDescriptor::CPPTYPE_MESSAGE) continue;
    if (!f->is_repeated()) {
      if (has_unknown_fields(r->GetMessage(message, f))) return true;
      continue;
    }
    for (int i = 0; i < r->FieldSize(message, f); ++i)
      if (has_unknown_fields(r->GetRepeatedMessage(message, f, i))) return true;
  }
  return false;
}

bool check_raw_header(const std::string& path, const google::protobuf::Message& header, const std::string& named,
                      uint32_t version, const std::string& kind) {
  if (!named.empty() && named != kind)
    throw UsageError(path + ": not a " + kind + " (its header says it is a " + quote_text(named) + ")");
  if (named.empty() && has_unknown_fields(header))
    throw UsageError(path + ": not a " + kind + " (its header holds fields unknown to a " + kind + ")");
  if (version != 1)
    throw UsageError(path + ": format_version " + std::to_string(version) + " of a " + kind +
                     ": only version 1 is known");
  return named.empty();
}

DelimitedWriter::DelimitedWriter(const std::string& path) : path_(path) {
  file_ = std::fopen(path.c_str(), "we");
  if (!file_) throw_errno("create " + path, errno);
}

DelimitedWriter::~DelimitedWriter() {
  if (file_) std::fclose(file_);
}

void DelimitedWriter::write(const google::protobuf::MessageLite& entry) {
  append_delimited(entry, buf_);
  if (buf_.size() >= kBufferBytes) flush();
}

void DelimitedWriter::flush() {
  if (!file_ || buf_.empty()) return;
  if (std::fwrite(buf_.data(), 1, buf_.size(), file_) != buf_.size() || std::fflush(file_) != 0)
    throw_errno("write " + path_, errno);
  buf_.clear();
}

void DelimitedWriter::close() {
  if (!file_) return;
  flush();
  FILE* f = std::exchange(file_, nullptr);
  if (std::fclose(f) != 0) throw_errno("close " + path_, errno);
}

}  // namespace tracemod
