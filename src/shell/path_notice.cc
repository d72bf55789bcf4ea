#include "shell/path_notice.hh"

#include <algorithm>
#include <functional>
#include <iostream>
#include <utility>

#include "shell/mptcp.hh"
#include "util/error.hh"
#include "util/parse.hh"  // format_ms

namespace tracemod {

NoticeWindows::NoticeWindows(Nanos notice, uint64_t period_ms, bool once)
    : notice_(notice), period_(static_cast<Nanos>(period_ms) * kMillisecond), once_(once) {}

void NoticeWindows::opportunity(uint64_t ms) {
  const Nanos at = static_cast<Nanos>(ms) * kMillisecond;
  if (at - last_ > notice_) boundaries_.insert(boundaries_.end(), {last_ + notice_, at});
  last_ = at;
}

bool NoticeWindows::withdrawn_at(Nanos t) const {
  if (boundaries_.empty() || (once_ && t >= period_)) return false;
  const Nanos offset = once_ ? t : t % period_;
  const auto passed = std::upper_bound(boundaries_.begin(), boundaries_.end(), offset) - boundaries_.begin();
  return passed % 2 == 1;
}

Nanos NoticeWindows::next_boundary(Nanos t) const {
  if (boundaries_.empty()) return kNever;
  const Nanos base = once_ ? 0 : t / period_ * period_;
  if (const auto it = std::upper_bound(boundaries_.begin(), boundaries_.end(), t - base); it != boundaries_.end())
    return base + *it;
  return once_ ? kNever : saturating_add(base + period_, boundaries_.front());
}

NoticeSchedule::NoticeSchedule(Nanos notice, std::vector<NoticeWindows> directions)
    : notice_(notice), directions_(std::move(directions)) {}

bool NoticeSchedule::withdrawn_at(Nanos t) const {
  return std::any_of(directions_.begin(), directions_.end(), [t](const NoticeWindows& d) { return d.withdrawn_at(t); });
}

Nanos NoticeSchedule::next_change(Nanos t) const {
  const bool now = withdrawn_at(t);
  // A boundary of one direction inside the other's window changes nothing: go on to the next. Windows end at
  // opportunities, so the union ends too; the bound only guards against a pathological pair of periods.
  for (int i = 0; i < 1000000; ++i) {
    Nanos next = kNever;
    for (const NoticeWindows& d : directions_) next = std::min(next, d.next_boundary(t));
    if (next == kNever || withdrawn_at(next) != now) return next;
    t = next;
  }
  return kNever;
}

PathNoticeTask::PathNoticeTask(std::string tool, const PathNotice& notice, PathEndpoints endpoints,
                               std::unique_ptr<MptcpPathManager> pm, Nanos start, bool verbose)
    : tool_(std::move(tool)),
      path_(notice.path),
      schedule_(notice.schedule),
      endpoints_(std::move(endpoints)),
      pm_(std::move(pm)),
      start_(start),
      due_(saturating_add(start, schedule_.next_change(0))),
      verbose_(verbose) {}

PathNoticeTask::~PathNoticeTask() = default;

void PathNoticeTask::run(Nanos now) {
  const Nanos t = now - start_;
  if (const bool withdraw = schedule_.withdrawn_at(t); withdraw != withdrawn_) apply(withdraw, t);
  due_ = saturating_add(start_, schedule_.next_change(t));
}

void PathNoticeTask::apply(bool withdraw, Nanos at) {
  const std::string name = tool_ + ": path " + std::to_string(path_ + 1) + ": ";
  const auto attempt = [&](const std::function<void()>& request) {
    try {
      request();
    } catch (const Error& e) {  // the run goes on; once is enough to know the path manager refuses
      if (!said_) std::cerr << name << e.what() << " (not said again; the run goes on)\n";
      said_ = true;
    }
  };
  const PathEndpoints& e = endpoints_;
  if (withdraw) {
    attempt([&] { pm_->remove_endpoint(e.id4); });
    attempt([&] { pm_->remove_endpoint(e.id6); });
  } else {
    attempt([&] { pm_->add_subflow_endpoint(e.address4, e.ifindex, e.id4); });
    attempt([&] { pm_->add_subflow_endpoint(e.address6, e.ifindex, e.id6); });
  }
  withdrawn_ = withdraw;
  if (verbose_)
    std::cerr << name << (withdraw ? "withdrawn from" : "back in") << " MPTCP at " << at / kMillisecond << " ms ("
              << (withdraw ? "no opportunity for " + format_ms(schedule_.notice()) + " ms" : "opportunities again")
              << ")\n";
}

}  // namespace tracemod
