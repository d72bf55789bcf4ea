#include "packet/ferry.hh"

#include <arpa/inet.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <thread>

#include "util/clock.hh"
#include "util/error.hh"

namespace tracemod {
namespace {

void set_int(int fd, int level, int opt, int value, const std::string& what) {
  check_syscall(what, setsockopt(fd, level, opt, &value, sizeof value));
}

// Big socket buffers absorb bursts while the ferry sleeps; FORCE needs host privilege, so fall back.
void set_buffer(int fd, int force_opt, int opt, int bytes) {
  if (setsockopt(fd, SOL_SOCKET, force_opt, &bytes, sizeof bytes) == 0) return;
  setsockopt(fd, SOL_SOCKET, opt, &bytes, sizeof bytes);
}

}  // namespace

FileDescriptor open_packet_socket(int ifindex, const std::string& name) {
  // Protocol 0 until bound: an unbound ETH_P_ALL socket would see every interface's frames.
  FileDescriptor fd(static_cast<int>(
      check_syscall("open packet socket on " + name, socket(AF_PACKET, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, 0))));
  set_int(fd.get(), SOL_PACKET, PACKET_VNET_HDR, 1, "enable virtio-net headers on " + name);
  set_int(fd.get(), SOL_PACKET, PACKET_IGNORE_OUTGOING, 1, "ignore own frames on " + name);
  set_int(fd.get(), SOL_PACKET, PACKET_QDISC_BYPASS, 1, "bypass qdisc on " + name);
  set_int(fd.get(), SOL_SOCKET, SO_TIMESTAMPNS, 1, "timestamp arrivals on " + name);
  set_buffer(fd.get(), SO_RCVBUFFORCE, SO_RCVBUF, 32 << 20);
  set_buffer(fd.get(), SO_SNDBUFFORCE, SO_SNDBUF, 32 << 20);
  sockaddr_ll addr{};
  addr.sll_family = AF_PACKET;
  addr.sll_protocol = htons(ETH_P_ALL);
  addr.sll_ifindex = ifindex;
  check_syscall("bind packet socket to " + name, bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr));
  return fd;
}

// Receive slots always hold a largest-class buffer; a small arrival is copied out so the slot is reused.
struct Ferry::RxBatch {
  static constexpr size_t kControl = CMSG_SPACE(sizeof(timespec));
  std::array<Buffer, kBatch> bufs;
  std::array<mmsghdr, kBatch> msgs{};
  std::array<iovec, kBatch> iovs{};
  alignas(cmsghdr) std::array<std::array<uint8_t, kControl>, kBatch> control{};

  void refill(BufferPool& pool, int i) {
    if (!bufs[i]) bufs[i] = pool.get(BufferPool::kMaxSize);
    iovs[i] = {bufs[i].data(), BufferPool::kMaxSize};
    msgs[i].msg_hdr = {};
    msgs[i].msg_hdr.msg_iov = &iovs[i];
    msgs[i].msg_hdr.msg_iovlen = 1;
    msgs[i].msg_hdr.msg_control = control[i].data();
    msgs[i].msg_hdr.msg_controllen = kControl;
  }

  // The kernel's receive time (CLOCK_REALTIME) moved onto the monotonic clock: when the frame entered the link,
  // however late the ferry woke to read it. Clamped to [now - 1 s, now] against clock steps.
  Nanos arrival(int i, Nanos now, Nanos realtime_offset) const {
    msghdr& h = const_cast<msghdr&>(msgs[i].msg_hdr);
    for (cmsghdr* c = CMSG_FIRSTHDR(&h); c; c = CMSG_NXTHDR(&h, c)) {
      if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_TIMESTAMPNS) continue;
      timespec ts;
      std::memcpy(&ts, CMSG_DATA(c), sizeof ts);
      const Nanos t = static_cast<Nanos>(ts.tv_sec) * 1000000000 + ts.tv_nsec - realtime_offset;
      return t > now || t < now - 1000 * kMillisecond ? now : t;
    }
    return now;
  }
};

namespace {

// CLOCK_REALTIME minus CLOCK_MONOTONIC, read between two monotonic reads so the error is one clock read.
Nanos realtime_offset(Nanos& now) {
  timespec a, r, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  clock_gettime(CLOCK_REALTIME, &r);
  clock_gettime(CLOCK_MONOTONIC, &b);
  const Nanos ma = static_cast<Nanos>(a.tv_sec) * 1000000000 + a.tv_nsec;
  const Nanos mb = static_cast<Nanos>(b.tv_sec) * 1000000000 + b.tv_nsec;
  now = mb;
  return static_cast<Nanos>(r.tv_sec) * 1000000000 + r.tv_nsec - (ma + (mb - ma) / 2);
}

}  // namespace

class Ferry::TxBatch : public PacketSink {
 public:
  TxBatch(int fd, FerryCounters& counters) : fd_(fd), counters_(counters) {}
  void send(Packet&& p) override {
    iovs_[n_] = {p.buf.data(), p.size};
    msgs_[n_].msg_hdr = {};
    msgs_[n_].msg_hdr.msg_iov = &iovs_[n_];
    msgs_[n_].msg_hdr.msg_iovlen = 1;
    pkts_[n_++] = std::move(p);
    if (n_ == kBatch) flush();
  }
  void flush() {
    int done = 0;
    while (done < n_) {
      int r = sendmmsg(fd_, msgs_.data() + done, static_cast<unsigned>(n_ - done), 0);
      if (r < 0) {
        if (errno == EINTR) continue;
        ++counters_.send_errors;  // the first frame was refused (ENOBUFS, EMSGSIZE...): it is lost
        r = 1;
      }
      done += r;
    }
    for (int i = 0; i < n_; ++i) pkts_[i] = Packet();  // buffers back to the pool
    n_ = 0;
  }

 private:
  int fd_;
  FerryCounters& counters_;
  int n_ = 0;
  std::array<Packet, kBatch> pkts_;
  std::array<mmsghdr, kBatch> msgs_{};
  std::array<iovec, kBatch> iovs_{};
};

Ferry::Ferry(FileDescriptor outer, FileDescriptor inner, BufferPool& pool)
    : outer_(std::move(outer)), inner_(std::move(inner)), pool_(pool) {
  for (auto& rx : rx_) {
    rx = std::make_unique<RxBatch>();
    for (int i = 0; i < kBatch; ++i) rx->refill(pool_, i);
  }
  tx_[kUplink] = std::make_unique<TxBatch>(outer_.get(), counters_);
  tx_[kDownlink] = std::make_unique<TxBatch>(inner_.get(), counters_);
}

Ferry::~Ferry() {
  // Closing a packet socket waits for an RCU grace period (several ms); close both at once so the shell's
  // exit pays for one.
  std::thread other([fd = std::move(outer_)]() mutable { fd.reset(); });
  inner_.reset();
  other.join();
}

int Ferry::receive(Direction d, PacketQueue& queue) {
  RxBatch& rx = *rx_[d];
  const int fd = fd_for_arrivals(d);
  int total = 0;
  for (int round = 0; round < 4; ++round) {  // bounded, so one busy direction cannot starve the other
    int n = recvmmsg(fd, rx.msgs.data(), kBatch, MSG_DONTWAIT, nullptr);
    if (n <= 0) return total;  // EAGAIN (drained) or a transient error: epoll will tell us again
    total += n;
    Nanos now;
    const Nanos offset = realtime_offset(now);
    for (int i = 0; i < n; ++i) {
      Packet p;
      p.size = rx.msgs[i].msg_len;
      p.arrival = rx.arrival(i, now, offset);
      if (p.size <= kVnetHeaderSize) continue;
      if (BufferPool::class_size_for(p.size) < BufferPool::kMaxSize) {
        p.buf = pool_.get(p.size);
        std::memcpy(p.buf.data(), rx.bufs[i].data(), p.size);
      } else {
        p.buf = std::move(rx.bufs[i]);
      }
      rx.refill(pool_, i);
      queue.enqueue(std::move(p), now);
    }
    if (n < kBatch) return total;
  }
  return total;
}

void Ferry::release(Direction d, PacketQueue& queue, Nanos now) {
  queue.dequeue_ready(now, *tx_[d]);
  tx_[d]->flush();
}

}  // namespace tracemod
