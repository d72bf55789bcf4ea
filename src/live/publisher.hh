// A shell's side of the live counters: the page (live/page.hh) in a memfd, rewritten every kPeriod by the
// event loop from the queues' and the ferry's counters, and, with --meter, the one-line status drawn from it.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "live/meter.hh"
#include "live/page.hh"
#include "packet/event_loop.hh"
#include "packet/ferry.hh"
#include "packet/packet_queue.hh"
#include "util/file_descriptor.hh"

namespace tracemod::live {

// Adds one link's direction to D, row by row of the metrics table: queue Q, the ferry's FLOW counters and the
// longest stay since the last snapshot. What the publisher does for each link and direction.
void add_direction(Direction& d, const PacketQueue& q, const FlowCounters& flow, Nanos sojourn_max);

// One link as a shell's page shows it: its two queues, where each direction's flow counters come from, and the
// ferry's own losses (null for a fused level: the outermost level shows the ferry's).
struct LiveSource {
  const PacketQueue* queues[2];
  std::function<FlowCounters(int d)> flow;  // direction D's counters, sojourn_max since the last call
  const FerryCounters* ferry = nullptr;
};

// The sources of LINKS as one shell's own ferries and queues.
std::vector<LiveSource> ferry_sources(const std::vector<FerryLink>& links);

// An empty page, to be published by a Publisher given it, for another process that inherits the descriptor
// (a fused level of a stack: its own process holds the page, so tm-top finds the page under that process).
FileDescriptor make_page();

struct ShellFacts {
  std::string tool, tag, arguments, command;
  int depth = 0;
};

class Publisher : public LoopTask {
 public:
  static constexpr Nanos kPeriod = 100 * kMillisecond;

  // Publishes FACTS and, from now on, the counters of SOURCES (all must outlive it), summed (tm-multipath's
  // paths: the shell's whole traffic each way). Throws Error if the page cannot be made. With PAGE (make_page),
  // writes that page and keeps only its mapping: the process the descriptor was handed to holds it.
  Publisher(const ShellFacts& facts, std::vector<LiveSource> sources, Nanos now, FileDescriptor page = {});
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

  std::vector<LiveSource> sources_;
  FileDescriptor fd_;
  Page* page_ = nullptr;
  Nanos due_;
  std::unique_ptr<Meter> meter_;
};

}  // namespace tracemod::live
