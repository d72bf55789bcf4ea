// The shell every tool runs: the command in its own network namespace, joined to the parent namespace by this
// shell's link, with the user-space ferry moving frames through one queue per direction.
// Theory of operation: docs/ARCHITECTURE.md.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "capture/capture.hh"
#include "packet/buffer_pool.hh"
#include "packet/ferry.hh"
#include "packet/packet_queue.hh"
#include "shell/outside.hh"
#include "shell/path_notice.hh"
#include "util/file_descriptor.hh"

namespace tracemod {

using QueueFactory = std::function<std::unique_ptr<PacketQueue>(Ferry::Direction, BufferPool&)>;
struct FusedLevel;

struct ShellOptions {
  std::string tool;                    // "tm-delay", for messages
  std::string prompt_tag;              // "[delay 10]"
  std::string command_line;            // how the tool was invoked, for log headers
  std::string arguments;               // the tool's own arguments (before the command), quoted, for tm-top
  std::vector<std::string> command;    // empty: the user's $SHELL
  std::vector<std::string> log_lines;  // said with -v: the seed and similar facts of the run
  bool verbose = false;
  bool meter = false;                    // --meter: a live status line (live/meter.hh)
  OutsideOptions outside;                // how the outermost shell meets the host; --outside CMD
  std::shared_ptr<LinkCapture> capture;  // --pcap: null if none
  // tm-multipath: one link per path, each with an interface of its own in the command's namespace (path1,
  // path2...) and policy routing by source address; unbound traffic leaves by DEFAULT_PATH (0-based); MPTCP
  // enabled, each path's addresses subflow endpoints.
  bool multipath = false;
  size_t default_path = 0;
  // notice=: the paths whose endpoints leave MPTCP while their traces are dead, and when, from the links'
  // common time 0 (set when the first link is made).
  std::vector<PathNotice> notices;
  std::shared_ptr<const Nanos> paths_start;
  // tm-webreplay: the far side of the link. FAR_ADDRESSES go on the link's outer end in P (gone with the link,
  // SIGKILL included) before the outside program (its servers) starts; with FAR_DNS the command's
  // /etc/resolv.conf names $TM_OUTER, where those servers answer DNS.
  std::vector<std::string> far_addresses;
  bool far_dns = false;
  std::vector<std::pair<std::string, std::string>> environment;  // more variables for the command
  std::vector<std::shared_ptr<RecordFile>> logs;  // the tool's logs: what they could not write is reported at exit
  // The shells fused into this one: its command, if a tracemod shell, and so on down (docs/ARCHITECTURE.md §2),
  // outermost first. Their queues run in this shell's ferry; their processes only parent their commands.
  std::vector<FusedLevel> fused;
};

// A shell fused into the one running it: its options as its own command line set them, and its queues.
struct FusedLevel {
  ShellOptions options;
  QueueFactory make_queue;
};

// Runs the command behind the link until it exits; returns its exit status (128+N if killed by signal N).
int run_shell(const ShellOptions& options, const QueueFactory& make_queue);
// The same with one link per path, each with its queues from PATHS[i] (options.multipath).
int run_shell(const ShellOptions& options, const std::vector<QueueFactory>& paths);

// A fused level's process (TM_FUSED in the environment names its live page and prompt, written by the shell that
// runs its queues): starts the command in the namespace it is in, passes signals on, returns its exit status.
int run_fused_shell(const ShellOptions& options);
// True if this process was started as a fused level (TM_FUSED is set).
bool started_fused();

}  // namespace tracemod
