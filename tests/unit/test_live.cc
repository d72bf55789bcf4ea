// The live counters: the page's sequence lock, the rates between snapshots, what queues add (a link's offered
// capacity, drops by cause), and --meter's line.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <fstream>

#include "fake.hh"
#include "link/link_queue.hh"
#include "link/queue_factory.hh"
#include "link/trace.hh"
#include "live/meter.hh"
#include "live/page.hh"
#include "live/rates.hh"
#include "live/reader.hh"

namespace tracemod {
namespace {

constexpr Nanos kMs = kMillisecond;

live::Snapshot at(Nanos t, uint64_t out_bytes, uint64_t departures, Nanos sojourn_sum) {
  live::Snapshot s{};
  s.published = t;
  s.dir[0].out_bytes = out_bytes;
  s.dir[0].in_bytes = out_bytes;
  s.dir[0].departures = departures;
  s.dir[0].sojourn_sum = sojourn_sum;
  return s;
}

TEST(LivePage, ASnapshotReadsBackAsWritten) {
  live::Page page{};
  live::Snapshot s = at(5 * kMs, 1500, 1, 2 * kMs);
  s.dir[1].dropped[static_cast<int>(DropCause::kAqm)] = 7;
  live::write_snapshot(page, s);
  live::Snapshot out{};
  ASSERT_TRUE(live::read_snapshot(page, out));
  EXPECT_EQ(out.published, 5 * kMs);
  EXPECT_EQ(out.dir[1].dropped[static_cast<int>(DropCause::kAqm)], 7u);
  EXPECT_EQ(page.seq.load() % 2, 0u);
}

TEST(LivePage, AReaderRefusesASnapshotBeingWritten) {
  live::Page page{};
  page.seq.store(1);  // a writer in the middle of its copy
  live::Snapshot out{};
  EXPECT_FALSE(live::read_snapshot(page, out, 10));
}

// A page file as a shell's publisher writes it (VALID), or one whose header is not written yet.
void write_page(const std::string& path, bool valid) {
  live::Page page{};
  if (valid) {
    std::memcpy(page.header.magic, live::kMagic, sizeof page.header.magic);
    page.header.version = live::kVersion;
    page.header.size = sizeof(live::Page);
    page.header.pid = getpid();
  }
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(reinterpret_cast<const char*>(&page), sizeof page);
}

// Found refusing a shell for good when its page was looked at before the shell wrote it (and a later shell
// that reused the pid).
TEST(LiveMonitor, APageNotWrittenYetIsReadOnceItIsAndAReusedPidIsAnotherShell) {
  fake::TempDir dir;
  const std::string path = dir.path() + "/page";
  const std::map<pid_t, std::string> pages = {{getpid(), path}};
  write_page(path, false);
  live::Monitor monitor;
  monitor.refresh(pages, 0);
  EXPECT_TRUE(monitor.shells().empty());
  write_page(path, true);
  monitor.refresh(pages, live::Monitor::kRetry / 2);  // not tried again at every refresh (another user's page)
  EXPECT_TRUE(monitor.shells().empty());
  monitor.refresh(pages, live::Monitor::kRetry);
  ASSERT_EQ(monitor.shells().size(), 1u);
  EXPECT_EQ(monitor.shells()[0]->pid, getpid());

  monitor.refresh({}, 2 * live::Monitor::kRetry);  // the shell ended; the pid is refused, then reused
  write_page(path, false);
  monitor.refresh(pages, 2 * live::Monitor::kRetry);
  monitor.refresh({}, 2 * live::Monitor::kRetry);
  write_page(path, true);
  monitor.refresh(pages, 2 * live::Monitor::kRetry);
  EXPECT_EQ(monitor.shells().size(), 1u);
}

TEST(LiveRates, RatesAndTheMeanDelayOfTheFramesSentInBetween) {
  live::Snapshot a = at(0, 0, 0, 0), b = at(500 * kMs, 750000, 500, 500 * 20 * kMs);
  b.dir[0].limited = 1;
  b.dir[0].offered_bytes = 1000000;
  b.dir[0].dropped[static_cast<int>(DropCause::kQueue)] = 50;
  b.dir[0].in_bytes = 900000;
  b.dir[0].dropped_bytes = 50000;
  const live::Rates r = live::rates_between(a, b);
  EXPECT_DOUBLE_EQ(r.seconds, 0.5);
  EXPECT_DOUBLE_EQ(r.dir[0].delivered_bps, 12e6);
  EXPECT_DOUBLE_EQ(r.dir[0].offered_bps, 16e6);
  EXPECT_DOUBLE_EQ(r.dir[0].drops_per_s[static_cast<int>(DropCause::kQueue)], 100);
  EXPECT_DOUBLE_EQ(r.dir[0].drops_total_per_s, 100);
  EXPECT_DOUBLE_EQ(r.dir[0].delay_ms, 20);
  EXPECT_EQ(r.dir[0].queued_bytes, 100000u);  // in, less out, less dropped
  EXPECT_LT(r.dir[1].offered_bps, 0);         // no capacity: none shown
  EXPECT_LT(r.dir[1].delay_ms, 0);            // nothing sent: no delay
}

TEST(LiveMeter, OneLineForBothDirections) {
  live::Snapshot a = at(0, 0, 0, 0), b = at(1000 * kMs, 1500000, 1000, 1000 * 5 * kMs);
  b.dir[0].limited = 1;
  b.dir[0].offered_bytes = 1500000;
  b.dir[0].queued_packets = 3;
  std::strcpy(b.dir[1].state, "off");
  const std::string line = live::meter_line(live::rates_between(a, b), 0);
  EXPECT_EQ(line.rfind("up 12.0/12.0 Mbit/s q 3p 0B 5.0ms drop 0/s | down 0.0 Mbit/s", 0), 0u) << line;
  EXPECT_NE(line.find(" off"), std::string::npos) << line;
  EXPECT_EQ(live::meter_line(live::rates_between(a, b), 30).size(), 30u);
}

// A constant-rate link offers its capacity whether or not anything waits, and a full droptail queue's drops
// count as the queue's.
TEST(LiveLink, OfferedCapacityAndQueueDrops) {
  BufferPool pool;
  LinkQueue q(std::make_unique<ConstantRate>(12000000), 0, kNever,
              make_queue_discipline("--uplink-queue-args", "droptail", "packets=2", RandomStream(1, 0)), pool, nullptr);
  fake::CollectSink out;
  q.dequeue_ready(1000 * kMs, out);  // idle for a second: 1000 opportunities of 1500 bytes
  QueueLive live;
  q.live(live);
  EXPECT_TRUE(live.limited);
  EXPECT_EQ(live.offered_bytes, 1000u * 1500);
  for (int i = 0; i < 5; ++i) q.enqueue(fake::udp4(pool, 1472, 1000 * kMs, static_cast<uint16_t>(i)), 1000 * kMs);
  EXPECT_EQ(q.stats().dropped_by[static_cast<int>(DropCause::kQueue)], 3u);
  EXPECT_EQ(q.stats().dropped_bytes, 3u * 1500);
}

}  // namespace
}  // namespace tracemod
