// A shell's side of the live counters: the page (live/page.hh) in a memfd, rewritten every kPeriod by the
// event loop from the queues' and the ferry's counters, and, with --meter, the one-line status drawn from it.
#pragma once

#include <memory>
#include <string>

#include "live/meter.hh"
#include "live/page.hh"
#include "packet/event_loop.hh"
#include "packet/ferry.hh"
#include "packet/packet_queue.hh"
#include "util/file_descriptor.hh"

namespace tracemod::live {

struct ShellFacts {
  std::string tool, tag, arguments, command;
  int depth = 0;
};

class Publisher : public LoopTask {
 public:
  static constexpr Nanos kPeriod = 100 * kMillisecond;

  // Publishes FACTS and, from now on, the counters of FERRY and the two queues (all must outlive it). Throws
  // Error if the page cannot be made.
  Publisher(const ShellFacts& facts, Ferry& ferry, const PacketQueue& up, const PacketQueue& down, Nanos now);
  ~Publisher() override;
  Publisher(const Publisher&) = delete;
  Publisher& operator=(const Publisher&) = delete;

  // Draws --meter from the counters as they are published.
  void set_meter(std::unique_ptr<Meter> meter) { meter_ = std::move(meter); }
  Nanos due() const override { return due_; }
  void run(Nanos now) override;
  // The last snapshot, marked ended: the command has exited.
  void finish(Nanos now);

 private:
  Snapshot collect(Nanos now);

  Ferry& ferry_;
  const PacketQueue* queues_[2];
  FileDescriptor fd_;
  Page* page_ = nullptr;
  Nanos due_;
  std::unique_ptr<Meter> meter_;
};

}  // namespace tracemod::live
