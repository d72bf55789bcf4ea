#include "effects/loss_queue.hh"

#include <algorithm>
#include <cstring>

#include "packet/segmenter.hh"

namespace tracemod {

LossQueue::LossQueue(std::unique_ptr<LossModel> model, BufferPool& pool)
    : LossQueue(std::move(model), ChannelEffects{}, pool) {}

LossQueue::LossQueue(std::unique_ptr<LossModel> model, const ChannelEffects& effects, BufferPool& pool,
                     uint64_t memory_limit)
    : model_(std::move(model)), mode_(effects.error), pool_(pool), memory_limit_(memory_limit) {
  const auto stream = [&](StreamPurpose purpose) {
    return RandomStream(effects.seed, stream_id(effects.direction, purpose));
  };
  if (mode_.kind == ErrorMode::Kind::kCorrupt) corrupter_.emplace(stream(StreamPurpose::kCorrupt));
  if (mode_.kind == ErrorMode::Kind::kArq) arq_.emplace(mode_.retry_delay, mode_.retries);
  if (effects.duplicate > 0) duplicator_.emplace(effects.duplicate, stream(StreamPurpose::kDuplicate));
}

LossQueue::LossQueue(double loss_rate, RandomStream random, BufferPool& pool)
    : LossQueue(std::make_unique<IidLoss>(loss_rate, random), pool) {}

LossQueue::Fate LossQueue::judge(Nanos arrival, uint32_t ip_bytes) {
  Fate f;
  const bool hit = model_->hit(ip_bytes);
  hits_ += hit;
  if (arq_) {
    f.release = arq_->transmit(arrival, hit, *model_, ip_bytes);
  } else {
    f.release = hit && mode_.kind == ErrorMode::Kind::kDrop ? kNever : arrival;
    f.corrupt = hit && corrupter_;
  }
  // Drawn for every wire packet, lost or not, so the duplicates do not depend on the loss.
  const bool copy = duplicator_ && duplicator_->copy();
  f.duplicate = copy && f.release != kNever;
  return f;
}

void LossQueue::queue(Packet&& p, uint32_t segments, Ring<Packet>& ring) {
  stats_.queued_packets += segments;
  stats_.queued_bytes += p.buf.capacity();
  ring.push_back(std::move(p));
}

void LossQueue::deliver(Packet&& p, uint32_t segments, const Fate& fate) {
  if (fate.corrupt) {
    corrupter_->corrupt(p);
    corrupted_ += segments;
  }
  p.release = fate.release;
  if (fate.duplicate) {
    Packet copy;
    copy.size = p.size;
    copy.buf = pool_.get(p.size);
    std::memcpy(copy.buf.data(), p.buf.data(), p.size);
    copy.arrival = p.arrival;
    copy.release = p.release;
    queue(std::move(p), segments);
    stats_.in_packets += segments;  // the link made them: in == out + dropped + queued still holds
    duplicated_ += segments;
    return queue(std::move(copy), segments);
  }
  queue(std::move(p), segments);
}

// Judges each wire packet of P; the frame stays whole if they all fare alike.
void LossQueue::apply(Packet&& p, uint32_t n, Nanos now) {
  fates_.clear();
  if (n == 1) {
    fates_.push_back(judge(p.arrival, p.ip_size()));
  } else {
    const SegmentShape shape = segment_shape(p);
    for (uint32_t i = 0; i < n; ++i) fates_.push_back(judge(p.arrival, shape.ip_bytes(i)));
  }
  const Fate& first = fates_[0];
  const auto lost = [](const Fate& f) { return f.release == kNever; };
  if (std::all_of(fates_.begin(), fates_.end(), lost)) return drop(p, n, now, DropCause::kLoss);
  if (n == 1 || std::all_of(fates_.begin(), fates_.end(), [&](const Fate& f) { return f.plain(first.release); }))
    return deliver(std::move(p), n, first);
  uint32_t i = 0;
  const bool split = segment_gso(p, pool_, [&](Packet&& s) {
    const Fate& f = fates_[i++];
    if (lost(f))
      drop(s, 1, now, DropCause::kLoss);
    else
      deliver(std::move(s), 1, f);
  });
  // A frame we cannot split cannot half-arrive, nor be damaged in one of its packets only: it is lost whole.
  if (!split) drop(p, n, now, DropCause::kLoss);
}

void LossQueue::enqueue(Packet&& p, Nanos now) {
  const uint32_t n = p.segments();
  stats_.in_packets += n;
  if (arq_ && stats_.queued_bytes + p.buf.capacity() > memory_limit_)  // only ARQ holds any
    return drop(p, n, now, DropCause::kQueue);
  // Link-control frames (ARP, neighbour discovery) are not the emulated link's: never judged, and never held
  // behind a packet the link layer retries (the kernel would give up resolving its neighbour).
  if (is_link_control(p)) {
    p.release = p.arrival;
    return queue(std::move(p), n, arq_ ? control_ : ready_);
  }
  if (simple()) {  // the fast path: a model that is off costs nothing more
    p.release = arq_ ? arq_->pass(p.arrival) : p.arrival;
    return queue(std::move(p), n);
  }
  apply(std::move(p), n, now);
}

void LossQueue::dequeue_ready(Nanos now, PacketSink& out) {
  send_due_in_order(ready_, control_, now, release_of, [&](Ring<Packet>& ring) {
    Packet p = ring.pop_front();
    const uint32_t n = p.segments();
    release(std::move(p), n, out);
  });
}

Nanos LossQueue::next_event() const {
  return first_release(ready_, control_, release_of);
}

std::string LossQueue::summary() const {
  std::string s = model_->describe() + ", " + mode_.describe() + ": " + std::to_string(hits_) + " hit";
  if (corrupter_) s += ", " + std::to_string(corrupted_) + " delivered corrupt";
  if (arq_) s += ", " + std::to_string(arq_->retransmissions()) + " retransmissions";
  if (duplicator_) s += ", " + std::to_string(duplicated_) + " duplicates";
  return s;
}

}  // namespace tracemod
