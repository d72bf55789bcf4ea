#include "web/writer.hh"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <filesystem>

#include "util/error.hh"
#include "util/file_descriptor.hh"
#include "web/http_record.pb.h"

namespace tracemod::web {
namespace {

namespace fs = std::filesystem;

constexpr const char* kPrefix = "save.";

void fill(pb::HTTPMessage& m, const RawMessage& raw) {
  m.set_first_line(raw.first_line);
  for (const Header& h : raw.headers) {
    pb::HTTPHeader* out = m.add_header();
    out->set_key(h.name);
    out->set_value(h.value.substr(std::min(h.value.find_first_not_of(' '), h.value.size())));
  }
  m.set_body(raw.body);
}

// The N of save.N, or 0 for any other name.
uint64_t number_of(const std::string& name) {
  if (name.rfind(kPrefix, 0) != 0 || name.size() == 5 || name.size() > 5 + 18) return 0;
  uint64_t n = 0;
  for (size_t i = 5; i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9') return 0;
    n = n * 10 + static_cast<uint64_t>(name[i] - '0');
  }
  return n;
}

void write_whole(int fd, const std::string& data, const std::string& what) {
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw_errno(what, errno);
    done += static_cast<size_t>(n);
  }
}

}  // namespace

std::string serialize(const RawExchange& e) {
  pb::RequestResponse rr;
  rr.set_ip(e.address);
  rr.set_port(e.port);
  rr.set_scheme(e.scheme == Scheme::kHttps ? pb::RequestResponse::HTTPS : pb::RequestResponse::HTTP);
  fill(*rr.mutable_request(), e.request);
  fill(*rr.mutable_response(), e.response);
  rr.set_host(e.host);
  rr.set_protocol(e.protocol);
  std::string out;
  if (!rr.SerializeToString(&out)) throw Error("cannot serialize a record");
  return out;
}

RecordWriter::RecordWriter(std::string dir) : dir_(std::move(dir)) {
  std::error_code ec;
  for (fs::directory_iterator it(dir_, ec), end; !ec && it != end; it.increment(ec))
    last_ = std::max(last_, number_of(it->path().filename().string()));
  if (ec) throw Error(dir_ + ": " + ec.message());
}

std::string RecordWriter::write(const RawExchange& exchange) {
  const std::string data = serialize(exchange);
  std::lock_guard<std::mutex> lock(mutex_);
  char name[32];
  // The number is spent even if the write fails: the file an error names stays missing, not another's.
  std::snprintf(name, sizeof name, "%s%08llu", kPrefix, static_cast<unsigned long long>(++last_));
  const std::string path = dir_ + "/" + name;
  if (const int unnamed = ::open(dir_.c_str(), O_TMPFILE | O_WRONLY | O_CLOEXEC, 0644); unnamed >= 0) {
    const FileDescriptor fd(unnamed);
    write_whole(fd.get(), data, path);
    const std::string proc = "/proc/self/fd/" + std::to_string(fd.get());
    if (linkat(AT_FDCWD, proc.c_str(), AT_FDCWD, path.c_str(), AT_SYMLINK_FOLLOW) < 0) throw_errno(path, errno);
  } else if (errno == EOPNOTSUPP || errno == EISDIR || errno == EINVAL) {
    const std::string tmp = dir_ + "/." + name + ".tmp";
    const int named = ::open(tmp.c_str(), O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0644);
    if (named < 0) throw_errno(tmp, errno);
    FileDescriptor out(named);
    try {
      write_whole(out.get(), data, tmp);
    } catch (const Error&) {
      ::unlink(tmp.c_str());  // a full disk leaves no part of a record behind
      throw;
    }
    out.reset();
    if (std::rename(tmp.c_str(), path.c_str()) < 0) {
      const int err = errno;
      ::unlink(tmp.c_str());
      throw_errno(path, err);
    }
  } else {
    throw_errno(dir_ + ": cannot write a record", errno);
  }
  return path;
}

}  // namespace tracemod::web
