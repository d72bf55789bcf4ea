// tm-multipath's notice=: a device that notices its path's link has gone dead (Wi-Fi beacon loss, LTE radio link
// failure) withdraws the path's addresses from MPTCP, and adds them back once the link offers opportunities
// again. NoticeSchedule is when, computed from the traces alone (pure, unit-tested); PathNoticeTask does it, on
// the shell's event loop, through the path manager of the command's namespace. docs/ARCHITECTURE.md §4.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "packet/event_loop.hh"
#include "util/clock.hh"

namespace tracemod {

class MptcpPathManager;

// One direction's withdrawals within one period of its trace: from NOTICE into each gap between opportunities
// longer than NOTICE until the gap's end. The period's start counts as an opportunity (it is the previous
// period's last line, and the link's start), so the gap before the first line is the wrap-around gap.
class NoticeWindows {
 public:
  NoticeWindows(Nanos notice, uint64_t period_ms, bool once);
  // The next distinct opportunity time of the period, in increasing order (the last one is the period).
  void opportunity(uint64_t ms);
  // Whether the path is withdrawn at T (from the links' start), and the next window start or end after T.
  bool withdrawn_at(Nanos t) const;
  Nanos next_boundary(Nanos t) const;

 private:
  Nanos notice_, period_;
  bool once_;
  Nanos last_ = 0;                 // the previous opportunity given
  std::vector<Nanos> boundaries_;  // start, end, start, end... within [0, period], increasing
};

// When a path is withdrawn: while either direction is (the union of its two directions' windows).
class NoticeSchedule {
 public:
  NoticeSchedule(Nanos notice, std::vector<NoticeWindows> directions);
  Nanos notice() const { return notice_; }
  bool withdrawn_at(Nanos t) const;
  // The first time after T at which withdrawn_at changes; kNever if it never does.
  Nanos next_change(Nanos t) const;

 private:
  Nanos notice_;
  std::vector<NoticeWindows> directions_;
};

// Path PATH's notice= as the command line gives it to the shell.
struct PathNotice {
  size_t path;  // 0-based
  NoticeSchedule schedule;
};

// A path's two MPTCP endpoints (IPv4 and IPv6), their ids and interface.
struct PathEndpoints {
  std::string address4, address6;
  uint8_t id4, id6;
  int ifindex;
};
// Path I's endpoint ids: 2I+1 (IPv4) and 2I+2 (IPv6).
inline uint8_t endpoint_id(size_t path, bool v6) {
  return static_cast<uint8_t>(2 * path + (v6 ? 2 : 1));
}

// Withdraws and restores a path's endpoints as its schedule says, from START (the links' time 0). PM's socket
// must be of the command's namespace. A refused request is said once on stderr; the run goes on.
class PathNoticeTask : public LoopTask {
 public:
  PathNoticeTask(std::string tool, const PathNotice& notice, PathEndpoints endpoints,
                 std::unique_ptr<MptcpPathManager> pm, Nanos start, bool verbose);
  ~PathNoticeTask() override;
  Nanos due() const override { return due_; }
  void run(Nanos now) override;

 private:
  void apply(bool withdraw, Nanos at);

  std::string tool_;
  size_t path_;
  NoticeSchedule schedule_;
  PathEndpoints endpoints_;
  std::unique_ptr<MptcpPathManager> pm_;
  Nanos start_, due_;
  bool verbose_, withdrawn_ = false, said_ = false;
};

}  // namespace tracemod
