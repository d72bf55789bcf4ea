// What each channel model costs per packet inside the ferry, without the kernel: 64-byte UDP packets (a small
// buffer from the pool, filled, as the ferry does for each small arrival) through a queue's enqueue and
// dequeue_ready, timed on the process's CPU clock. Prints one line per queue: "NAME NS_PER_PACKET".
//
// usage: bench/queue_cost [PACKETS]      (default 2000000; bench/channel runs it)
#include <time.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "effects/delay_queue.hh"
#include "effects/jitter_queue.hh"
#include "effects/loss_queue.hh"
#include "effects/onoff_queue.hh"

namespace {

using namespace tracemod;

// Drops what it is handed: the buffers go back to the pool, as after sendmmsg.
class NullSink : public PacketSink {
 public:
  void send(Packet&& p) override { p = Packet(); }
};

// A 64-byte IPv4/UDP packet in an Ethernet frame behind a virtio-net header.
std::vector<uint8_t> template_frame() {
  std::vector<uint8_t> f(kVnetHeaderSize + kEthernetHeaderSize + 64, 0);
  uint8_t* eth = f.data() + kVnetHeaderSize;
  eth[12] = 0x08;
  uint8_t* ip = eth + kEthernetHeaderSize;
  ip[0] = 0x45, ip[3] = 64, ip[8] = 64, ip[9] = 17;
  ip[12] = 100, ip[13] = 64, ip[15] = 2, ip[16] = 100, ip[17] = 64, ip[19] = 1;
  ip[21] = 9, ip[23] = 9, ip[25] = 44;  // ports 9 -> 9, UDP length 44
  return f;
}

double cpu_seconds() {
  timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

// Nanoseconds of CPU per packet through the queue MAKE builds, N packets 1 us apart, released every 64.
double cost(const std::function<std::unique_ptr<PacketQueue>(BufferPool&)>& make, long n) {
  BufferPool pool;
  auto q = make(pool);
  const std::vector<uint8_t> frame = template_frame();
  NullSink sink;
  const double start = cpu_seconds();
  for (long i = 0; i < n; ++i) {
    Packet p;
    p.size = static_cast<uint32_t>(frame.size());
    p.buf = pool.get(p.size);
    std::memcpy(p.buf.data(), frame.data(), frame.size());
    p.arrival = i * 1000;
    q->enqueue(std::move(p), p.arrival);
    if (i % 64 == 63) q->dequeue_ready(i * 1000, sink);
  }
  q->dequeue_ready(n * 1000 + 10 * kMillisecond * 1000, sink);  // everything due, jitter included
  return (cpu_seconds() - start) / static_cast<double>(n) * 1e9;
}

std::function<std::unique_ptr<PacketQueue>(BufferPool&)> loss(const std::string& model, const std::string& mode,
                                                              double duplicate = 0) {
  return [=](BufferPool& pool) -> std::unique_ptr<PacketQueue> {
    ChannelEffects e;
    e.error = parse_error_mode("mode", mode);
    e.duplicate = duplicate;
    return std::make_unique<LossQueue>(make_loss_model("model", model, RandomStream(1, 0)), e, pool);
  };
}

}  // namespace

int main(int argc, char** argv) {
  const long n = argc > 1 ? std::atol(argv[1]) : 2000000;
  const std::vector<std::pair<std::string, std::function<std::unique_ptr<PacketQueue>(BufferPool&)>>> queues = {
      {"tm-loss 0", loss("0", "drop")},
      {"tm-loss 0.01", loss("0.01", "drop")},
      {"tm-loss gilbert:p=0.01,r=0.25", loss("gilbert:p=0.01,r=0.25", "drop")},
      {"tm-loss markov4:p13=0.01,p31=0.5,p32=0.1,p23=0.2,p14=0.001",
       loss("markov4:p13=0.01,p31=0.5,p32=0.1,p23=0.2,p14=0.001", "drop")},
      {"tm-loss ber:1e-5", loss("ber:1e-5", "drop")},
      {"tm-loss 0.01 corrupt", loss("0.01", "corrupt")},
      {"tm-loss 0.01 arq:delay=0.01,retries=3", loss("0.01", "arq:delay=0.01,retries=3")},
      {"tm-loss 0 duplicate 0.01", loss("0", "drop", 0.01)},
      {"tm-delay 0", [](BufferPool&) { return std::make_unique<DelayQueue>(0, 256ull << 20); }},
      {"tm-delay 0 jitter 0.05 normal, reorder",
       [](BufferPool& pool) {
         return std::make_unique<JitterQueue>(0, Sampler(Distribution::normal(0, 5e4), 0, RandomStream(1, 3)), true,
                                              pool, 256ull << 20);
       }},
      {"tm-delay 0 jitter 0.05 normal, correlation 25%, in order",
       [](BufferPool& pool) {
         return std::make_unique<JitterQueue>(0, Sampler(Distribution::normal(0, 5e4), 0.25, RandomStream(1, 3)), false,
                                              pool, 256ull << 20);
       }},
      {"tm-onoff exp:1s on, exp:10ms off",
       [](BufferPool& pool) {
         auto s = std::make_unique<RandomOnOff>(Distribution::exponential(1e9), Distribution::exponential(1e7),
                                                RandomStream(1, 9), 0);
         return std::make_unique<OnOffQueue>(std::move(s), OnOffQueue::OffMode::kDrop, QueueSize{}, pool);
       }},
  };
  for (const auto& [name, make] : queues) std::printf("%s\t%.1f\n", name.c_str(), cost(make, n));
  return 0;
}
