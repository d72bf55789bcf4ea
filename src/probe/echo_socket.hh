// The echoes tm-probe sends: ICMP echo through a ping socket (SOCK_DGRAM, allowed by net.ipv4.ping_group_range)
// or a raw socket (CAP_NET_RAW), or UDP to a `tm-probe server`; IPv4 or IPv6. Every echo carries tm-probe's
// 16-byte payload header (magic, session, sequence number), padded to the IP size asked for, and its reply is
// the same size: the link carries S bytes each way. Times come from the kernel (SO_TIMESTAMPING, software):
// when each reply arrived, and when each echo left through the device where the kernel says so.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "util/clock.hh"
#include "util/file_descriptor.hh"
#include "util/net.hh"

namespace tracemod::probe {

enum class Method { kAuto, kPing, kRaw, kUdp };
// "auto", "ping", "raw", "udp" as --method reads them; throws UsageError naming OPTION.
Method parse_method(const std::string& option, const std::string& text);

constexpr uint32_t kPayloadHeader = 16;

class EchoSocket {
 public:
  struct Reply {
    uint64_t seq;
    Nanos at;  // CLOCK_MONOTONIC
  };
  struct Sent {
    uint64_t seq;
    Nanos at;     // CLOCK_MONOTONIC
    bool device;  // when it left through the device; false: when it entered the queueing layer
  };

  // A socket of METHOD toward TARGET (kAuto: a ping socket if the kernel allows one, else a raw socket).
  // Throws Error with what to do when ICMP is not allowed.
  EchoSocket(Method method, const SocketAddress& target);
  const char* method_name() const;  // "icmp-ping-socket", "icmp-raw-socket", "udp"
  int fd() const { return fd_.get(); }
  bool ipv6() const { return v6_; }
  // IP bytes of the smallest and largest echo this socket can send.
  uint32_t min_size() const { return header_bytes() + kPayloadHeader; }
  static constexpr uint32_t kMaxSize = 65000;
  // Sends echo SEQ of SIZE IP bytes; returns CLOCK_MONOTONIC just before it was handed to the kernel.
  Nanos send(uint64_t seq, uint32_t size);
  // Reads all that is waiting: transmit time stamps into SENT, then the replies that are ours into REPLIES.
  void receive(std::vector<Sent>& sent, std::vector<Reply>& replies);

 private:
  // How a transmit time stamp names its send: by the key given with it (SCM_TS_OPT_ID, Linux 6.13), by the
  // kernel's count of sends (older kernels; kStopped once a failed send may have taken a number, which would
  // shift every later one), or not at all (no SO_TIMESTAMPING).
  enum class Keys { kGiven, kCounted, kStopped, kNone };
  uint32_t header_bytes() const { return (v6_ ? 40 : 20) + 8; }
  void open(Method method);
  void timestamps();
  ssize_t send_keyed(uint8_t* data, size_t length, uint64_t seq);
  bool seq_of_key(uint32_t key, uint64_t& seq) const;
  void read_timestamps(std::vector<Sent>& sent, Nanos offset);
  bool ours(const uint8_t* data, size_t n, uint64_t& seq) const;

  SocketAddress target_;
  bool v6_;
  Method method_ = Method::kAuto;
  FileDescriptor fd_;
  uint32_t session_;
  uint16_t icmp_id_;
  Keys keys_ = Keys::kGiven;
  uint64_t last_seq_ = 0;            // the sequence number of the latest send tried (kGiven)
  std::vector<uint64_t> sent_seqs_;  // kCounted: the sequence number of each send the kernel took, by its count
  std::vector<uint8_t> buf_;
};

// `tm-probe server`: answers tm-probe's UDP echoes on PORT (of BIND, all addresses by default) until SIGINT,
// SIGTERM or SIGHUP. Prints one line when it listens (unless QUIET).
int run_echo_server(const std::string& bind, uint16_t port, bool quiet);

}  // namespace tracemod::probe
