# Shared code of the benchmark scripts; sourced, not run.
#
# Every figure is measured twice in the same run: through tracemod, and over a raw veth pair between two
# namespaces of this machine, so the two numbers share the machine's load and kernel of the moment.
#
# Environment:
#   TM_DELAY       the tm-delay binary (default: the one built in this tree)
#   PYTHON         the python3 to run benchlib.py with (default: python3)
#   BENCH_RESULTS  if set, each figure is also appended there as a tab-separated row that bench/run turns
#                  into the summary table: figure, tracemod, raw veth, ratio, target
#
# The functions that run inside tracemod's shells live here too: LIB runs them there.

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TM_DELAY=${TM_DELAY:-$BENCH_DIR/../src/frontend/tm-delay}
# The shell whose throughput is measured, as words ending before its `--`: bench/link puts tm-link here.
export TMB_MEASURED=${TMB_MEASURED:-"$TM_DELAY 0"}
PY=${PYTHON:-python3}

# The raw veth pair: its own addresses from the benchmarking range, namespaces named after this process
# so that concurrent runs (or a crashed one) never collide.
RAW_A=198.18.0.1
RAW_B=198.18.0.2
RAW_NS_A=tmbench-a-$$
RAW_NS_B=tmbench-b-$$
RAW_UP=0

QUICK=0
BENCH_TMP=
BENCH_PIDS=()

die() {
  echo "${0##*/}: $*" >&2
  exit 1
}

# Parses the options every script accepts; scripts read $QUICK afterwards.
parse_common_args() {
  while (($#)); do
    case $1 in
      --quick) QUICK=1 ;;
      -h | --help)
        sed -n '2,/^$/s/^# \{0,1\}//p' "$0"
        exit 0
        ;;
      *) die "unknown argument '$1' (try --help)" ;;
    esac
    shift
  done
}

# Picks the full or the --quick value of a parameter.
pick() {
  if ((QUICK)); then echo "$2"; else echo "$1"; fi
}

bench_init() {
  [[ $(id -u) == 0 ]] || die "run as root (the raw veth baseline needs ip netns)"
  [[ -x $TM_DELAY ]] || die "no tm-delay at $TM_DELAY (build with make, or set TM_DELAY)"
  local tool
  for tool in iperf3 ip ss timeout "$PY"; do
    command -v "$tool" >/dev/null || die "$tool is not installed"
  done
  BENCH_TMP=$(mktemp -d /tmp/tmbench.XXXXXX)
  trap bench_cleanup EXIT
  trap 'exit 130' INT TERM  # the EXIT trap then cleans up
}

# Stops only what this script started, then removes the namespaces and the scratch directory.
bench_cleanup() {
  local pid
  for pid in "${BENCH_PIDS[@]}"; do
    kill "$pid" 2>/dev/null || true
  done
  raw_down
  [[ -z $BENCH_TMP ]] || rm -rf "$BENCH_TMP"
}

# Starts "$@" in the background and remembers it, so the cleanup can stop it if the script is cut short.
spawn() {
  "$@" &
  BENCH_PIDS+=($!)
}

# Waits for the last spawned process and forgets it (its id may then be reused by anyone).
reap_last() {
  wait "${BENCH_PIDS[-1]}" || true
  unset 'BENCH_PIDS[-1]'
}

# Builds the raw pair. Chained with && because set -e does not act inside a function called as a condition
# (bench/startup times this with `||`), and a half-built pair must not pass for a whole one.
raw_up() {
  ((!RAW_UP)) || return 0
  RAW_UP=1  # set first: a half-built pair must still be torn down
  ip netns add "$RAW_NS_A" &&
    ip netns add "$RAW_NS_B" &&
    ip link add va netns "$RAW_NS_A" type veth peer name vb netns "$RAW_NS_B" &&
    ip -n "$RAW_NS_A" addr add "$RAW_A/30" dev va &&
    ip -n "$RAW_NS_B" addr add "$RAW_B/30" dev vb &&
    ip -n "$RAW_NS_A" link set lo up &&
    ip -n "$RAW_NS_B" link set lo up &&
    ip -n "$RAW_NS_A" link set va up &&
    ip -n "$RAW_NS_B" link set vb up
}

raw_down() {
  ((RAW_UP)) || return 0
  ip netns del "$RAW_NS_A" 2>/dev/null || true
  ip netns del "$RAW_NS_B" 2>/dev/null || true
  RAW_UP=0
}

# Runs "$@" in namespace A or B of the raw pair.
in_a() { ip netns exec "$RAW_NS_A" "$@"; }
in_b() { ip netns exec "$RAW_NS_B" "$@"; }

# Runs a function of this file in a fresh bash: the way to run our own code inside tracemod's namespaces,
# with arguments passed as words rather than quoted into a command string.
LIB=(bash -c 'set -euo pipefail; . "$0"; "$@"' "$BENCH_DIR/lib.sh")

# Waits (up to 5 s) until an iperf3 server listens in the current namespace: the server is started in the
# background, and a fixed sleep would be either too long or, on a loaded machine, too short.
wait_server() {
  local i
  for ((i = 0; i < 250; i++)); do
    [[ -z $(ss -Hltn 'sport = :5201') ]] || return 0
    sleep 0.02
  done
  die "no iperf3 server after 5 s"
}

# iperf3 client options for one run; up means from the client (the inner end) outward.
iperf_opts() {
  local dir=$1 secs=$2
  echo "-t $secs -J"
  [[ $dir == up ]] || echo "-R"
}

# Prints the Gbit/s the receiver got in an iperf3 -J report.
iperf_gbps() {
  calc iperf "$1"
}

# Single-stream TCP over the raw veth pair, server in A, client in B; sets GBPS. (Measurements set a
# variable rather than print: $(...) would run them in a subshell, and the namespaces and processes they
# start would escape the cleanup.)
raw_throughput() {
  local dir=$1 secs=$2 out=$BENCH_TMP/raw-$1.json
  raw_up
  spawn ip netns exec "$RAW_NS_A" timeout $((secs + 30)) iperf3 -s -1 -B "$RAW_A" >/dev/null
  in_a "${LIB[@]}" wait_server
  # shellcheck disable=SC2046  # iperf_opts prints a word list
  in_b timeout $((secs + 20)) iperf3 -c "$RAW_A" $(iperf_opts "$dir" "$secs") >"$out" ||
    die "iperf3 over raw veth failed: $(head -c 300 "$out")"
  reap_last
  GBPS=$(iperf_gbps "$out")
}

# In the command namespace of an isolated outer `tm-delay 0`: starts an iperf3 server for one test, then
# runs CMD behind LEVELS nested `tm-delay 0` shells. Only the ferries of those LEVELS measured shells lie
# between client and server; the outer shell's own link is not crossed.
serve_and_nest() {
  local levels=$1
  shift
  unset TMB_SERVER
  iperf3 -s -1 >/dev/null &
  wait_server
  nest "$levels" "$@"  # no wait for the server: the pid namespace ends it with this shell
}

# The outer end, in this namespace, of the link the next shell started here makes (sibling 0 of level
# TM_DEPTH+1 in the address plan of man tm-delay: index (K-1)*64+J, a /30 from 100.64.0.0, outer end .1).
next_outer() {
  local at=$((TM_DEPTH * 64 * 4))
  echo "100.$((64 + at / 65536)).$((at / 256 % 256)).$((at % 256 + 1))"
}

# Runs CMD behind LEVELS more measured shells (`tm-delay 0` unless TMB_MEASURED, a word list that may itself be
# a stack, `tm-delay 0 -- tm-link A B`, says otherwise), nested directly in each other, as users nest them (so
# that they fuse: docs/ARCHITECTURE.md §2). $TMB_SERVER, for the client at the bottom, is the first measured
# shell's outer end: an address of this namespace, where the server runs, fused or not.
nest() {
  local levels=$1 i
  shift
  [[ -n ${TMB_SERVER:-} ]] || TMB_SERVER=$(next_outer)
  export TMB_SERVER
  if ((levels == 0)); then
    "$@"
    return
  fi
  local -a stack=()
  for ((i = 0; i < levels; i++)); do
    # shellcheck disable=SC2206  # TMB_MEASURED is a word list
    stack+=($TMB_MEASURED --)
  done
  "${stack[@]}" "${LIB[@]}" "$@"
}

# Runs "$@" with its standard error thrown away (a shell's one-line notices, e.g. about forwarding).
quiet() {
  "$@" 2>/dev/null
}

# The client of bench/host: iperf3 against the host, at $TMB_SERVER or, inside a shell, at $TM_BASE.
host_client() {
  iperf3 -c "${TMB_SERVER:-$TM_BASE}" "$@"
}

# The client end; DIR and SECS as for iperf_opts.
iperf_client() {
  # shellcheck disable=SC2046
  iperf3 -c "$TMB_SERVER" $(iperf_opts "$1" "$2")
}

# Single-stream TCP through LEVELS nested tm-delay 0 shells; sets GBPS.
tm_throughput() {
  local levels=$1 dir=$2 secs=$3 out=$BENCH_TMP/tm-$1-$2.json
  timeout -k 5 $((secs + 30)) "$TM_DELAY" --isolated 0 -- \
    "${LIB[@]}" serve_and_nest "$levels" iperf_client "$dir" "$secs" >"$out" ||
    die "iperf3 through $levels tm-delay 0 failed: $(head -c 300 "$out")"
  GBPS=$(iperf_gbps "$out")
}

# COUNT pings INTERVAL seconds apart to HOST, one line per reply with its RTT to the microsecond. Not iputils
# ping: it prints RTTs of 10 ms and more to 0.1 ms only.
pinger() {
  calc pinger "$1" "$2" "$3"
}

# Inside a shell: pinger to the outermost outside.
ping_base() {
  pinger "$TM_BASE" "$@"
}

# Inside the measured shell of bench/rss: says it is up (idle), waits for the go, loads the link with one
# iperf3 run, says it is done, then waits to be let go, so that the shell's memory can be read from outside
# at each step. STATE is a directory on the file system, which tracemod's namespaces share with the host.
rss_client() {
  local state=$1 secs=$2
  touch "$state/idle"
  wait_file "$state/go"
  iperf_client up "$secs"
  touch "$state/done"
  wait_file "$state/exit"
}

# Waits (up to 60 s) for FILE to exist; gives up early if PID, when given, has exited.
wait_file() {
  local file=$1 pid=${2:-} i
  for ((i = 0; i < 3000; i++)); do
    [[ ! -e $file ]] || return 0
    [[ -z $pid ]] || kill -0 "$pid" 2>/dev/null || die "process $pid exited before $file appeared"
    sleep 0.02
  done
  die "timed out waiting for $file"
}

# Runs "$@" and sets ELAPSED_US to its wall-clock time. EPOCHREALTIME (bash 5) costs no fork; its decimal
# separator follows the locale.
# Returns the command's status.
time_us() {
  local t0=${EPOCHREALTIME//[.,]/} rc=0
  "$@" || rc=$?
  ELAPSED_US=$((${EPOCHREALTIME//[.,]/} - t0))
  return "$rc"
}

# Runs benchlib.py, the number crunching and formatting shared by the scripts (see its --help).
calc() {
  "$PY" "$BENCH_DIR/benchlib.py" "$@"
}

# The targets printed next to each figure, kept here so that they are set in one place. They are the
# foundation issue's; "-" where it sets none.
TARGET_TCP=">= 0.70x raw veth"
TARGET_NESTED=">= 95% of 1 level"
TARGET_RTT=(">= 20.000 ms" "<= 20.10 ms" "<= 20.50 ms" "-")  # min p50 p99 max
declare -A TARGET_STARTUP=(
  [isolated-median]="<= 30 ms" [isolated-p90]="-"
  [default-median]="<= 30 ms" [default-p90]="-"
  [pasta-median]="-" [pasta-p90]="-"
)
TARGET_RSS_IDLE="-"
TARGET_RSS_LOADED="-"

# Reports one figure: a readable line on stdout, and a row for the summary table if BENCH_RESULTS is set.
emit() {
  local figure=$1 tracemod=$2 raw=$3 ratio=$4 target=$5
  printf '%-40s tracemod %-30s raw veth %-16s ratio %-10s target %s\n' \
    "$figure" "$tracemod" "$raw" "$ratio" "$target"
  [[ -z ${BENCH_RESULTS:-} ]] || printf '%s\t%s\t%s\t%s\t%s\n' "$figure" "$tracemod" "$raw" "$ratio" "$target" \
    >>"$BENCH_RESULTS"
}

# The endurance benchmarks (bench/soak, bench/cycles) run as pid 1 of a world of their own: network, mount and
# pid namespaces, lo up, a veth pair with a default route, empty tmpfs over /tmp, /var/tmp, /dev/shm and /run/netns,
# and a world-writable scratch directory WORLD_SCRATCH in that /tmp for the stacks' logs. The world stands for
# the host: what a stack leaves behind in it is theirs alone, and nothing else on the machine can pass for a
# leftover or hide one. The tools and traces must not lie under those three directories (they would be hidden).
WORLD_SCRATCH=/tmp/tmbench-scratch
in_world() {
  unshare --net --mount --pid --fork --mount-proc --propagation private -- bash -c '
    set -e
    ip link set lo up
    # a default route, as a host has: pasta, the unprivileged path to the outside, needs a routable interface
    ip link add tmbench0 type veth peer name tmbench1 && ip addr add 198.18.255.1/24 dev tmbench0
    ip link set tmbench0 up && ip link set tmbench1 up
    ip route add default via 198.18.255.254
    for d in /tmp /var/tmp /dev/shm; do mount -t tmpfs -o mode=1777 tmbench "$d"; done
    [ ! -d /run/netns ] || mount -t tmpfs tmbench /run/netns  # named namespaces: the world'"'"'s own
    mkdir -m 1777 "$0"
    exec "$@"' "$WORLD_SCRATCH" "$@"
}

# Checks what the endurance benchmarks need; USERS is root, tmtest or both.
endurance_init() {
  local users=$1 tool
  [[ $(id -u) == 0 ]] || die "run as root (the benchmark's world needs namespaces of its own; see --help)"
  for tool in iperf3 ip nft unshare setpriv ping "$PY"; do
    command -v "$tool" >/dev/null || die "$tool is not installed"
  done
  for tool in tm-delay tm-loss tm-link; do
    [[ -x $TM_BINDIR/$tool ]] || die "no $tool in $TM_BINDIR (build with make, or set TM_BINDIR)"
  done
  [[ -r $TRACES/Verizon-LTE-short.up ]] || die "no Verizon-LTE-short.up in $TRACES (set TRACES)"
  case $users in
    root | both | tmtest) ;;
    *) die "--user takes root, tmtest or both" ;;
  esac
  [[ $users == root ]] || id tmtest >/dev/null 2>&1 ||
    die "no user tmtest (tests/run creates it: useradd --create-home --shell /bin/sh tmtest)"
  case $TM_BINDIR/ in
    /tmp/* | /var/tmp/* | /dev/shm/*) die "TM_BINDIR must not lie under /tmp, /var/tmp or /dev/shm" ;;
  esac
}
