// tm-link's queues as users name them: the input's first line is the queue (--uplink-queue: infinite, droptail,
// drophead, codel, pie, red or anything), the rest its arguments (--uplink-queue-args). make_queue_discipline
// must build it or refuse with a UsageError. A queue it builds describes itself and carries an overload (ECN-
// capable IPv4 packets arriving faster than they leave), so that values the parser lets through are used as a
// link would use them.
#include <cstring>

#include "disciplines/queue_factory.hh"
#include "fuzz.hh"

using namespace tracemod;

namespace {

constexpr uint32_t kIpBytes = 1000;
constexpr Nanos kMicrosecond = 1000;

class Drops : public DropSink {
 public:
  void dropped(QueuedPacket&&, Nanos, DropCause) override { ++count; }
  uint64_t count = 0;
};

QueuedPacket packet(BufferPool& pool, Nanos t) {
  QueuedPacket q;
  q.packet.size = kVnetHeaderSize + kEthernetHeaderSize + kIpBytes;
  q.packet.buf = pool.get(q.packet.size);
  std::memset(q.packet.buf.data(), 0, q.packet.size);
  uint8_t* f = q.packet.frame();
  f[12] = 0x08;  // IPv4
  f[14] = 0x45;
  f[15] = 0x02;  // ECT(0)
  f[16] = kIpBytes >> 8;
  f[17] = kIpBytes & 0xff;
  f[22] = 64;
  f[23] = 17;
  q.packet.arrival = q.enqueued = t;
  q.ip_bytes = kIpBytes;
  return q;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto lines = fuzz::first_line(fuzz::text(data, size));
  const std::string &name = lines.first, &args = lines.second;
  std::unique_ptr<QueueDiscipline> q;
  if (!fuzz::accepted([&] { q = make_queue_discipline("--uplink-queue-args", name, args, RandomStream(1, 2)); }))
    return 0;
  q->describe();
  BufferPool pool;
  Drops drops;
  QueuedPacket out;
  uint64_t in = 0, left = 0;
  for (Nanos t = 0; t < 40 * kMillisecond; t += 100 * kMicrosecond) {
    q->enqueue(packet(pool, t), t, drops);
    ++in;
    if (t % (250 * kMicrosecond) == 0 && q->dequeue(out, t, drops)) ++left;
  }
  for (Nanos t = 40 * kMillisecond; q->dequeue(out, t, drops); t += kMillisecond) ++left;
  FUZZ_CHECK(q->empty() && left + drops.count == in);
  return 0;
}
