#include "link/link_queue.hh"

#include <algorithm>
#include <sstream>

#include "packet/segmenter.hh"

namespace tracemod {

void Lateness::add(Nanos late) {
  late = std::max<Nanos>(late, 0);
  ++buckets_[std::min<uint64_t>(static_cast<uint64_t>(late / 1000), buckets_.size() - 1)];
  ++count_;
  max_ = std::max(max_, late);
}

uint64_t Lateness::quantile_us(double q) const {
  if (count_ == 0) return 0;
  const uint64_t rank = std::max<uint64_t>(1, static_cast<uint64_t>(q * static_cast<double>(count_) + 0.999999));
  uint64_t seen = 0;
  for (size_t i = 0; i < buckets_.size(); ++i)
    if ((seen += buckets_[i]) >= rank) return i;
  return buckets_.size() - 1;
}

LinkQueue::LinkQueue(std::unique_ptr<OpportunitySource> source, Nanos start, Nanos end,
                     std::unique_ptr<QueueDiscipline> discipline, BufferPool& pool, std::shared_ptr<LinkLog> log)
    : source_(std::move(source)),
      start_(start),
      end_(end == kNever ? kNever : start + end),
      clock_(start),
      discipline_(std::move(discipline)),
      pool_(pool),
      log_(std::move(log)),
      log_current_(log_ ? log_->file() : nullptr) {}

// The K-th opportunity not yet used (absolute time), fetched from the source as needed.
Nanos LinkQueue::peek(size_t k) const {
  while (ahead_.size() <= k) {
    const Nanos t = source_->next();
    if (t == kNever) return kNever;
    ahead_.push_back(start_ + t);
  }
  return ahead_[k];
}

void LinkQueue::pop_opportunity() {
  ahead_.pop_front();
  ++passed_;
}

// Emulates the link up to T: every opportunity at or before T is used, or lost if nothing waits. An idle link
// without a log skips its opportunities wholesale (a trace may be hours long).
void LinkQueue::advance(Nanos t) {
  if (t <= clock_) return;
  clock_ = t;
  for (Nanos o = peek(0); o <= t; o = peek(0)) {
    if (idle() && !log_) {
      while (!ahead_.empty() && ahead_.front() <= t) pop_opportunity();
      if (ahead_.empty()) passed_ += source_->skip_before(t - start_ + 1);
      continue;
    }
    pop_opportunity();
    serve(o);
  }
}

// Lazily emulated, the link would otherwise spend the opportunities of a stall on what waited in the queue and
// in the ferry's receive ring, with departure times in the past: all of it would leave at once when the ferry
// runs again, faster than any link carries it.
void LinkQueue::stalled(Nanos from, Nanos to) {
  advance(from);
  if (to <= clock_) return;
  while (!ahead_.empty() && ahead_.front() <= to) pop_opportunity();
  if (ahead_.empty()) source_->skip_before(to - start_ + 1);  // by arithmetic: a stall may be long
  stalled_for_ += to - clock_;
  if (from > stall_end_) ++stalls_;  // the loop and the ferry may each see one stall: counted once
  clock_ = stall_end_ = to;
}

// One opportunity: 1500 bytes of credit for the packet in transit and those behind it.
void LinkQueue::serve(Nanos when) {
  if (log_) log_->opportunity(when);
  int64_t credit = static_cast<int64_t>(kOpportunityBytes);
  while (credit > 0 && (transit_.busy || start_next(when, credit))) {
    const int64_t used = std::min(credit, transit_.bytes_left);
    credit -= used;
    transit_.bytes_left -= used;
    if (transit_.bytes_left == 0) depart(when);
  }
}

// Takes the next packet into transit; a GSO frame whose opportunities would spread over more than
// kMaxGsoSpread is split first, so that none of its wire packets leaves far behind its own opportunity.
bool LinkQueue::start_next(Nanos when, int64_t credit) {
  QueuedPacket q;
  if (!split_.empty())
    q = split_.pop_front();
  else if (!discipline_->dequeue(q, when, *this))
    return false;
  if (q.segments > 1) {
    constexpr int64_t kCredit = static_cast<int64_t>(kOpportunityBytes);
    const int64_t beyond = static_cast<int64_t>(q.ip_bytes) - credit;
    const size_t more = beyond <= 0 ? 0 : static_cast<size_t>((beyond + kCredit - 1) / kCredit);
    if (more > 0 && peek(more - 1) - when > kMaxGsoSpread && split(q, split_)) q = split_.pop_front();
  }
  transit_.bytes_left = q.ip_bytes;
  transit_.q = std::move(q);
  transit_.busy = true;
  return true;
}

// Splits Q into its wire packets, appended to INTO in order (INTO must be empty or Q's successor queue).
bool LinkQueue::split(QueuedPacket& q, Ring<QueuedPacket>& into) {
  const SegmentShape shape = segment_shape(q.packet);
  uint32_t i = 0;
  return segment_gso(q.packet, pool_, [&](Packet&& s) {
    into.push_back(QueuedPacket{std::move(s), q.enqueued, shape.ip_bytes(i++), 1, q.lane});
  });
}

void LinkQueue::depart(Nanos when) {
  QueuedPacket& q = transit_.q;
  transit_.busy = false;
  if (log_) {
    const SegmentShape shape = segment_shape(q.packet);
    for (uint32_t i = 0; i < q.segments; ++i) log_->departure(when, shape.ip_bytes(i), q.enqueued);
  }
  // Out as it departs (ready_ only waits for dequeue_ready); the discipline, not queued_bytes, counts buffers.
  lanes_[q.lane]->count_out(q.segments, 0);
  q.packet.release = when;
  ready_[q.lane].push_back(std::move(q.packet));
}

void LinkQueue::enqueue(int lane, Packet&& p, Nanos now) {
  if (shared()) return merge_.push(lane, std::move(p));
  arrive(lane, std::move(p), now);
}

void LinkQueue::arrive(int lane, Packet&& p, Nanos now) {
  // The kernel's receive time: opportunities before it cannot carry this packet.
  const Nanos arrival = std::clamp(p.arrival, clock_, std::max(clock_, now));
  advance(arrival);
  const SegmentShape shape = segment_shape(p);
  QueueStats& s = lanes_[lane]->counters();
  s.in_packets += shape.count;
  s.queued_packets += shape.count;
  if (log_)
    for (uint32_t i = 0; i < shape.count; ++i) log_->arrival(arrival, shape.ip_bytes(i));
  QueuedPacket q{std::move(p), arrival, shape.total_ip_bytes(), shape.count, lane};
  if (q.segments > 1 && !discipline_->takes_whole(q)) {
    if (split(q, scratch_)) {
      while (!scratch_.empty()) discipline_->enqueue(scratch_.pop_front(), arrival, *this);
      return;
    }
  }
  discipline_->enqueue(std::move(q), arrival, *this);
}

void LinkQueue::dropped(QueuedPacket&& q, Nanos now, DropCause cause) {
  LaneQueue& lane = *lanes_[q.lane];
  lane.count_drop(q.packet, q.segments, now, cause);
  lane.counters().queued_packets -= q.segments;
  if (log_) log_->drop(now, q.segments, q.ip_bytes);
}

void LinkQueue::dequeue_ready(int lane, Nanos now, PacketSink& out) {
  merge_.drain([&](int l, Packet&& p) { arrive(l, std::move(p), now); });
  advance(now);
  while (!ready_[lane].empty()) {
    Packet p = ready_[lane].pop_front();
    lateness_[lane].add(now - p.release);
    out.send(std::move(p));
  }
  log_current_.at(now);
}

Nanos LinkQueue::next_event(int lane) const {
  return std::min(next_release(lane), log_current_.due());
}

// While anything waits, both lanes wake for the next opportunity: it may serve either.
Nanos LinkQueue::next_release(int lane) const {
  if (!merge_.empty()) return merge_.earliest();  // already due: the arrivals wait to be served
  if (!ready_[lane].empty()) return ready_[lane].front().release;
  if (idle()) return finished() ? kNever : end_;
  return peek(0);
}

// Both lanes of a shared medium are offered the same opportunities: each shows the whole capacity.
void LinkQueue::live(int lane, QueueLive& out) const {
  out.limited = true;
  out.offered_bytes = passed_ * kOpportunityBytes;
  out.ce_marked = discipline_->marks(lane);
}

std::string LinkQueue::summary(int lane) const {
  std::ostringstream s;
  s << discipline_->describe() << (lanes_[1 - lane] ? " (shared medium)" : "") << "; ";
  if (discipline_->marks() || discipline_->unmarkable() || discipline_->over_threshold()) {
    s << discipline_->marks() << " marked CE, " << discipline_->unmarkable() << " not ECN-capable dropped";
    if (discipline_->over_threshold())
      s << ", " << discipline_->over_threshold() << " dropped above the marking threshold";
    s << "; ";
  }
  if (stalls_) s << "ferry stalls: " << stalls_ << ", " << stalled_for_ / kMillisecond << " ms in all; ";
  const Lateness& late = lateness_[lane];
  if (late.count() == 0) return s.str() + "no departures";
  s << "departures late by p50 " << late.quantile_us(0.5) << " us, p99 " << late.quantile_us(0.99) << " us, max "
    << late.max() / 1000 << " us";
  return s.str();
}

}  // namespace tracemod
