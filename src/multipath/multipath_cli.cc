#include "multipath/multipath_cli.hh"

#include <algorithm>
#include <array>
#include <memory>
#include <utility>

#include "channel/loss_model.hh"
#include "disciplines/queue_factory.hh"
#include "effects/delay_queue.hh"
#include "effects/loss_queue.hh"
#include "packet/series_queue.hh"
#include "link/link_cli.hh"
#include "util/error.hh"
#include "util/parse.hh"
#include "util/random.hh"

namespace tracemod {
namespace {

// Path I's random streams are stream_id(...) + I * kStreamsPerPath: path 1's queue disciplines draw what tm-link's
// do; its loss draws from the upper half, apart from them.
constexpr uint64_t kStreamsPerPath = 16, kLossStreams = 8;

const std::vector<std::string> kKeys = {"trace", "up-trace", "down-trace", "rate",   "up-rate",  "down-rate",
                                        "queue", "up-queue", "down-queue", "delay",  "up-delay", "down-delay",
                                        "loss",  "up-loss",  "down-loss",  "up-log", "down-log", "notice"};

// One direction of a path, read from its spec.
struct PathDirection {
  LinkDirection link;
  Nanos delay = 0;
  std::unique_ptr<LossModel> loss;  // null: none; handed to the path's loss queue when the shell makes it
};

// The value of "up-KEY" (or "down-KEY") if given, else of KEY, else "".
std::string value(const KeyValues& kv, const std::string& dir, const std::string& key) {
  if (const std::string* v = kv.find(dir + "-" + key)) {
    if ((key == "rate" || key == "trace") && kv.find(key))  // which would win is a guess: say it
      throw UsageError(kv.option() + ": " + key + "= and " + dir + "-" + key + "= both give the " + dir +
                       "link's capacity: give " + key + "= for both directions or up-/down-" + key + "= for each");
    return *v;
  }
  if (const std::string* v = kv.find(key)) return *v;
  return "";
}

// "NAME:ARG:ARG" as NAME:ARG,ARG: the form of a queue's or a loss model's arguments, whose commas the SPEC's
// own items took.
std::string commas_after_name(std::string text) {
  if (const size_t colon = text.find(':'); colon != std::string::npos)
    std::replace(text.begin() + static_cast<long>(colon) + 1, text.end(), ':', ',');
  return text;
}

// "NAME:ARG:ARG" as make_queue_discipline's NAME and comma-separated ARGS.
std::unique_ptr<QueueDiscipline> read_queue(const KeyValues& kv, const std::string& dir, RandomStream random) {
  const std::string given = value(kv, dir, "queue"), text = commas_after_name(given.empty() ? "infinite" : given);
  const size_t colon = text.find(':');
  const std::string args = colon == std::string::npos ? "" : text.substr(colon + 1);
  return make_queue_discipline(kv.option() + " (" + dir + "-queue)", text.substr(0, colon), args, random);
}

PathDirection read_direction(const KeyValues& kv, size_t path, int dir, const MultipathOptions& o) {
  const std::string d = dir == Ferry::kUplink ? "up" : "down";
  PathDirection p;
  p.link.name = "path " + std::to_string(path + 1) + " " + d + "link";
  const std::string at = kv.option() + " (";
  read_capacity(p.link, value(kv, d, "trace"), value(kv, d, "rate"), at + "trace= or " + d + "-trace=)",
                at + "rate= or " + d + "-rate=)");
  const uint64_t base = path * kStreamsPerPath;
  p.link.discipline = read_queue(kv, d, RandomStream(o.seed, base + stream_id(dir, StreamPurpose::kLoss)));
  if (const std::string log = value(kv, d, "log"); !log.empty())
    p.link.log = std::make_shared<LinkLog>(log, o.log_format);
  if (const std::string t = value(kv, d, "delay"); !t.empty()) p.delay = parse_delay(at + d + "-delay=)", t);
  if (const std::string l = value(kv, d, "loss"); !l.empty())
    p.loss = make_loss_model(at + d + "-loss=)", commas_after_name(l),
                             RandomStream(o.seed, base + kLossStreams + stream_id(dir, StreamPurpose::kLoss)));
  return p;
}

// The direction's queues in series: the link, then loss and delay where asked for.
std::unique_ptr<PacketQueue> make_direction(PathDirection& p, bool once, Nanos start, BufferPool& pool) {
  std::vector<std::unique_ptr<PacketQueue>> stages;
  stages.push_back(make_link(p.link, once, start, pool));
  if (p.loss) stages.push_back(std::make_unique<LossQueue>(std::move(p.loss), pool));
  if (p.delay > 0) stages.push_back(std::make_unique<DelayQueue>(p.delay, kQueueMemoryLimit));
  return std::make_unique<SeriesQueue>(std::move(stages));
}

// One direction's withdrawals under notice=NOTICE: none on a constant rate, which never stops.
NoticeWindows notice_windows(const LinkDirection& d, Nanos notice, bool once) {
  NoticeWindows w(notice, d.trace ? d.trace->period_ms() : 0, once);
  if (d.trace) d.trace->for_each_run([&w](uint64_t ms, uint64_t) { w.opportunity(ms); });
  return w;
}

// notice=DURATION: when path PATH leaves MPTCP, added to SHELL's notices; nothing without the key.
void read_notice(const KeyValues& kv, size_t path, const std::array<PathDirection, 2>& dirs, bool once,
                 ShellOptions& shell) {
  const std::string* text = kv.find("notice");
  if (!text) return;
  const Nanos notice = parse_duration_between(kv.option() + " (notice=)", *text, kMillisecond, kMillisecond, kMaxDelay);
  std::vector<NoticeWindows> windows;
  for (const PathDirection& d : dirs) windows.push_back(notice_windows(d.link, notice, once));
  shell.notices.push_back({path, NoticeSchedule(notice, std::move(windows))});
}

}  // namespace

std::vector<NamedFile> path_files(const std::vector<std::string>& specs) {
  std::vector<NamedFile> files;
  for (size_t i = 0; i < specs.size(); ++i) {
    const KeyValues kv("--path " + std::to_string(i + 1), "a path", specs[i], kKeys);
    for (const std::string key : {"trace", "up-trace", "down-trace"})
      if (const std::string* t = kv.find(key); t && !t->empty())
        files.push_back({"the trace of " + kv.name(key), DeliveryTrace::find_or_name(*t)});
    for (const std::string key : {"up-log", "down-log"})
      if (const std::string* log = kv.find(key); log && !log->empty()) files.push_back({kv.name(key), *log, true});
  }
  return files;
}

std::vector<QueueFactory> read_paths(const MultipathOptions& o, ShellOptions& shell) {
  auto paths = std::make_shared<std::vector<std::array<PathDirection, 2>>>(o.specs.size());
  for (size_t i = 0; i < o.specs.size(); ++i) {
    const KeyValues kv("--path " + std::to_string(i + 1), "a path", o.specs[i], kKeys);
    for (int d : {Ferry::kUplink, Ferry::kDownlink}) (*paths)[i][d] = read_direction(kv, i, d, o);
    read_notice(kv, i, (*paths)[i], o.once, shell);
  }
  const bool traced = std::any_of(paths->begin(), paths->end(), [](const std::array<PathDirection, 2>& p) {
    return p[0].link.trace || p[1].link.trace;
  });
  if (o.once && !traced) throw UsageError("--once: every path has a constant rate, which never ends");
  for (const auto& path : *paths)  // what a full disk keeps from a log is reported at exit, as tm-link's
    for (const PathDirection& d : path)
      if (d.link.log) shell.logs.push_back(d.link.log->file());
  auto start = std::make_shared<Nanos>(0);  // every path's traces start at the same instant
  shell.paths_start = start;                // notice='s schedules count from it
  std::vector<QueueFactory> factories;
  for (size_t i = 0; i < o.specs.size(); ++i)
    factories.push_back([=, shell = shell](Ferry::Direction which, BufferPool& pool) {
      if (*start == 0) *start = monotonic_now();
      PathDirection& d = (*paths)[i][which];
      if (d.link.log) write_link_header(d.link, shell.tool, shell.command_line, o.seed, *start);
      return make_direction(d, o.once, *start, pool);
    });
  return factories;
}

}  // namespace tracemod
