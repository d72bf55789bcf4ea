#include "record/control.hh"

#include <google/protobuf/io/coded_stream.h>
#include <poll.h>
#include <sys/socket.h>

#include <cerrno>

#include "util/delimited.hh"
#include "util/error.hh"

namespace tracemod::record {
namespace {
constexpr size_t kMaxMessage = 16 << 20;
constexpr size_t kMaxQueued = 64 << 20;  // the peer stopped reading long ago
}  // namespace

void ControlStream::send(const Control& message) {
  append_delimited(message, out_);
  if (out_.size() > kMaxQueued) throw Error("the feedback peer does not read: giving up");
  flush();
}

bool ControlStream::flush() {
  while (!out_.empty()) {
    const ssize_t n = ::send(fd_.get(), out_.data(), out_.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return false;
    if (n < 0 && (errno == EPIPE || errno == ECONNRESET)) {
      out_.clear();  // the peer is gone; reading will say so
      return true;
    }
    if (n < 0) throw_errno("send on the feedback connection", errno);
    out_.erase(0, static_cast<size_t>(n));
  }
  return true;
}

bool ControlStream::read_some() {
  char buf[65536];
  for (;;) {
    const ssize_t n = ::recv(fd_.get(), buf, sizeof buf, MSG_DONTWAIT);
    if (n == 0) return false;
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return true;
    if (n < 0 && errno == ECONNRESET) return false;
    if (n < 0) throw_errno("read the feedback connection", errno);
    in_.append(buf, static_cast<size_t>(n));
  }
}

bool ControlStream::next(Control* message) {
  const auto* data = reinterpret_cast<const uint8_t*>(in_.data()) + in_pos_;
  const size_t avail = in_.size() - in_pos_;
  google::protobuf::io::CodedInputStream in(data, static_cast<int>(avail));
  uint32_t size = 0;
  if (!in.ReadVarint32(&size)) return false;  // not all of the length yet
  if (size > kMaxMessage) throw Error("the feedback peer sent a message of " + std::to_string(size) + " bytes");
  const size_t header = static_cast<size_t>(in.CurrentPosition());
  if (avail < header + size) return false;
  if (!message->ParseFromArray(data + header, static_cast<int>(size)))
    throw Error("the feedback peer sent something that is not tm-record's protocol");
  in_pos_ += header + size;
  if (in_pos_ > 65536 && in_pos_ * 2 > in_.size()) in_.erase(0, in_pos_), in_pos_ = 0;
  return true;
}

void ControlStream::drain(int timeout_ms) {
  const Nanos deadline = monotonic_now() + static_cast<Nanos>(timeout_ms) * kMillisecond;
  while (!flush()) {
    pollfd p{fd_.get(), POLLOUT, 0};
    const Nanos left = deadline - monotonic_now();
    if (left <= 0 || poll(&p, 1, static_cast<int>(left / kMillisecond) + 1) <= 0) return;
  }
}

void ControlStream::close_gracefully(int timeout_ms) {
  drain(timeout_ms);
  shutdown(fd_.get(), SHUT_WR);
  const Nanos deadline = monotonic_now() + static_cast<Nanos>(timeout_ms) * kMillisecond;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::recv(fd_.get(), buf, sizeof buf, MSG_DONTWAIT);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) return;
    if (n > 0) continue;
    pollfd p{fd_.get(), POLLIN, 0};
    const Nanos left = deadline - monotonic_now();
    if (left <= 0 || poll(&p, 1, static_cast<int>(left / kMillisecond) + 1) <= 0) return;
  }
}

Control ControlStream::receive(int timeout_ms, const std::string& what) {
  const Nanos deadline = monotonic_now() + static_cast<Nanos>(timeout_ms) * kMillisecond;
  Control message;
  for (bool open = true;;) {
    if (next(&message)) return message;  // also what came just before the end of the stream
    if (!open) throw Error(what + ": the connection was closed");
    pollfd p{fd_.get(), POLLIN, 0};
    const Nanos left = deadline - monotonic_now();
    if (left <= 0 || poll(&p, 1, static_cast<int>(left / kMillisecond) + 1) == 0)
      throw Error(what + ": no answer within " + std::to_string(timeout_ms / 1000) + " s");
    open = read_some();
  }
}

}  // namespace tracemod::record
