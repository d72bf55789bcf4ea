#include "record/dry_queue.hh"

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
  if (a.dry) {
    ++moments_;
    dry_time_ += a.dry_to - a.dry_from;
    const int64_t to = std::min(now, (std::max(a.dry_to, first_) - first_) / kMillisecond);
    for (int64_t i = (std::max(a.dry_from, first_) - first_) / kMillisecond; i <= to; ++i) bin(i).dry = true;
  }
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
    const double peak = last_.empty() ? 0.0 : static_cast<double>(*std::max_element(last_.begin(), last_.end()));
    last_.push_back(b.arrivals);
    if (last_.size() > kPeakSpan) last_.pop_front();
    if (b.dry) {
      missed_ += std::max(0.0, std::max(recent_rate(), peak) - static_cast<double>(b.arrivals));
      continue;
    }
    if (backlog_.size() < kRateSpan)
      backlog_.push_back(b.arrivals);
    else
      backlog_[backlog_next_] = b.arrivals;
    backlog_next_ = (backlog_next_ + 1) % kRateSpan;
  }
  if (open_.empty()) first_open_ = std::max(first_open_, index);
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
