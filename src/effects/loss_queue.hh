// A lossy link without capacity limits, per wire packet: a LossModel judges each packet, the error mode decides
// what a hit costs (dropped, delivered corrupt, or retried by an in-order ARQ link layer; channel_effects.hh),
// and a delivered packet may be duplicated. A GSO super-frame is judged segment by segment; if its segments
// fare differently it is split, so a loss never takes a whole burst with it.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "channel/channel_effects.hh"
#include "channel/corrupt.hh"
#include "channel/loss_model.hh"
#include "packet/buffer_pool.hh"
#include "packet/packet_queue.hh"
#include "packet/ring.hh"
#include "util/random.hh"

namespace tracemod {

// What happens to what the model hits, and duplication; their random streams come from SEED and DIRECTION
// (stream_id(DIRECTION, kCorrupt / kDuplicate)), apart from the model's own.
struct ChannelEffects {
  ErrorMode error;
  double duplicate = 0;  // probability of an extra copy of each delivered wire packet
  uint64_t seed = 0;
  int direction = 0;
};

class LossQueue : public PacketQueue {
 public:
  LossQueue(std::unique_ptr<LossModel> model, BufferPool& pool);
  LossQueue(std::unique_ptr<LossModel> model, const ChannelEffects& effects, BufferPool& pool,
            uint64_t memory_limit = kQueueMemoryLimit);  // what an ARQ link may hold back
  // Independent loss with probability LOSS_RATE.
  LossQueue(double loss_rate, RandomStream random, BufferPool& pool);
  void enqueue(Packet&& p, Nanos now) override;
  void dequeue_ready(Nanos now, PacketSink& out) override;
  Nanos next_event() const override;
  // "gilbert:... drop: 12 hit" and what the effects did, for -v.
  std::string summary() const override;

 private:
  // The fate of one wire packet.
  struct Fate {
    Nanos release = 0;  // kNever: dropped
    bool corrupt = false, duplicate = false;
    bool plain(Nanos at) const { return release == at && !corrupt && !duplicate; }
  };
  Fate judge(Nanos arrival, uint32_t ip_bytes);
  void queue(Packet&& p, uint32_t segments, Ring<Packet>& ring);
  void queue(Packet&& p, uint32_t segments) { queue(std::move(p), segments, ready_); }
  void deliver(Packet&& p, uint32_t segments, const Fate& fate);
  void apply(Packet&& p, uint32_t segments, Nanos now);
  bool simple() const { return model_->never() && !duplicator_; }

  std::unique_ptr<LossModel> model_;
  ErrorMode mode_;
  std::optional<Corrupter> corrupter_;
  std::optional<ArqLink> arq_;
  std::optional<Duplicator> duplicator_;
  BufferPool& pool_;
  uint64_t memory_limit_;
  Ring<Packet> ready_;       // in release order
  Ring<Packet> control_;     // with ARQ: link-control frames, leaving at their arrival, not behind retries
  std::vector<Fate> fates_;  // per-segment verdicts, reused
  uint64_t hits_ = 0, corrupted_ = 0, duplicated_ = 0;
};

}  // namespace tracemod
