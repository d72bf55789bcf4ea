#include "packet/packet_ring.hh"

#include <linux/if_packet.h>
#include <sys/mman.h>
#include <sys/socket.h>

#include <cerrno>

#include "packet/packet.hh"
#include "util/error.hh"

namespace tracemod {
namespace {

static_assert(TPACKET2_HDRLEN - sizeof(sockaddr_ll) == TxRing::kDataOffset, "TPACKET_V2 transmit layout");
static_assert(MappedRing::kBlockSize % MappedRing::kSlotSize == 0, "slots must tile a block");

void set_option(int fd, int opt, const void* value, socklen_t size, const std::string& what) {
  check_syscall(what, setsockopt(fd, SOL_PACKET, opt, value, size));
}

tpacket2_hdr* header(uint8_t* slot) {
  return reinterpret_cast<tpacket2_hdr*>(slot);
}

uint32_t status(uint8_t* slot) {
  return __atomic_load_n(&header(slot)->tp_status, __ATOMIC_ACQUIRE);
}

void set_status(uint8_t* slot, uint32_t s) {
  __atomic_store_n(&header(slot)->tp_status, s, __ATOMIC_RELEASE);
}

// Sets an option that must precede the ring (MappedRing's constructor makes it); returns FD.
int before_ring(int fd, int opt, int value, const std::string& what) {
  set_option(fd, opt, &value, sizeof value, what);
  return fd;
}

}  // namespace

MappedRing::MappedRing(int fd, int option, uint32_t slots, const std::string& what) : slots_(slots) {
  const int version = TPACKET_V2;
  set_option(fd, PACKET_VERSION, &version, sizeof version, "use TPACKET_V2 for " + what);
  constexpr uint32_t per_block = kBlockSize / kSlotSize;
  tpacket_req req{kBlockSize, slots / per_block, kSlotSize, slots};
  set_option(fd, option, &req, sizeof req, "make " + what);
  void* map = mmap(nullptr, static_cast<size_t>(slots) * kSlotSize, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (map == MAP_FAILED) throw_errno("map " + what, errno);
  map_ = static_cast<uint8_t*>(map);
}

MappedRing::~MappedRing() {
  munmap(map_, static_cast<size_t>(slots_) * kSlotSize);
}

RxRing::RxRing(int fd, const std::string& name)
    : MappedRing(before_ring(fd, PACKET_COPY_THRESH, 1, "pass large frames whole on " + name), PACKET_RX_RING, kSlots,
                 "the receive ring of " + name) {}

bool RxRing::peek(Frame& f) const {
  uint8_t* s = slot(next_);
  const uint32_t st = status(s);
  if (!(st & TP_STATUS_USER)) return false;
  const tpacket2_hdr* h = header(s);
  f.data = s + h->tp_mac - kVnetHeaderSize;
  f.size = h->tp_snaplen + kVnetHeaderSize;
  f.wire_size = h->tp_len + kVnetHeaderSize;
  f.realtime = static_cast<Nanos>(h->tp_sec) * 1000000000 + h->tp_nsec;
  f.copied = st & TP_STATUS_COPY;
  return true;
}

void RxRing::pop() {
  set_status(slot(next_), TP_STATUS_KERNEL);
  next_ = following(next_);
}

// PACKET_LOSS: a malformed frame is skipped rather than stopping the ring until someone repairs it.
TxRing::TxRing(int fd, const std::string& name)
    : MappedRing(before_ring(fd, PACKET_LOSS, 1, "skip malformed frames on " + name), PACKET_TX_RING, kSlots,
                 "the transmit ring of " + name),
      fd_(fd) {}

uint8_t* TxRing::next_slot() const {
  uint8_t* s = slot(next_);
  return status(s) == TP_STATUS_AVAILABLE ? s + kDataOffset : nullptr;
}

void TxRing::commit(uint32_t size) {
  uint8_t* s = slot(next_);
  header(s)->tp_len = size;
  set_status(s, TP_STATUS_SEND_REQUEST);
  if (pending_++ == 0) first_pending_ = next_;
  next_ = following(next_);
}

// The kernel sends slots in order from where it stopped last, and stops at the first it cannot send (no
// send buffer, device error). Those still requested are lost: they are freed, and the next frame goes where
// the kernel will look first.
uint32_t TxRing::flush() {
  if (pending_ == 0) return 0;
  while (send(fd_, nullptr, 0, MSG_DONTWAIT) < 0 && errno == EINTR) {
  }
  uint32_t refused = 0;
  for (uint32_t i = 0, k = first_pending_; i < pending_; ++i, k = following(k)) {
    if (status(slot(k)) != TP_STATUS_SEND_REQUEST) continue;
    if (refused++ == 0) next_ = k;
    set_status(slot(k), TP_STATUS_AVAILABLE);
  }
  pending_ = 0;
  return refused;
}

}  // namespace tracemod
