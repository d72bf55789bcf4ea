#include "web/snapshot.hh"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <unistd.h>

#include <cerrno>
#include <climits>

#include "util/error.hh"
#include "web/snapshot.pb.h"

namespace tracemod::web {
namespace {

namespace io = google::protobuf::io;

void put_headers(const std::vector<Header>& headers, google::protobuf::RepeatedPtrField<snap::Header>& out) {
  for (const Header& h : headers) {
    snap::Header* m = out.Add();
    m->set_name(h.name);
    m->set_value(h.value);
  }
}

std::vector<Header> take_headers(google::protobuf::RepeatedPtrField<snap::Header>& in) {
  std::vector<Header> out;
  out.reserve(static_cast<size_t>(in.size()));
  for (snap::Header& h : in) out.push_back({std::move(*h.mutable_name()), std::move(*h.mutable_value())});
  return out;
}

void fill(snap::Exchange& m, Exchange& e) {
  m.set_https(e.scheme == Scheme::kHttps);
  m.set_host(e.host);
  m.set_address(e.address);
  m.set_port(e.port);
  m.set_protocol(e.protocol);
  m.set_recorded_ms(e.recorded_ms);
  m.set_method(e.request.method);
  m.set_target(e.request.target);
  m.set_version(e.request.version);
  put_headers(e.request.headers, *m.mutable_request_header());
  m.set_request_body(e.request.body);
  m.set_status(e.response.status);
  m.set_reason(e.response.reason);
  put_headers(e.response.headers, *m.mutable_response_header());
  m.set_coding(e.response.coding);
  m.set_body(std::move(e.response.body));
  m.set_decoded(e.response.decoded);
  m.set_source(e.source);
}

Exchange take(snap::Exchange& m) {
  Exchange e;
  e.scheme = m.https() ? Scheme::kHttps : Scheme::kHttp;
  e.host = std::move(*m.mutable_host());
  e.address = std::move(*m.mutable_address());
  e.port = static_cast<uint16_t>(m.port());
  e.protocol = std::move(*m.mutable_protocol());
  e.recorded_ms = m.recorded_ms();
  e.request.method = std::move(*m.mutable_method());
  e.request.target = std::move(*m.mutable_target());
  e.request.version = std::move(*m.mutable_version());
  e.request.headers = take_headers(*m.mutable_request_header());
  e.request.body = std::move(*m.mutable_request_body());
  e.response.status = m.status();
  e.response.reason = std::move(*m.mutable_reason());
  e.response.headers = take_headers(*m.mutable_response_header());
  e.response.coding = std::move(*m.mutable_coding());
  e.response.body = std::move(*m.mutable_body());
  e.response.decoded = m.decoded();
  e.source = std::move(*m.mutable_source());
  return e;
}

void write_message(io::CodedOutputStream& out, const google::protobuf::MessageLite& m) {
  const size_t size = m.ByteSizeLong();
  if (size > INT_MAX) throw Error("snapshot: an exchange of " + std::to_string(size) + " bytes is too large");
  out.WriteVarint32(static_cast<uint32_t>(size));
  m.SerializeWithCachedSizes(&out);
}

// One message from FILE. A coded stream of its own for each: a stream counts every byte it reads against a limit
// of 2 GB, which the bodies of a large recording together may pass; destroyed, it hands back what it read ahead.
bool read_message(io::ZeroCopyInputStream& file, google::protobuf::MessageLite& m) {
  io::CodedInputStream in(&file);
  in.SetTotalBytesLimit(INT_MAX);
  uint32_t size = 0;
  if (!in.ReadVarint32(&size)) return false;
  const auto limit = in.PushLimit(static_cast<int>(size));
  const bool ok = m.ParseFromCodedStream(&in) && in.BytesUntilLimit() == 0;
  in.PopLimit(limit);
  return ok;
}

}  // namespace

void write_snapshot(Recording& recording, int fd) {
  io::FileOutputStream file(fd);
  {
    io::CodedOutputStream out(&file);
    snap::Head head;
    head.set_path(recording.path);
    head.set_exchanges(recording.exchanges.size());
    write_message(out, head);
    snap::Exchange m;
    for (Exchange& e : recording.exchanges) {
      m.Clear();
      fill(m, e);
      write_message(out, m);
    }
  }
  if (!file.Flush()) throw_errno("write the recording's snapshot", file.GetErrno());
}

Recording read_snapshot(int fd) {
  if (lseek(fd, 0, SEEK_SET) < 0) throw_errno("read the recording's snapshot", errno);
  io::FileInputStream file(fd);
  snap::Head head;
  Recording recording;
  if (!read_message(file, head)) throw Error("the recording's snapshot has no head");
  recording.path = head.path();
  recording.exchanges.reserve(head.exchanges());
  snap::Exchange m;
  for (uint64_t i = 0; i < head.exchanges(); ++i) {
    if (!read_message(file, m))
      throw Error("the recording's snapshot is cut short at exchange " + std::to_string(i + 1));
    recording.exchanges.push_back(take(m));
  }
  return recording;
}

}  // namespace tracemod::web
