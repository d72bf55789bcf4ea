#include "packet/ferry.hh"

#include <arpa/inet.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <thread>
#include <utility>
#include <vector>

#include "util/clock.hh"
#include "util/error.hh"

namespace tracemod {
namespace {

void set_int(int fd, int level, int opt, int value, const std::string& what) {
  check_syscall(what, setsockopt(fd, level, opt, &value, sizeof value));
}

// Big socket buffers hold frames too large for a ring slot while the ferry sleeps, and frames sent but not yet
// freed by their receiver; FORCE needs host privilege, so fall back.
void set_buffer(int fd, int force_opt, int opt, int bytes) {
  if (setsockopt(fd, SOL_SOCKET, force_opt, &bytes, sizeof bytes) == 0) return;
  setsockopt(fd, SOL_SOCKET, opt, &bytes, sizeof bytes);
}

// Protocol 0 until bound: an unbound ETH_P_ALL socket would see every interface's frames.
FileDescriptor packet_socket(const std::string& name) {
  FileDescriptor fd(static_cast<int>(
      check_syscall("open packet socket on " + name, socket(AF_PACKET, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, 0))));
  set_int(fd.get(), SOL_PACKET, PACKET_VNET_HDR, 1, "enable virtio-net headers on " + name);
  set_int(fd.get(), SOL_PACKET, PACKET_QDISC_BYPASS, 1, "bypass qdisc on " + name);
  set_buffer(fd.get(), SO_SNDBUFFORCE, SO_SNDBUF, 32 << 20);
  return fd;
}

// PROTOCOL 0 binds for sending only: the socket never receives.
void bind_to(int fd, int ifindex, uint16_t protocol, const std::string& name) {
  sockaddr_ll addr{};
  addr.sll_family = AF_PACKET;
  addr.sll_protocol = htons(protocol);
  addr.sll_ifindex = ifindex;
  check_syscall("bind packet socket to " + name, bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr));
}

}  // namespace

PacketSockets open_packet_socket(const std::string& name) {
  PacketSockets s;
  s.rx = packet_socket(name);
  set_int(s.rx.get(), SOL_PACKET, PACKET_IGNORE_OUTGOING, 1, "ignore own frames on " + name);
  // Asking for timestamps makes the kernel stamp every frame as it enters the veth's backlog; the ring then
  // carries that stamp, not the (later, by the backlog's wait) time the frame was copied into the ring.
  set_int(s.rx.get(), SOL_SOCKET, SO_TIMESTAMPNS, 1, "timestamp arrivals on " + name);
  set_buffer(s.rx.get(), SO_RCVBUFFORCE, SO_RCVBUF, 32 << 20);
  s.tx = packet_socket(name);
  // The receive ring must exist before the socket is bound: see RxRing.
  s.rx_pending = std::async(std::launch::async, [fd = s.rx.get(), name] { return std::make_unique<RxRing>(fd, name); });
  s.tx_pending = std::async(std::launch::async, [fd = s.tx.get(), name] { return std::make_unique<TxRing>(fd, name); });
  return s;
}

void bind_packet_socket(PacketSockets& s, int ifindex, const std::string& name) {
  s.rx_ring = s.rx_pending.get();
  s.tx_ring = s.tx_pending.get();
  bind_to(s.rx.get(), ifindex, ETH_P_ALL, name);
  bind_to(s.tx.get(), ifindex, 0, name);
}

Ferry::End::End(PacketSockets s)
    : rx(std::move(s.rx)), tx(std::move(s.tx)), rx_ring(std::move(s.rx_ring)), tx_ring(std::move(s.tx_ring)) {}

namespace {

// The kernel's receive time (CLOCK_REALTIME) moved onto the monotonic clock: when the frame entered the link,
// however late the ferry woke to read it. Clamped to [now - 1 s, now] against clock steps.
Nanos arrival_time(Nanos realtime, Nanos now, Nanos realtime_offset) {
  const Nanos t = realtime - realtime_offset;
  return t > now || t < now - 1000 * kMillisecond ? now : t;
}

// Frames too large for a transmit slot (GSO super-frames), sent by sendmmsg() in batches.
class LargeBatch {
 public:
  explicit LargeBatch(int fd) : fd_(fd) {}
  bool empty() const { return n_ == 0; }
  bool full() const { return n_ == Ferry::kBatch; }
  void add(Packet&& p) {
    iovs_[n_] = {p.buf.data(), p.size};
    msgs_[n_].msg_hdr = {};
    msgs_[n_].msg_hdr.msg_iov = &iovs_[n_];
    msgs_[n_].msg_hdr.msg_iovlen = 1;
    pkts_[n_++] = std::move(p);
  }
  // Returns how many frames the kernel refused.
  uint64_t flush() {
    uint64_t refused = 0;
    int done = 0;
    while (done < n_) {
      int r = sendmmsg(fd_, msgs_.data() + done, static_cast<unsigned>(n_ - done), 0);
      if (r < 0) {
        if (errno == EINTR) continue;
        ++refused;  // the first frame was refused (ENOBUFS, EMSGSIZE...): it is lost
        r = 1;
      }
      done += r;
    }
    for (int i = 0; i < n_; ++i) pkts_[i] = Packet();  // buffers back to the pool
    n_ = 0;
    return refused;
  }

 private:
  int fd_;
  int n_ = 0;
  std::array<Packet, Ferry::kBatch> pkts_;
  std::array<mmsghdr, Ferry::kBatch> msgs_{};
  std::array<iovec, Ferry::kBatch> iovs_{};
};

}  // namespace

// One direction's exit: a frame goes into the transmit ring if it fits and the next slot is free, else into a
// sendmmsg() batch. Frames leave in the order the queue released them: one path is flushed before the other
// is used.
class Ferry::Sender : public PacketSink {
 public:
  Sender(const End& exit, FerryCounters& counters, FlowCounters& flow)
      : ring_(*exit.tx_ring), large_(exit.rx.get()), counters_(counters), flow_(flow) {}

  void set_now(Nanos now) { now_ = now; }

  void send(Packet&& p) override {
    if (capture_) capture_->departed(p);
    count(p);
    if (p.size <= TxRing::kMaxSize) {
      if (uint8_t* slot = ring_.next_slot()) {
        if (!large_.empty()) counters_.send_errors += large_.flush();
        std::memcpy(slot, p.buf.data(), p.size);
        if (!p.is_gso()) linearize(slot, p.size);
        ring_.commit(p.size);
        return;
      }
    }
    if (ring_.pending()) counters_.send_errors += ring_.flush();
    large_.add(std::move(p));
    if (large_.full()) counters_.send_errors += large_.flush();
  }

  void flush() {
    counters_.send_errors += ring_.flush();
    counters_.send_errors += large_.flush();
  }

  void set_capture(DepartureObserver* c) { capture_ = c; }

 private:
  // A header length covering the whole frame makes the kernel copy all of it into the skb's linear area
  // rather than attach the rest as a fragment of the ring's page, which the receiving stack would have to
  // pull back into the linear area.
  static void linearize(uint8_t* slot, uint32_t size) {
    const uint16_t whole = static_cast<uint16_t>(size - kVnetHeaderSize);
    std::memcpy(slot + offsetof(virtio_net_hdr, hdr_len), &whole, sizeof whole);
  }

  void count(const Packet& p) {
    flow_.out_bytes += wire_ip_bytes(p);
    const Nanos stay = now_ - p.arrival;
    ++flow_.departures;
    flow_.sojourn_sum += stay;
    flow_.sojourn_max = std::max(flow_.sojourn_max, stay);
  }

  TxRing& ring_;
  LargeBatch large_;
  FerryCounters& counters_;
  FlowCounters& flow_;
  Nanos now_ = 0;
  DepartureObserver* capture_ = nullptr;
};

Ferry::Ferry(PacketSockets outer, PacketSockets inner, BufferPool& pool)
    : outer_(std::move(outer)), inner_(std::move(inner)), pool_(pool), spare_(pool.get(BufferPool::kMaxSize)) {
  senders_[kUplink] = std::make_unique<Sender>(outer_, counters_, counters_.flow[kUplink]);
  senders_[kDownlink] = std::make_unique<Sender>(inner_, counters_, counters_.flow[kDownlink]);
}

namespace {

// The last close of a packet socket that had a ring waits for RCU grace periods (10-40 ms for the four here),
// and so would the shell's exit. A child takes the last references instead, and closes them as the shell exits;
// it keeps nothing else open: not the shell's output (a reader waits for every copy of a pipe to close), not a
// netlink socket that owns a firewall table. False if there is no child (the caller closes FDS itself).
bool close_in_child(std::vector<FileDescriptor>& fds) {
  std::vector<int> keep;
  for (const auto& fd : fds) keep.push_back(fd.get());
  std::sort(keep.begin(), keep.end());
  const pid_t pid = fork();
  if (pid < 0) return false;
  if (pid == 0) {
    unsigned next = 0;
    for (int fd : keep) {
      if (static_cast<unsigned>(fd) > next) close_range(next, static_cast<unsigned>(fd) - 1, 0);
      next = static_cast<unsigned>(fd) + 1;
    }
    close_range(next, ~0U, 0);
    for (int fd : keep) ::close(fd);
    _exit(0);
  }
  fds.clear();  // not the last references now, so these closes do not wait
  return true;
}

}  // namespace

Ferry::~Ferry() {
  senders_[kUplink].reset();
  senders_[kDownlink].reset();
  // A mapped ring holds its socket open; and closing a packet socket waits for an RCU grace period (several
  // ms): unmap first, then close all four at once so the shell's exit pays for one.
  std::vector<FileDescriptor> fds;
  for (End* s : {&outer_, &inner_}) {
    s->rx_ring.reset();
    s->tx_ring.reset();
    fds.push_back(std::move(s->rx));
    fds.push_back(std::move(s->tx));
  }
  if (close_in_child(fds)) return;
  std::vector<std::thread> closers;
  for (size_t i = 1; i < fds.size(); ++i) closers.emplace_back([fd = std::move(fds[i])]() mutable { fd.reset(); });
  fds[0].reset();
  for (auto& t : closers) t.join();
}

bool Ferry::has_arrivals(Direction d) const {
  RxRing::Frame f;
  return end(d, true).rx_ring->peek(f);
}

// The oldest frame waiting, received at ARRIVED, shows whether the ferry was away (stopped, or starved of the CPU)
// for longer than kStall: the queue is told, so that a link does not send now, in a burst, what it would have
// carried meanwhile. The event loop tells it of a release the ferry missed; this, of arrivals it did not read.
namespace {
void note_stall(Nanos arrived, Nanos now, PacketQueue& queue) {
  if (now - arrived > PacketQueue::kStall) queue.stalled(arrived, now);
}
}  // namespace

// Frames are copied out of the ring at once (a small frame into a small buffer, so that a queue of ACKs does
// not pin 64 KiB apiece): the ring never waits on a queue, and a copy of a small frame costs less than the
// system call it replaces.
int Ferry::receive(Direction d, PacketQueue& queue) {
  const End& entry = end(d, true);
  RxRing& ring = *entry.rx_ring;
  RxRing::Frame f;
  Nanos now = 0, offset = 0;
  int n = 0;
  for (; n < kMaxPerTurn && ring.peek(f); ++n) {
    if (n == 0) {
      offset = realtime_offset(now);
      note_stall(f.realtime - offset, now, queue);
    } else if (f.realtime - offset > now) {
      // It entered the ring after the clock was read: clamped to that older now, it would arrive (and leave)
      // early by as long as this loop ran (34 us seen through a 1 ms delay under load). The offset still holds.
      now = monotonic_now();
    }
    Packet p;
    p.arrival = arrival_time(f.realtime, now, offset);
    if (f.copied) {
      read_whole(entry.rx.get(), p);
    } else if (f.size == f.wire_size) {
      p.size = f.size;
      p.buf = pool_.get(p.size);
      std::memcpy(p.buf.data(), f.data, p.size);
    } else {
      ++counters_.truncated;  // too large for a slot, and no room on the socket for the whole frame
    }
    ring.pop();
    if (p.size <= kVnetHeaderSize) continue;
    counters_.flow[d].in_bytes += wire_ip_bytes(p);
    queue.enqueue(std::move(p), now);
  }
  return n;
}

// The whole frame of a slot marked TP_STATUS_COPY, from the socket (the kernel queued it there in ring order).
// A frame larger than the largest buffer (a BIG TCP super-frame) is lost, not cut short.
void Ferry::read_whole(int fd, Packet& p) {
  const ssize_t n = recv(fd, spare_.data(), BufferPool::kMaxSize, MSG_DONTWAIT | MSG_TRUNC);
  if (n <= 0 || static_cast<size_t>(n) > BufferPool::kMaxSize) {
    ++counters_.truncated;
    return;
  }
  p.size = static_cast<uint32_t>(n);
  if (BufferPool::class_size_for(p.size) < BufferPool::kMaxSize) {
    p.buf = pool_.get(p.size);
    std::memcpy(p.buf.data(), spare_.data(), p.size);
  } else {
    p.buf = std::move(spare_);
    spare_ = pool_.get(BufferPool::kMaxSize);
  }
}

void Ferry::release(Direction d, PacketQueue& queue, Nanos now) {
  senders_[d]->set_now(now);
  queue.dequeue_ready(now, *senders_[d]);
  senders_[d]->flush();
}

void Ferry::set_capture(FerryObserver* capture) {
  capture_ = capture;
  for (auto d : {kUplink, kDownlink}) senders_[d]->set_capture(capture ? capture->direction(d) : nullptr);
}

Nanos Ferry::capture_due() const {
  return capture_ ? capture_->flush_due() : kNever;
}

void Ferry::flush_capture(Nanos now) {
  if (capture_ && now >= capture_->flush_due()) capture_->flush(now);
}

Nanos Ferry::take_sojourn_max(Direction d) {
  return std::exchange(counters_.flow[d].sojourn_max, 0);
}

const FerryCounters& Ferry::counters() const {
  for (const End* s : {&outer_, &inner_}) {
    tpacket_stats st{};
    socklen_t len = sizeof st;
    if (getsockopt(s->rx.get(), SOL_PACKET, PACKET_STATISTICS, &st, &len) == 0) counters_.ring_full += st.tp_drops;
  }
  return counters_;
}

}  // namespace tracemod
