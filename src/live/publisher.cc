#include "live/publisher.hh"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <ctime>
#include <new>

#include "util/error.hh"

namespace tracemod::live {
namespace {

template <size_t N>
void copy_text(char (&to)[N], const std::string& from) {
  const size_t n = std::min(from.size(), N - 1);
  std::memcpy(to, from.data(), n);
  to[n] = '\0';
}

int64_t realtime_now() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

Header header_of(const ShellFacts& facts, Nanos now) {
  Header h{};
  std::memcpy(h.magic, kMagic, sizeof h.magic);
  h.version = kVersion;
  h.size = sizeof(Page);
  h.pid = getpid();
  h.depth = facts.depth;
  h.started = now;
  h.started_unix = realtime_now();
  h.metrics = static_cast<uint32_t>(metrics().size());
  h.fingerprint = metrics_fingerprint();
  copy_text(h.tool, facts.tool);
  copy_text(h.tag, facts.tag);
  copy_text(h.arguments, facts.arguments);
  copy_text(h.command, facts.command);
  return h;
}

}  // namespace

void add_direction(Direction& d, const PacketQueue& q, const FlowCounters& flow, Nanos sojourn_max) {
  QueueLive live;
  q.live(live);
  const MetricSource source{q.stats(), live, flow, sojourn_max};
  const std::vector<Metric>& rows = metrics();
  for (size_t i = 0; i < rows.size(); ++i) {
    const uint64_t v = rows[i].read(source);
    d.value[i] = rows[i].kind == MetricKind::kPeak ? std::max(d.value[i], v) : d.value[i] + v;
  }
  d.limited |= live.limited ? 1 : 0;
  if (!d.state[0]) copy_text(d.state, live.state);
}

std::vector<LiveSource> ferry_sources(const std::vector<FerryLink>& links) {
  std::vector<LiveSource> out;
  for (const FerryLink& k : links) {
    Ferry* ferry = k.ferry;
    out.push_back({{k.queues[0], k.queues[1]},
                   [ferry](int d) {
                     FlowCounters f = ferry->counters().flow[d];
                     f.sojourn_max = ferry->take_sojourn_max(static_cast<Ferry::Direction>(d));
                     return f;
                   },
                   &ferry->counters()});
  }
  return out;
}

FileDescriptor make_page() {
  FileDescriptor fd(static_cast<int>(
      check_syscall("memfd_create (live counters)", memfd_create(kMemfdName, MFD_CLOEXEC | MFD_ALLOW_SEALING))));
  check_syscall("ftruncate (live counters)", ftruncate(fd.get(), sizeof(Page)));
  return fd;
}

Publisher::Publisher(const ShellFacts& facts, std::vector<LiveSource> sources, Nanos now, FileDescriptor page)
    : sources_(std::move(sources)), due_(now + kPeriod) {
  const bool handed_on = page.valid();
  fd_ = handed_on ? std::move(page) : make_page();
  void* m = mmap(nullptr, sizeof(Page), PROT_READ | PROT_WRITE, MAP_SHARED, fd_.get(), 0);
  if (m == MAP_FAILED) throw_errno("mmap (live counters)", errno);
  page_ = new (m) Page{};
  page_->header = header_of(facts, now);
  write_snapshot(*page_, collect(now));
  // Readers map it read-only and cannot resize it: the mode refuses them a writable open of /proc/PID/fd/N,
  // the seals a resize (our own mapping stays writable).
  fchmod(fd_.get(), 0400);
  fcntl(fd_.get(), F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL);
  // Entering a user namespace made the shell non-dumpable, and so its /proc/PID/fd closed to its own user's
  // tm-top: open it again to that user (as before the switch), no wider.
  prctl(PR_SET_DUMPABLE, 1);
  if (handed_on) fd_.reset();  // the mapping stays
}

Publisher::~Publisher() {
  if (page_) munmap(page_, sizeof(Page));
}

Snapshot Publisher::collect(Nanos now) {
  Snapshot s{};
  s.published = now;
  for (const LiveSource& k : sources_) {
    if (k.ferry) {
      s.ferry_lost += k.ferry->lost_on_receive();
      s.send_errors += k.ferry->send_errors;
    }
    for (int d : {0, 1}) {
      const FlowCounters f = k.flow(d);
      add_direction(s.dir[d], *k.queues[d], f, f.sojourn_max);
    }
  }
  return s;
}

void Publisher::run(Nanos now) {
  const Snapshot s = collect(now);
  write_snapshot(*page_, s);
  if (meter_) meter_->show(s);
  due_ = now + kPeriod;
}

void Publisher::finish(Nanos now) {
  Snapshot s = collect(now);
  s.ended = 1;
  write_snapshot(*page_, s);
  if (meter_) meter_->close();
}

}  // namespace tracemod::live
