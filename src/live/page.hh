// The live counters a running shell publishes (tm-top, --meter): one fixed-layout page in a memfd named
// kMemfdName, which readers of the same user reach as /proc/PID/fd/N and map read-only. A memfd, not a file
// in a runtime directory: it vanishes with the shell however it ends (a SIGKILLed shell cannot remove a file),
// and /proc's ptrace check lets only the shell's user (and root) open it. docs/ARCHITECTURE.md, "Live counters".
//
// The header is written once, before the page can be found; the snapshot is rewritten a few times a second
// under a sequence lock: the writer makes `seq` odd, copies, makes it even; a reader copies and retries while
// seq was odd or changed.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstring>

#include "live/metrics.hh"
#include "util/clock.hh"

namespace tracemod::live {

constexpr const char* kMemfdName = "tracemod-live";
constexpr char kMagic[8] = {'T', 'M', 'L', 'I', 'V', 'E', '\0', '\0'};
constexpr uint32_t kVersion = 2;

struct Header {
  char magic[8];
  uint32_t version, size;  // size: of the whole Page, so a reader can refuse a layout it does not know
  int32_t pid, depth;      // pid as the shell sees itself (in its own pid namespace); depth: 0 for the outermost
  int64_t started;         // monotonic ns
  int64_t started_unix;    // CLOCK_REALTIME ns, for humans
  uint32_t metrics;        // rows in the metrics table, and its fingerprint: a reader with another table refuses
  uint32_t fingerprint;    // the page
  char tool[32];           // "tm-link"
  char tag[96];            // the prompt's tag: "[delay 40]"
  char arguments[160];     // the tool's own arguments, quoted as a shell would need: "40 --seed 7"
  char command[256];       // the command the shell runs, as typed (cut to fit)
};

// One direction: one counter per row of the metrics table (live/metrics.hh), as its row reads it (since the
// start, or now), summed over the shell's links.
struct Direction {
  uint64_t value[kMaxMetrics];
  uint32_t limited;  // 1: the direction has a capacity (a trace, a rate)
  char state[28];    // tm-onoff's "on"/"off", tm-modulate's schedule line; empty if none
};

struct Snapshot {
  int64_t published;  // monotonic ns
  uint32_t ended;     // 1 once the command has exited
  uint32_t reserved;
  uint64_t ferry_lost, send_errors;  // frames the ferry lost reading (its ring full) or the kernel refused
  Direction dir[2];                  // by Ferry::Direction: 0 uplink, 1 downlink
};

struct Page {
  Header header;
  alignas(64) std::atomic<uint32_t> seq;
  Snapshot snapshot;
};
static_assert(std::atomic<uint32_t>::is_always_lock_free, "the sequence lock is shared between processes");

inline void write_snapshot(Page& page, const Snapshot& s) {
  const uint32_t seq = page.seq.load(std::memory_order_relaxed);
  page.seq.store(seq + 1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  std::memcpy(&page.snapshot, &s, sizeof s);
  page.seq.store(seq + 2, std::memory_order_release);
}

// Copies the snapshot into OUT; false if the writer kept it busy for every one of TRIES attempts.
inline bool read_snapshot(const Page& page, Snapshot& out, int tries = 1000) {
  for (int i = 0; i < tries; ++i) {
    const uint32_t before = page.seq.load(std::memory_order_acquire);
    if (before & 1) continue;
    std::memcpy(&out, &page.snapshot, sizeof out);
    std::atomic_thread_fence(std::memory_order_acquire);
    if (page.seq.load(std::memory_order_relaxed) == before) return true;
  }
  return false;
}

}  // namespace tracemod::live
