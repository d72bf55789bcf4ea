// The live counters: the page's sequence lock, the rates between snapshots, what queues add (a link's offered
// capacity, drops by cause), and --meter's line.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <fstream>

#include "disciplines/queue_factory.hh"
#include "fake.hh"
#include "link/link_queue.hh"
#include "link/trace.hh"
#include "live/meter.hh"
#include "live/metrics.hh"
#include "live/page.hh"
#include "live/publisher.hh"
#include "live/rates.hh"
#include "live/reader.hh"
#include "top/render.hh"

namespace tracemod {
namespace {

constexpr Nanos kMs = kMillisecond;

live::Snapshot at(Nanos t, uint64_t out_bytes, uint64_t departures, Nanos sojourn_sum) {
  live::Snapshot s{};
  s.published = t;
  s.dir[0].value[live::kDelivered] = out_bytes;
  s.dir[0].value[live::kArrived] = out_bytes;
  s.dir[0].value[live::kDeparted] = departures;
  s.dir[0].value[live::kDelay] = static_cast<uint64_t>(sojourn_sum);
  return s;
}

TEST(LivePage, ASnapshotReadsBackAsWritten) {
  live::Page page{};
  live::Snapshot s = at(5 * kMs, 1500, 1, 2 * kMs);
  s.dir[1].value[live::kDropsAqm] = 7;
  live::write_snapshot(page, s);
  live::Snapshot out{};
  ASSERT_TRUE(live::read_snapshot(page, out));
  EXPECT_EQ(out.published, 5 * kMs);
  EXPECT_EQ(out.dir[1].value[live::kDropsAqm], 7u);
  EXPECT_EQ(page.seq.load() % 2, 0u);
}

TEST(LivePage, AReaderRefusesASnapshotBeingWritten) {
  live::Page page{};
  page.seq.store(1);  // a writer in the middle of its copy
  live::Snapshot out{};
  EXPECT_FALSE(live::read_snapshot(page, out, 10));
}

// A page file as a shell's publisher writes it (VALID), or one whose header is not written yet; holding S.
void write_page(const std::string& path, bool valid, const live::Snapshot& s = {}) {
  live::Page page{};
  page.snapshot = s;
  if (valid) {
    std::memcpy(page.header.magic, live::kMagic, sizeof page.header.magic);
    page.header.version = live::kVersion;
    page.header.size = sizeof(live::Page);
    page.header.pid = getpid();
    page.header.metrics = static_cast<uint32_t>(live::metrics().size());
    page.header.fingerprint = live::metrics_fingerprint();
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
  b.dir[0].value[live::kOffered] = 1000000;
  b.dir[0].value[live::kDropsQueue] = b.dir[0].value[live::kDropsTotal] = 50;
  b.dir[0].value[live::kQueuedBytes] = 100000;
  const live::Rates r = live::rates_between(a, b);
  EXPECT_DOUBLE_EQ(r.seconds, 0.5);
  EXPECT_DOUBLE_EQ(r.dir[0][live::kDelivered], 12e6);
  EXPECT_DOUBLE_EQ(r.dir[0][live::kOffered], 16e6);
  EXPECT_DOUBLE_EQ(r.dir[0][live::kDropsQueue], 100);
  EXPECT_DOUBLE_EQ(r.dir[0][live::kDropsTotal], 100);
  EXPECT_DOUBLE_EQ(r.dir[0][live::kDelay], 20);
  EXPECT_DOUBLE_EQ(r.dir[0][live::kQueuedBytes], 100000);  // a level: as the later snapshot holds it
  EXPECT_LT(r.dir[1][live::kOffered], 0);                   // no capacity: none shown
  EXPECT_LT(r.dir[1][live::kDelay], 0);                     // nothing sent: no delay
}

// A page holds whatever its writer put there: a level past 2^64 once a double saturates, never converts out of
// range (undefined behaviour).
TEST(LiveRates, AFigureAsAWholeNumberSaturates) {
  EXPECT_EQ(live::whole_number(3.7), 3u);
  EXPECT_EQ(live::whole_number(-1), 0u);
  EXPECT_EQ(live::whole_number(static_cast<double>(UINT64_MAX)), UINT64_MAX);  // rounds up to 2^64
  EXPECT_EQ(live::whole_number(1e300), UINT64_MAX);
  live::Snapshot a = at(0, 0, 0, 0), b = a;
  b.published = 1000 * kMs;
  b.dir[0].value[live::kQueuedBytes] = b.dir[0].value[live::kQueuedPackets] = UINT64_MAX;
  const std::string line = live::meter_line(live::rates_between(a, b), 0);
  EXPECT_NE(line.find("q 18446744073709551615p 18446744073710MB"), std::string::npos) << line;
}

TEST(LiveMeter, OneLineForBothDirections) {
  live::Snapshot a = at(0, 0, 0, 0), b = at(1000 * kMs, 1500000, 1000, 1000 * 5 * kMs);
  b.dir[0].limited = 1;
  b.dir[0].value[live::kOffered] = 1500000;
  b.dir[0].value[live::kQueuedPackets] = 3;
  std::strcpy(b.dir[1].state, "off");
  const std::string line = live::meter_line(live::rates_between(a, b), 0);
  EXPECT_EQ(line.rfind("up 12.0 / 12.0 Mbit/s q 3p 0B 5.0ms drop 0/s | down 0.0 Mbit/s", 0), 0u) << line;
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

// A full droptail link of 12 Mbit/s after a second: what the publisher reads of it, row by row.
struct LoadedLink {
  BufferPool pool;
  LinkQueue q{std::make_unique<ConstantRate>(12000000), 0, kNever,
              make_queue_discipline("--uplink-queue-args", "droptail", "packets=2", RandomStream(1, 0)), pool, nullptr};
  FlowCounters flow;
  LoadedLink() {
    fake::CollectSink out;
    q.dequeue_ready(1000 * kMs, out);
    for (int i = 0; i < 5; ++i) q.enqueue(fake::udp4(pool, 1472, 1000 * kMs, static_cast<uint16_t>(i)), 1000 * kMs);
    flow.in_bytes = 5 * 1500;  // as the ferry counts them: 2 queued, 3 dropped, none out
  }
  live::Snapshot snapshot(Nanos published) {
    live::Snapshot s{};
    s.published = published;
    live::add_direction(s.dir[0], q, flow, 2 * kMs);
    return s;
  }
};

TEST(LivePublisher, EachRowReadsItsCounterFromTheLink) {
  LoadedLink link;
  const live::Snapshot s = link.snapshot(kMs);
  EXPECT_EQ(s.dir[0].limited, 1u);
  EXPECT_EQ(s.dir[0].value[live::kOffered], 1000u * 1500);
  EXPECT_EQ(s.dir[0].value[live::kQueuedPackets], 2u);
  EXPECT_EQ(s.dir[0].value[live::kQueuedBytes], 2u * 1500);  // in, less out, less dropped
  EXPECT_EQ(s.dir[0].value[live::kDropsQueue], 3u);
  EXPECT_EQ(s.dir[0].value[live::kDropsTotal], 3u);
  EXPECT_EQ(s.dir[0].value[live::kInPackets], 5u);
  EXPECT_EQ(s.dir[0].value[live::kDelayMax], 2u * kMs);
  live::Snapshot twice = s;
  live::add_direction(twice.dir[0], link.q, link.flow, 1 * kMs);  // a second link: counts add, peaks do not
  EXPECT_EQ(twice.dir[0].value[live::kDropsQueue], 6u);
  EXPECT_EQ(twice.dir[0].value[live::kDelayMax], 2u * kMs);
}

// A metric added as one row of the table: the publisher reads it from the link, the page carries it, and
// tm-top's text view, its JSON (with the web page's history) and the line the web page and --meter show all
// hold it, with nothing else changed.
TEST(LiveMetrics, ARowAddedToTheTableReachesEveryView) {
  fake::TempDir dir;
  const std::string path = dir.path() + "/page";
  write_page(path, true);  // published from the table without the row
  live::Metric row;
  row.key = "dropped_bytes";
  row.total = "dropped_bytes_since_start";
  row.kind = live::MetricKind::kLevel;
  row.integer = row.history = true;
  row.read = [](const live::MetricSource& s) { return s.stats.dropped_bytes; };
  row.before = "  lost ";
  row.text = [](double v) { return std::to_string(live::whole_number(v)) + "b"; };
  const live::ExtraMetric extra(row);
  EXPECT_THROW(live::LivePage{path}, Error);  // another table's page is refused, not misread

  LoadedLink link;
  const uint64_t held = link.q.stats().dropped_bytes;
  ASSERT_GT(held, 0u);
  EXPECT_EQ(link.snapshot(0).dir[0].value[extra.index()], held);
  live::Monitor monitor;
  const std::map<pid_t, std::string> pages = {{getpid(), path}};
  for (Nanos t : {1000 * kMs, 2000 * kMs}) {
    write_page(path, true, link.snapshot(t));
    monitor.refresh(pages, t);
  }
  ASSERT_EQ(monitor.shells().size(), 1u);
  const std::string shown = "  lost " + std::to_string(held) + "b";
  const std::string text = top::text_view(monitor.shells(), 0);
  EXPECT_NE(text.find(shown), std::string::npos) << text;
  const std::string json = top::json_view(monitor.shells(), 5);
  for (const std::string& field : {"\"dropped_bytes\": " + std::to_string(held), "\"dropped_bytes_since_start\": " +
                                   std::to_string(held), "\"history_dropped_bytes\": [" + std::to_string(held)})
    EXPECT_NE(json.find(field), std::string::npos) << field << " in " << json;
  EXPECT_NE(json.find(shown), std::string::npos) << json;  // "text": the line the web page shows
  EXPECT_NE(live::meter_line(monitor.shells()[0]->recent, 0).find(" lost " + std::to_string(held) + "b"),
            std::string::npos);
}

}  // namespace
}  // namespace tracemod
