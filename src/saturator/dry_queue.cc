#include "saturator/dry_queue.hh"

#include <algorithm>

namespace tracemod::record {

DryQueue::Arrival DryQueue::add(Nanos send, Nanos recv) {
  const Nanos owd = recv - send;
  Arrival a;
  if (!started_ || owd < min_owd_) min_owd_ = owd;
  a.qdelay = owd - min_owd_;
  if (started_) {
    a.gap = recv - last_recv_;
    const Nanos reached = send + min_owd_;
    if (reached > batch_head_) a.dry = true, a.dry_from = batch_head_, a.dry_to = reached;
  }
  if (!started_ || recv - last_recv_ >= kBatchGap || recv - batch_head_ >= kBatchSpan) batch_head_ = recv;
  started_ = true;
  last_recv_ = recv;
  return a;
}

ShortfallEstimate::Bin& ShortfallEstimate::bin(int64_t index) {
  if (index < first_open_) index = first_open_;  // already closed: the earliest still open stands in
  while (first_open_ + static_cast<int64_t>(open_.size()) <= index) open_.emplace_back();
  return open_[static_cast<size_t>(index - first_open_)];
}

void ShortfallEstimate::add(Nanos recv, const DryQueue::Arrival& a) {
  if (!started_) started_ = true, first_ = recv;
  const int64_t now = (recv - first_) / kMillisecond;
  int64_t from = 0, to = -1;  // the milliseconds this arrival finds dry (none)
  if (a.dry) {
    ++moments_;
    dry_time_ += a.dry_to - a.dry_from;
    to = std::min(now, (std::max(a.dry_to, first_) - first_) / kMillisecond);
    from = (std::max(a.dry_from, first_) - first_) / kMillisecond;
  }
  // The milliseconds before NOW - 1 close below. Those of a long gap without arrivals are closed in bulk first,
  // never held: a gap of hours (a dead link, a record's time jumping) costs neither memory nor time.
  if (now - 1 - (first_open_ + static_cast<int64_t>(open_.size())) > kSameAfter) {
    close_gap(now, from, to);
    from = std::max(from, now - 1);
  }
  for (int64_t i = from; i <= to; ++i) bin(i).dry = true;
  ++bin(now).arrivals;
  close_before(now - 1);  // a batch's first arrival, where dry moments start, is at most 1 ms back
}

void ShortfallEstimate::finish() {
  close_before(first_open_ + static_cast<int64_t>(open_.size()));
}

void ShortfallEstimate::close_before(int64_t index) {
  while (first_open_ < index && !open_.empty()) {
    const Bin b = open_.front();
    open_.pop_front();
    ++first_open_;
    close(b);
  }
  if (open_.empty()) first_open_ = std::max(first_open_, index);
}

void ShortfallEstimate::close(const Bin& b) {
  const double peak = last_.empty() ? 0.0 : static_cast<double>(*std::max_element(last_.begin(), last_.end()));
  last_.push_back(b.arrivals);
  if (last_.size() > kPeakSpan) last_.pop_front();
  if (b.dry) {
    missed_ += std::max(0.0, std::max(recent_rate(), peak) - static_cast<double>(b.arrivals));
    return;
  }
  if (backlog_.size() < kRateSpan)
    backlog_.push_back(b.arrivals);
  else
    backlog_[backlog_next_] = b.arrivals;
  backlog_next_ = (backlog_next_ + 1) % kRateSpan;
}

// What add() would do with the milliseconds before NOW - 1, the dry ones FROM to TO, when most of them lie in a
// gap after the open ones: marks and closes the open ones, then closes the gap's empty milliseconds as runs.
void ShortfallEstimate::close_gap(int64_t now, int64_t from, int64_t to) {
  const int64_t open_end = first_open_ + static_cast<int64_t>(open_.size());
  for (int64_t i = from; i <= std::min(to, open_end - 1); ++i) bin(i).dry = true;
  const int64_t gap = first_open_ + static_cast<int64_t>(open_.size());  // bin() may have opened one
  close_before(gap);
  const int64_t lo = std::max(from, gap), hi = std::min(to, now - 2);
  if (lo > hi) {
    close_empty(now - 1 - gap, false);
    return;
  }
  close_empty(lo - gap, false);
  close_empty(hi - lo + 1, true);
  close_empty(now - 2 - hi, false);
}

// Closes COUNT milliseconds without arrivals after the open ones (there are none), as close_before would: after
// kSameAfter of them every further one changes nothing but missed(), by the same amount.
void ShortfallEstimate::close_empty(int64_t count, bool dry) {
  for (int64_t i = 0; i < std::min<int64_t>(count, kSameAfter); ++i) close(Bin{0, dry});
  // Dry, they add the recent rate each (the peak is 0 by now); not dry, they leave kRateSpan zeros.
  if (dry && count > kSameAfter) missed_ += static_cast<double>(count - kSameAfter) * recent_rate();
  first_open_ += count;
}

double ShortfallEstimate::recent_rate() const {
  uint64_t arrivals = 0;
  size_t ms = 0, i = backlog_next_;
  while (ms < backlog_.size() && arrivals < kRateArrivals) {
    i = (i + backlog_.size() - 1) % backlog_.size();
    arrivals += backlog_[i];
    ++ms;
  }
  return ms ? static_cast<double>(arrivals) / static_cast<double>(ms) : 0.0;
}

}  // namespace tracemod::record
