// One side of a connection the recorder relays, with TLS on it or not (proxy.cc, http1_relay.hh).
#pragma once

#include <openssl/ssl.h>

#include <memory>
#include <string>
#include <string_view>

#include "util/file_descriptor.hh"

namespace tracemod::webrecord {

struct SslFree {
  void operator()(SSL* s) const { SSL_free(s); }
};

// One side of a relay: a connected socket, with TLS on it or not. Blocking.
class Conn {
 public:
  explicit Conn(FileDescriptor fd) : fd_(std::move(fd)) {}
  int fd() const { return fd_.get(); }
  void set_ssl(SSL* ssl) { ssl_.reset(ssl); }
  SSL* ssl() const { return ssl_.get(); }

  // Bytes read into OUT (appended); 0 at the end of the stream (or an error).
  size_t read(std::string& out);
  bool write(std::string_view data);
  void shutdown();
  // Closed with a reset, as a refused connection would be answered.
  void reset();

 private:
  FileDescriptor fd_;
  std::unique_ptr<SSL, SslFree> ssl_;
};

}  // namespace tracemod::webrecord
