#include "probe/echo_socket.hh"

#include <linux/errqueue.h>
#include <linux/net_tstamp.h>
#include <netinet/icmp6.h>
#include <netinet/in.h>
#include <netinet/ip_icmp.h>
#include <poll.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iostream>

#include "util/error.hh"
#include "util/signals.hh"

namespace tracemod::probe {
namespace {

// The control message that gives a send the key of its transmit time stamps (Linux 6.13; its value in
// <asm-generic/socket.h>, which x86 and arm use, and which older C library headers lack).
#ifndef SCM_TS_OPT_ID
#define SCM_TS_OPT_ID 81
#endif

constexpr uint8_t kMagic[4] = {'T', 'M', 'P', 'R'};
constexpr size_t kControl = 512;
constexpr int kIcmpFilter = 1;  // ICMP_FILTER of <linux/icmp.h>, which clashes with <netinet/ip_icmp.h>

uint32_t random32() {
  uint32_t v = 0;
  if (getrandom(&v, sizeof v, 0) != sizeof v) v = static_cast<uint32_t>(monotonic_now());
  return v;
}

void put32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (24 - 8 * i));
}
uint32_t get32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) << 24 | static_cast<uint32_t>(p[1]) << 16 | static_cast<uint32_t>(p[2]) << 8 |
         p[3];
}

// RFC 1071, for ICMPv4 through a raw socket (the kernel sums ping sockets' and ICMPv6's itself).
uint16_t checksum(const uint8_t* p, size_t n) {
  uint32_t sum = 0;
  for (size_t i = 0; i + 1 < n; i += 2) sum += static_cast<uint32_t>(p[i] << 8 | p[i + 1]);
  if (n % 2) sum += static_cast<uint32_t>(p[n - 1] << 8);
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  return static_cast<uint16_t>(~sum);
}

// The kernel time stamp in a received message's control data, moved onto CLOCK_MONOTONIC; FALLBACK if none.
Nanos stamp_of(msghdr& h, Nanos offset, Nanos fallback) {
  for (cmsghdr* c = CMSG_FIRSTHDR(&h); c; c = CMSG_NXTHDR(&h, c)) {
    if (c->cmsg_level != SOL_SOCKET) continue;
    timespec ts{};
    if (c->cmsg_type == SCM_TIMESTAMPING)
      std::memcpy(&ts, CMSG_DATA(c), sizeof ts);  // ts[0]: the software time stamp
    else if (c->cmsg_type == SCM_TIMESTAMPNS)
      std::memcpy(&ts, CMSG_DATA(c), sizeof ts);
    else
      continue;
    if (ts.tv_sec == 0 && ts.tv_nsec == 0) continue;
    return static_cast<Nanos>(ts.tv_sec) * 1000000000 + ts.tv_nsec - offset;
  }
  return fallback;
}

std::string ping_group_range() {
  std::ifstream in("/proc/sys/net/ipv4/ping_group_range");
  std::string low, high;
  in >> low >> high;
  return in ? "'" + low + " " + high + "'" : "unreadable";
}

}  // namespace

Method parse_method(const std::string& option, const std::string& text) {
  if (text == "auto") return Method::kAuto;
  if (text == "ping") return Method::kPing;
  if (text == "raw") return Method::kRaw;
  if (text == "udp") return Method::kUdp;
  throw UsageError("invalid " + option + " '" + text + "': expected auto, ping, raw or udp");
}

EchoSocket::EchoSocket(Method method, const SocketAddress& target)
    : target_(target), v6_(target.family() == AF_INET6), session_(random32()), icmp_id_(0), buf_(70000) {
  icmp_id_ = static_cast<uint16_t>(session_);
  open(method);
  if (method_ != Method::kUdp) {  // the port of an ICMP destination must be 0 (a raw IPv6 socket insists)
    if (v6_)
      reinterpret_cast<sockaddr_in6*>(&target_.storage)->sin6_port = 0;
    else
      reinterpret_cast<sockaddr_in*>(&target_.storage)->sin_port = 0;
  }
  const int size = 4 << 20;
  setsockopt(fd(), SOL_SOCKET, SO_RCVBUF, &size, sizeof size);  // best effort: the kernel caps it
  // An echo must cross as one IP packet of the size asked: never fragment, fail instead.
  const int pmtu = v6_ ? static_cast<int>(IPV6_PMTUDISC_PROBE) : static_cast<int>(IP_PMTUDISC_PROBE);
  setsockopt(fd(), v6_ ? IPPROTO_IPV6 : IPPROTO_IP, v6_ ? IPV6_MTU_DISCOVER : IP_MTU_DISCOVER, &pmtu, sizeof pmtu);
  timestamps();
}

void EchoSocket::open(Method method) {
  const int family = v6_ ? AF_INET6 : AF_INET;
  const int icmp = v6_ ? static_cast<int>(IPPROTO_ICMPV6) : static_cast<int>(IPPROTO_ICMP);
  auto make = [&](int type, int protocol) { return socket(family, type | SOCK_NONBLOCK | SOCK_CLOEXEC, protocol); };
  int fd = -1;
  if (method == Method::kUdp) {
    fd = static_cast<int>(check_syscall("create the UDP echo socket", make(SOCK_DGRAM, 0)));
  } else {
    int ping_error = 0;
    if (method != Method::kRaw) {
      fd = make(SOCK_DGRAM, icmp);
      ping_error = errno;
      method_ = Method::kPing;
    }
    if (fd < 0 && method != Method::kPing) {
      fd = make(SOCK_RAW, icmp);
      method_ = Method::kRaw;
    }
    if (fd < 0) {
      const std::string gid = std::to_string(getegid());
      if (method == Method::kRaw || (method == Method::kAuto && errno != EPERM && errno != EACCES))
        throw_errno("create a raw ICMP socket", errno);
      throw Error(std::string("ICMP echo needs a ping socket, which net.ipv4.ping_group_range ") + ping_group_range() +
                  " refuses to group " + gid + " (" + std::strerror(ping_error) + ")" +
                  (method == Method::kAuto ? ", or CAP_NET_RAW for a raw socket" : "") +
                  ": run tm-probe as root or inside a tracemod shell, or use --method udp with `tm-probe server` "
                  "on the target");
    }
  }
  fd_ = FileDescriptor(fd);
  if (method == Method::kUdp) method_ = Method::kUdp;
  if (method_ != Method::kRaw) return;
  if (v6_) {  // a raw ICMPv6 socket sees every ICMPv6 message: let only echo replies through
    icmp6_filter filter;
    ICMP6_FILTER_SETBLOCKALL(&filter);
    ICMP6_FILTER_SETPASS(ICMP6_ECHO_REPLY, &filter);
    setsockopt(fd, IPPROTO_ICMPV6, ICMP6_FILTER, &filter, sizeof filter);
  } else {
    const uint32_t blocked = ~(1u << ICMP_ECHOREPLY);
    setsockopt(fd, SOL_RAW, kIcmpFilter, &blocked, sizeof blocked);
  }
}

// Software time stamps from the kernel: on receive, and on transmit (when the device sends, else when the packet
// enters the queueing layer), each keyed by the socket's count of sends.
void EchoSocket::timestamps() {
  const int flags = SOF_TIMESTAMPING_RX_SOFTWARE | SOF_TIMESTAMPING_TX_SOFTWARE | SOF_TIMESTAMPING_TX_SCHED |
                    SOF_TIMESTAMPING_SOFTWARE | SOF_TIMESTAMPING_OPT_ID | SOF_TIMESTAMPING_OPT_TSONLY;
  if (setsockopt(fd(), SOL_SOCKET, SO_TIMESTAMPING, &flags, sizeof flags) == 0) return;
  keys_ = Keys::kNone;
  const int one = 1;  // an older kernel: receive time stamps only; the send time is taken before sendto
  check_syscall("enable receive time stamps", setsockopt(fd(), SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof one));
}

const char* EchoSocket::method_name() const {
  return method_ == Method::kUdp ? "udp" : method_ == Method::kPing ? "icmp-ping-socket" : "icmp-raw-socket";
}

Nanos EchoSocket::send(uint64_t seq, uint32_t size) {
  const bool icmp = method_ != Method::kUdp;
  const size_t payload = size - header_bytes(), length = payload + (icmp ? 8 : 0);
  uint8_t* p = buf_.data();
  std::memset(p, 0, length);
  uint8_t* body = p + (icmp ? 8 : 0);
  std::memcpy(body, kMagic, 4);
  put32(body + 4, session_);
  put32(body + 8, static_cast<uint32_t>(seq >> 32));
  put32(body + 12, static_cast<uint32_t>(seq));
  if (icmp) {
    p[0] = v6_ ? ICMP6_ECHO_REQUEST : ICMP_ECHO;
    p[4] = static_cast<uint8_t>(icmp_id_ >> 8), p[5] = static_cast<uint8_t>(icmp_id_);
    p[6] = static_cast<uint8_t>(seq >> 8), p[7] = static_cast<uint8_t>(seq);
    if (method_ == Method::kRaw && !v6_) {
      const uint16_t sum = checksum(p, length);
      p[2] = static_cast<uint8_t>(sum >> 8), p[3] = static_cast<uint8_t>(sum);
    }
  }
  const Nanos before = monotonic_now();
  last_seq_ = seq;
  if (send_keyed(p, length, seq) == static_cast<ssize_t>(length)) {
    if (keys_ == Keys::kCounted) sent_seqs_.push_back(seq);
    return before;
  }
  // The kernel may have counted a send that failed (a queueing layer that dropped it, a full buffer): counted
  // keys would name the wrong echoes from here on.
  if (keys_ == Keys::kCounted) keys_ = Keys::kStopped;
  if (errno == EMSGSIZE) {
    throw Error("send an echo of " + std::to_string(size) + " bytes to " + target_.text() +
                ": larger than the path allows (" + std::strerror(errno) + "): use a smaller --large");
  } else if (errno != EAGAIN && errno != ENOBUFS && errno != ECONNREFUSED && errno != EHOSTUNREACH &&
             errno != ENETUNREACH) {
    throw_errno("send an echo to " + target_.text(), errno);
  }  // otherwise the echo is lost before it left: it will go unanswered, as on a lossy link
  return before;
}

// Sends with SEQ's low 32 bits as the key of its transmit time stamps, so that each stamp names its own echo
// whatever happened to the sends before. A kernel that does not know the control message refuses it (EINVAL)
// before it sends anything: then the kernel's count of sends is the key.
ssize_t EchoSocket::send_keyed(uint8_t* data, size_t length, uint64_t seq) {
  iovec iov{data, length};
  msghdr h{};
  h.msg_name = const_cast<sockaddr*>(target_.get());
  h.msg_namelen = target_.length;
  h.msg_iov = &iov;
  h.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(uint32_t))] = {};
  if (keys_ == Keys::kGiven) {
    h.msg_control = control;
    h.msg_controllen = sizeof control;
    cmsghdr* c = CMSG_FIRSTHDR(&h);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_TS_OPT_ID;
    c->cmsg_len = CMSG_LEN(sizeof(uint32_t));
    const uint32_t key = static_cast<uint32_t>(seq);
    std::memcpy(CMSG_DATA(c), &key, sizeof key);
  }
  const ssize_t n = sendmsg(fd(), &h, 0);
  if (n >= 0 || errno != EINVAL || keys_ != Keys::kGiven) return n;
  keys_ = Keys::kCounted;
  return send_keyed(data, length, seq);
}

// The echo a transmit time stamp's KEY names, if its stamps can be trusted.
bool EchoSocket::seq_of_key(uint32_t key, uint64_t& seq) const {
  if (keys_ == Keys::kGiven) {  // the latest echo sent with these low 32 bits
    seq = (last_seq_ & ~uint64_t{0xffffffff}) | key;
    if (seq > last_seq_) {
      if (seq < (uint64_t{1} << 32)) return false;
      seq -= uint64_t{1} << 32;
    }
    return true;
  }
  if (key >= sent_seqs_.size()) return false;  // kStopped keeps the keys counted before the failed send
  seq = sent_seqs_[key];
  return true;
}

void EchoSocket::read_timestamps(std::vector<Sent>& sent, Nanos offset) {
  for (;;) {
    std::array<char, kControl> control;
    msghdr h{};
    h.msg_control = control.data();
    h.msg_controllen = control.size();
    if (recvmsg(fd(), &h, MSG_ERRQUEUE | MSG_DONTWAIT) < 0) return;  // EAGAIN: none left
    const sock_extended_err* e = nullptr;
    for (cmsghdr* c = CMSG_FIRSTHDR(&h); c; c = CMSG_NXTHDR(&h, c))
      if ((c->cmsg_level == SOL_IP && c->cmsg_type == IP_RECVERR) ||
          (c->cmsg_level == SOL_IPV6 && c->cmsg_type == IPV6_RECVERR))
        e = reinterpret_cast<const sock_extended_err*>(CMSG_DATA(c));
    uint64_t seq = 0;
    if (!e || e->ee_origin != SO_EE_ORIGIN_TIMESTAMPING || !seq_of_key(e->ee_data, seq)) continue;
    const Nanos at = stamp_of(h, offset, 0);
    if (at) sent.push_back({seq, at, e->ee_info == SCM_TSTAMP_SND});
  }
}

void EchoSocket::receive(std::vector<Sent>& sent, std::vector<Reply>& replies) {
  Nanos now;
  const Nanos offset = realtime_offset(now);
  read_timestamps(sent, offset);
  for (;;) {
    std::array<char, kControl> control;
    iovec iov{buf_.data(), buf_.size()};
    msghdr h{};
    h.msg_iov = &iov;
    h.msg_iovlen = 1;
    h.msg_control = control.data();
    h.msg_controllen = control.size();
    const ssize_t n = recvmsg(fd(), &h, MSG_DONTWAIT);
    if (n < 0) return;
    uint64_t seq;
    if (ours(buf_.data(), static_cast<size_t>(n), seq)) replies.push_back({seq, stamp_of(h, offset, now)});
  }
}

bool EchoSocket::ours(const uint8_t* data, size_t n, uint64_t& seq) const {
  if (method_ == Method::kRaw && !v6_) {  // a raw IPv4 socket reads the IP header too
    const size_t ihl = n ? (data[0] & 0x0fu) * 4u : 0;
    if (ihl < 20 || n < ihl) return false;
    data += ihl, n -= ihl;
  }
  if (method_ != Method::kUdp) {
    if (n < 8 || data[0] != (v6_ ? ICMP6_ECHO_REPLY : ICMP_ECHOREPLY)) return false;
    if (method_ == Method::kRaw && (data[4] << 8 | data[5]) != icmp_id_) return false;
    data += 8, n -= 8;
  }
  if (n < kPayloadHeader || std::memcmp(data, kMagic, 4) != 0 || get32(data + 4) != session_) return false;
  seq = static_cast<uint64_t>(get32(data + 8)) << 32 | get32(data + 12);
  return true;
}

namespace {

// The server's socket: all addresses, IPv6 and IPv4 on one socket, or IPv4 alone where the kernel has no IPv6.
FileDescriptor server_socket(const std::string& bind_address, uint16_t port) {
  SocketAddress at;
  if (!bind_address.empty()) {
    at = resolve("--bind", bind_address, port);
  } else {
    auto* a6 = reinterpret_cast<sockaddr_in6*>(&at.storage);
    a6->sin6_family = AF_INET6;
    a6->sin6_port = htons(port);
    at.length = sizeof *a6;
  }
  int fd = socket(at.family(), SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0 && errno == EAFNOSUPPORT && bind_address.empty()) {
    at = SocketAddress{};
    auto* a4 = reinterpret_cast<sockaddr_in*>(&at.storage);
    a4->sin_family = AF_INET;
    a4->sin_port = htons(port);
    at.length = sizeof *a4;
    fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  }
  FileDescriptor s(static_cast<int>(check_syscall("create the echo server's socket", fd)));
  if (at.family() == AF_INET6) {
    const int zero = 0;
    setsockopt(s.get(), IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
  }
  check_syscall("listen for echoes on " + at.text(), bind(s.get(), at.get(), at.length));
  return s;
}

}  // namespace

int run_echo_server(const std::string& bind_address, uint16_t port, bool quiet) {
  const SignalFd signals = block_stop_signals();
  FileDescriptor s = server_socket(bind_address, port);
  if (!quiet) std::cout << "tm-probe server: answering UDP echoes on port " << port << std::endl;
  std::vector<uint8_t> buf(70000);
  uint64_t answered = 0;
  for (;;) {
    pollfd fds[2] = {{s.get(), POLLIN, 0}, {signals.get(), POLLIN, 0}};
    if (poll(fds, 2, -1) < 0 && errno != EINTR) throw_errno("poll", errno);
    if (fds[1].revents && signals.take()) break;
    for (;;) {
      sockaddr_storage from{};
      socklen_t from_len = sizeof from;
      const ssize_t n =
          recvfrom(s.get(), buf.data(), buf.size(), MSG_DONTWAIT, reinterpret_cast<sockaddr*>(&from), &from_len);
      if (n < 0) break;
      if (n < static_cast<ssize_t>(kPayloadHeader) || std::memcmp(buf.data(), kMagic, 4) != 0) continue;
      // The echo goes back as it came: the link carries the same bytes each way.
      if (sendto(s.get(), buf.data(), static_cast<size_t>(n), 0, reinterpret_cast<sockaddr*>(&from), from_len) == n)
        ++answered;
    }
  }
  if (!quiet) std::cout << "tm-probe server: answered " << answered << " echoes" << std::endl;
  return 0;
}

}  // namespace tracemod::probe
