// The shell's one event loop: frames arriving on either end of each of its links (one, or one per path of
// tm-multipath), the queues' next release times, and signals (the command's exit, and signals to pass on).
// One `now` per turn is handed to the queues.
#pragma once

#include <signal.h>
#include <sys/epoll.h>
#include <sys/types.h>

#include <functional>
#include <string>
#include <vector>

#include "packet/ferry.hh"
#include "packet/packet_queue.hh"
#include "util/file_descriptor.hh"
#include "util/signals.hh"

namespace tracemod {

// Work the loop does on time between turns, as the live counters' publication: run(NOW) once NOW >= due().
// The loop wakes for it, without spinning ahead as it does for a release.
class LoopTask {
 public:
  virtual ~LoopTask() = default;
  virtual Nanos due() const = 0;
  virtual void run(Nanos now) = 0;
};

// One link the loop serves: its ferry and its two queues (none owned). NAME prefixes its messages ("path 2's ").
struct FerryLink {
  Ferry* ferry;
  PacketQueue* queues[2];
  std::string name;
};

class EventLoop {
 public:
  // ON_CHILD_EXIT runs on every SIGCHLD, for the shell's other children (pasta, --outside commands...).
  EventLoop(const std::string& tool, std::vector<FerryLink> links, pid_t init, std::function<void()> on_child_exit);
  // Runs TASK (not owned; it must outlive run()) whenever it is due.
  void add_task(LoopTask* task) { tasks_.push_back(task); }
  // Runs until the command's init exits; returns its exit status (128+N if killed by signal N).
  int run();

 private:
  void watch(int fd, uint32_t tag);
  int wait(epoll_event* ev);
  int poll(epoll_event* ev, Nanos timeout);
  int nap(epoll_event* ev, Nanos timeout);
  bool on_signals(int& status);
  void stop_if_finished(Nanos now);
  int turn(Nanos& now);
  Nanos next_release() const;
  Nanos capture_due() const;
  bool any_arrivals() const;
  Nanos tasks_due() const;  // the earliest task's due time, or kNever
  void note_stall();
  void tell_stalled(Nanos from, Nanos to);

  std::string tool_;  // for messages
  std::vector<FerryLink> links_;
  pid_t init_;
  std::function<void()> on_child_exit_;
  Nanos last_arrival_ = 0, last_epoll_ = 0;
  int last_batch_ = 0;      // frames read in the last turn that read any
  Nanos due_ = kNever;      // the earliest release the queues wanted when the loop last went to wait
  Nanos awake_ = 0;         // when the loop last knew it had not stalled (note_stall's clock)
  Nanos kill_at_ = kNever;  // once a queue has finished: when the command gets SIGKILL if still running
  std::vector<LoopTask*> tasks_;
  SignalFd signals_;
  FileDescriptor epoll_;
};

}  // namespace tracemod
