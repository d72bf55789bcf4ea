// CoDel (RFC 8289): drops on dequeue when the sojourn time of the packets leaving has stayed above TARGET for
// at least INTERVAL, then at intervals of INTERVAL/sqrt(count) while it stays above. The sojourn time is
// measured at the opportunity that serves the queue. With ECN, a drop that falls on an ECN-capable packet marks
// it CE and lets it through instead (as Linux's codel does: the mark counts as that interval's drop).
#pragma once

#include <string>

#include "disciplines/queue_discipline.hh"

namespace tracemod {

// Mahimahi requires all of them; the RFC's recommended times are here for tests.
struct CodelParams {
  Nanos target = 5 * kMillisecond, interval = 100 * kMillisecond;
  QueueLimits limits;  // tail drop beyond these, as in Mahimahi
  bool ecn = false;
};

class CodelQueue : public QueueDiscipline {
 public:
  // MAXPACKET of the RFC: a queue holding no more than one MTU of IP bytes is never above target.
  static constexpr uint64_t kMaxPacketBytes = 1500;

  explicit CodelQueue(const CodelParams& params, uint64_t memory_limit = kMemoryLimit)
      : QueueDiscipline(memory_limit), params_(params) {}
  void enqueue(QueuedPacket&& p, Nanos now, DropSink& drops) override;
  bool dequeue(QueuedPacket& out, Nanos now, DropSink& drops) override;
  // A drop must hit one wire packet, not a burst of them.
  bool takes_whole(const QueuedPacket&) const override { return false; }
  std::string describe() const override;

  bool dropping() const { return dropping_; }
  uint32_t count() const { return count_; }

 private:
  bool take_checked(QueuedPacket& out, Nanos now, bool& ok_to_drop);
  void enter_dropping(Nanos now);
  Nanos control_law(Nanos t) const;

  CodelParams params_;
  bool above_ = false;     // sojourn time above target since first_above_ - interval
  Nanos first_above_ = 0;  // when being above target makes dropping allowed
  Nanos drop_next_ = 0;    // when the next drop is due in dropping state
  uint32_t count_ = 0, lastcount_ = 0;
  bool dropping_ = false;
};

}  // namespace tracemod
