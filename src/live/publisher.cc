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
  copy_text(h.tool, facts.tool);
  copy_text(h.tag, facts.tag);
  copy_text(h.arguments, facts.arguments);
  copy_text(h.command, facts.command);
  return h;
}

Direction direction_of(const PacketQueue& q, const FlowCounters& flow) {
  Direction d{};
  const QueueStats& s = q.stats();
  QueueLive live;
  q.live(live);
  d.in_packets = s.in_packets;
  d.in_bytes = flow.in_bytes;
  d.out_packets = s.out_packets;
  d.out_bytes = flow.out_bytes;
  std::copy(std::begin(s.dropped_by), std::end(s.dropped_by), d.dropped);
  d.dropped_bytes = s.dropped_bytes;
  d.queued_packets = s.queued_packets;
  d.ce_marked = live.ce_marked;
  d.offered_bytes = live.offered_bytes;
  d.limited = live.limited;
  d.departures = flow.departures;
  d.sojourn_sum = flow.sojourn_sum;
  copy_text(d.state, live.state);
  return d;
}

}  // namespace

Publisher::Publisher(const ShellFacts& facts, Ferry& ferry, const PacketQueue& up, const PacketQueue& down, Nanos now)
    : ferry_(ferry), queues_{&up, &down}, due_(now + kPeriod) {
  fd_ = FileDescriptor(static_cast<int>(
      check_syscall("memfd_create (live counters)", memfd_create(kMemfdName, MFD_CLOEXEC | MFD_ALLOW_SEALING))));
  check_syscall("ftruncate (live counters)", ftruncate(fd_.get(), sizeof(Page)));
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
}

Publisher::~Publisher() {
  if (page_) munmap(page_, sizeof(Page));
}

Snapshot Publisher::collect(Nanos now) {
  const FerryCounters& c = ferry_.counters();
  Snapshot s{};
  s.published = now;
  s.ferry_lost = c.lost_on_receive();
  s.send_errors = c.send_errors;
  for (auto d : {Ferry::kUplink, Ferry::kDownlink}) {
    s.dir[d] = direction_of(*queues_[d], c.flow[d]);
    s.dir[d].sojourn_max = ferry_.take_sojourn_max(d);
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
