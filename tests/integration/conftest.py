"""Fixtures and helpers shared by the tracemod integration tests.

The tests drive the real tools: real namespaces, sockets and packets. pytest itself runs as root (tests/run
makes sure); the `who` fixture runs a test once as root and once as the unprivileged TM_TEST_USER, whose
commands go through setpriv. TM_TEST_BINDIR names a directory that user can execute tm-delay and tm-loss from
(tests/run stages it). Nothing here skips when namespaces cannot be made: such tests fail.
"""
import os
import pwd
import re
import select
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from typing import Dict, Optional, Sequence

import pytest

# A suite started in the background by a non-interactive shell (`make check &`, nohup) inherits SIGINT ignored,
# and so would every tool it starts: tests that press Ctrl-C would see it ignored. A handled signal is reset
# to its default in the programs we start.
signal.signal(signal.SIGINT, signal.default_int_handler)

TIMEOUT = 30  # seconds for any one subprocess, unless a test says otherwise
HERE = os.path.dirname(os.path.abspath(__file__))
BINDIR = os.environ.get("TM_TEST_BINDIR", "")
TEST_USER = os.environ.get("TM_TEST_USER", "tmtest")
PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
SETPRIV = shutil.which("setpriv", path=PATH) or "setpriv"  # found even when a test empties PATH

# The project's own traces (traces/: real LTE traces and synthetic ones). The unprivileged user may not be able
# to read the source tree: copy what it needs into public_tmp.
TRACES = os.path.realpath(os.path.join(HERE, "..", "..", "traces"))
# Files other tools wrote (tests/data/README): Mahimahi's own link logs.
DATA = os.path.realpath(os.path.join(HERE, "..", "data"))

# The outermost shell's outside addresses (on its private outer namespace's loopback, mapped to the host), and
# the outer end of its link (its TM_OUTER), as documented.
TM_BASE = "100.127.255.1"
TM_BASE6 = "fd74:6d00:1::1"
OUTERMOST_OUTER = "100.64.0.1"
OUTERMOST_OUTER6 = "fd74:6d00:0:0::1"


def pytest_configure(config):
    if os.geteuid() != 0:
        raise pytest.UsageError("the integration tests run as root (they also test as an unprivileged user): "
                                "use tests/run")
    tools = ("tm-delay", "tm-loss", "tm-link", "tm-trace", "tm-graph", "tm-record", "tm-modulate", "tm-probe",
             "tm-onoff", "tm-multipath", "tm-webreplay", "tm-webrecord")
    missing = [t for t in tools if not os.access(os.path.join(BINDIR, t), os.X_OK)]
    if missing:
        raise pytest.UsageError(f"TM_TEST_BINDIR must name a directory holding {', '.join(tools)} "
                                f"(missing: {', '.join(missing)}): use tests/run")


# ---------------------------------------------------------------------------------------------------------
# Who runs the tool


@dataclass(frozen=True)
class Identity:
    """A user to run the tools as. `run` and `spawn` are the run-as helpers: a clean environment (no SUDO_*,
    no TM_* from whoever started the suite), cwd /, and for a non-root user setpriv, which execs, so the pid
    of a spawned process is the tool's own."""

    name: str
    uid: int
    gid: int
    home: str

    @classmethod
    def of(cls, user: str) -> "Identity":
        pw = pwd.getpwnam(user)
        return cls(pw.pw_name, pw.pw_uid, pw.pw_gid, pw.pw_dir)

    def argv(self, argv: Sequence[str]) -> list:
        if self.uid == 0:
            return list(argv)
        return [SETPRIV, f"--reuid={self.uid}", f"--regid={self.gid}", "--init-groups", "--", *argv]

    def env(self, extra: Optional[Dict[str, object]] = None) -> dict:
        env = {"PATH": PATH, "HOME": self.home, "USER": self.name, "LOGNAME": self.name, "SHELL": "/bin/sh",
               "LANG": "C.UTF-8"}
        if os.environ.get("TM_NO_FUSE"):  # `TM_NO_FUSE=1 make check`: the suite with a link per level, unfused
            env["TM_NO_FUSE"] = os.environ["TM_NO_FUSE"]
        env.update({k: str(v) for k, v in (extra or {}).items()})
        return env

    def run(self, argv, *, env=None, input=None, timeout=TIMEOUT) -> subprocess.CompletedProcess:
        return subprocess.run(self.argv(argv), env=self.env(env), input=input, capture_output=True, text=True,
                              stdin=None if input is not None else subprocess.DEVNULL, timeout=timeout, cwd="/")

    def spawn(self, argv, *, env=None) -> subprocess.Popen:
        return subprocess.Popen(self.argv(argv), env=self.env(env), stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd="/")


@pytest.fixture(scope="session")
def root() -> Identity:
    return Identity.of("root")


@pytest.fixture(scope="session")
def user() -> Identity:
    return Identity.of(TEST_USER)  # a missing user is an error, not a skip


@pytest.fixture(params=["root", "user"])
def who(request) -> Identity:
    """Parametrizes a test over root and the unprivileged user."""
    return request.getfixturevalue(request.param)


def sudo_env(user: Identity) -> dict:
    """What sudo puts in the environment of a command it starts for `user`."""
    return {"SUDO_UID": user.uid, "SUDO_GID": user.gid, "SUDO_USER": user.name}


# ---------------------------------------------------------------------------------------------------------
# The tools and the commands run inside them


@dataclass(frozen=True)
class Tools:
    """Where the staged binaries are, and argv builders: tools.delay(10, cmd=[...]) is
    `tm-delay 10 -- ...`; options go before the positional ones, e.g. tools.loss("-v", "uplink", 0.1, cmd=...)."""

    dir: str

    def path(self, name: str) -> str:
        return os.path.join(self.dir, name)

    def delay(self, *args, cmd: Sequence[str]) -> list:
        return [self.path("tm-delay"), *map(str, args), "--", *cmd]

    def loss(self, *args, cmd: Sequence[str]) -> list:
        return [self.path("tm-loss"), *map(str, args), "--", *cmd]

    def shell(self, name: str, *args, cmd: Sequence[str]) -> list:
        """Any shell tool: tools.shell("tm-link", up, down, "--once", cmd=[...])."""
        return [self.path(name), *map(str, args), "--", *cmd]

    def tool(self, name: str, *args) -> list:
        """A tool that is not a shell (tm-trace, tm-graph, tm-record): argv with ARGS."""
        return [self.path(name), *map(str, args)]


@pytest.fixture(scope="session")
def tools() -> Tools:
    return Tools(BINDIR)


def sh(script: str, *args) -> list:
    """`sh -c SCRIPT sh ARGS...`: inside, $1... are ARGS; `exec "$@"` runs them (the next level)."""
    return ["sh", "-c", script, "sh", *map(str, args)]


def python_script(name: str, *args) -> list:
    """Runs tests/integration/NAME with python3 inside a shell. The source travels on the command line: the
    unprivileged user may not be able to read the source tree."""
    with open(os.path.join(HERE, name), encoding="utf-8") as f:
        return ["python3", "-c", f.read(), *map(str, args)]


def make_public(d):
    """D (a directory under pytest's temporary ones, which are private to root), made one that root and the
    unprivileged test user can both read and write. Files a test puts there for the user to read must be
    world-readable too."""
    for p in (d, *d.parents):
        if str(p) in ("/", "/tmp", "/var/tmp"):
            break
        os.chmod(p, os.stat(p).st_mode | 0o711)
    os.chmod(d, 0o1777)
    return d


@pytest.fixture
def public_tmp(tmp_path):
    """A temporary directory that root and the unprivileged test user can both read and write (make_public)."""
    d = tmp_path / "public"
    d.mkdir()
    return make_public(d)


@pytest.fixture
def spawn():
    """spawn(who, argv) starts a long-running tool; whatever is still running at the end of the test is killed."""
    procs = []

    def start(who: Identity, argv, env=None) -> subprocess.Popen:
        p = who.spawn(argv, env=env)
        procs.append(p)
        return p

    yield start
    for p in procs:
        if p.poll() is None:
            p.kill()
        try:
            p.communicate(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            pass


def read_until(proc: subprocess.Popen, marker: str, timeout: float = TIMEOUT) -> str:
    """Reads the spawned process's stdout until MARKER appears; fails if it exits or times out first."""
    fd, buf = proc.stdout.fileno(), b""
    deadline = time.monotonic() + timeout
    while marker.encode() not in buf:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            raise AssertionError(f"no {marker!r} within {timeout} s; stdout so far: {buf!r}")
        chunk = os.read(fd, 4096)
        if not chunk:
            _, err = proc.communicate(timeout=TIMEOUT)
            raise AssertionError(f"exited with status {proc.returncode} before printing {marker!r}; "
                                 f"stdout: {buf!r}; stderr: {err!r}")
        buf += chunk
    return buf.decode()


# ---------------------------------------------------------------------------------------------------------
# ping, and what the tools print



def protobuf_fields(data):
    """The fields (number, value) of a protobuf message, in order: varints as ints, length-delimited as bytes (the
    wire format, read without the schema: tests read the records the tools write)."""
    i, out = 0, []
    while i < len(data):
        key, i = read_varint(data, i)
        if key & 7 == 0:
            value, i = read_varint(data, i)
        elif key & 7 == 2:
            size, i = read_varint(data, i)
            value, i = data[i:i + size], i + size
        else:
            raise ValueError(f"wire type {key & 7}")
        out.append((key >> 3, value))
    return out


def read_varint(data, i):
    """(the varint at DATA[I], the index after it)."""
    value = shift = 0
    while True:
        value |= (data[i] & 0x7F) << shift
        shift += 7
        i += 1
        if not data[i - 1] & 0x80:
            return value, i

def ping_cmd(*, count: int = 20, interval: float = 0.05, target: str = "TM_BASE", quiet: bool = False) -> list:
    """ping TARGET (the name of a variable set inside the shell, e.g. TM_BASE6) from inside a shell. With a
    deadline (-w) ping waits for every reply, so one a loaded machine made late is not counted as lost (with
    -W it would be after two RTTs); a lost one makes it send more until the deadline, and the count fails."""
    deadline = int(count * interval) + 5
    return sh(f'exec ping -n {"-q" if quiet else ""} -c {count} -i {interval} -w {deadline} "${target}"')


class TooSlow(AssertionError):
    """A miss that other work on the machine can cause: a timing upper bound missed, or a sender, a receiver's
    socket or an emulated link that fell behind (each raise says which). `measured` takes such a measurement
    again only if an independent signal shows the machine was busy; a lower bound missed, or a packet lost, is
    a failure at once, and so is a variance property (a CoV bound): taken again, a spread that a regression
    brings back one run in three would pass."""


class NotMeasured(AssertionError):
    """The attempt did not measure what the test is about, and its own data show it: a recorder that must see a
    steady link recorded a stall of the emulated link, so the recorder's answer to that stall says nothing of its
    answer to a steady link. `measured` takes it again whatever the machine, and counts it as a retry; the
    emulated link's timing is tested on its own (test_link, test_faults)."""


def timely(ok: bool, message: str):
    """A bound that others' load on the machine can make a measurement miss (a rate below the link's, an RTT or
    a delay above the configured one plus its slack, a sender or receiver that fell behind): a TooSlow, which
    `measured` may take again. A bound the emulator alone decides (never a delay shorter than configured, no
    loss it did not make, the bytes intact, a variance) stays a plain assert."""
    if not ok:
        raise TooSlow(message)


# Whether a miss was the machine's: judged by a probe the test does not cause. PSI (the share of time a runnable
# task waited for a CPU, Documentation/accounting/psi.rst) counts the test's own browsers and shells, about 50%
# in a browser test, so it found every machine busy. After a miss, once the attempt's processes are gone, one
# spinning process per CPU runs for PROBE_SECONDS and says what share of that wall time it was given; others'
# load lowers it (a neighbour's make -j2 on 2 CPUs: about 0.5, one spinning process: about 0.67; alone: 0.97 or
# more). Below BUSY_PROBE_SHARE the attempt counts as busy. The probe sees load that lasts (another run, a
# build), not a burst that ended with the attempt: such a miss fails, as it should, unless it recurs. PSI over
# the attempt is still printed, as context.
# The probe cannot see a host that takes CPU time from this virtual machine (steal): the whole VM stops, probe
# included, so it reports 93-97% while the emulated links stall for tens of ms (CI saw 2-9% steal during a run,
# 14-25% after it, and six timing misses). So the steal share of the attempt's CPU time (/proc/stat) is read too,
# and more than BUSY_STEAL_SHARE counts as busy: a VM whose host took that much was not the code's to answer for.
PSI_CPU = "/proc/pressure/cpu"
BUSY_PROBE_SHARE = 0.85
BUSY_STEAL_SHARE = 0.02
PROBE_SECONDS = 0.3
SPIN = """import sys, time
w0, c0 = time.monotonic(), time.process_time()
end = w0 + float(sys.argv[1])
while time.monotonic() < end:
    pass
print((time.process_time() - c0) / (time.monotonic() - w0))
"""
clock = time.monotonic  # what measured() times attempts by (test_retries.py fakes it)
_running_test = None  # the pytest item whose measured() calls are recorded (set by the autouse fixture below)


@pytest.fixture(autouse=True)
def _record_retries_of(request):
    global _running_test
    _running_test = request.node
    yield
    _running_test = None


def cpu_pressure():
    """(PSI cpu "some" total in us, its avg10 as a share), or None where the kernel has no PSI."""
    try:
        with open(PSI_CPU) as f:
            some = dict(kv.split("=") for kv in f.readline().split()[1:])
        return int(some["total"]), float(some["avg10"]) / 100
    except (OSError, KeyError, ValueError):
        return None


def cpu_steal():
    """(steal, all) CPU time in ticks since boot, summed over CPUs (/proc/stat's "cpu" line), or None."""
    try:
        with open("/proc/stat") as f:
            ticks = [int(v) for v in f.readline().split()[1:]]
        return ticks[7], sum(ticks[:8])  # user nice system idle iowait irq softirq steal (guest: inside user)
    except (OSError, ValueError, IndexError):
        return None


def cpu_probe(seconds: float = PROBE_SECONDS) -> float:
    """The mean share of the wall time that one spinning process per CPU this process may use was given."""
    procs = [subprocess.Popen([sys.executable, "-c", SPIN, str(seconds)], stdout=subprocess.PIPE, text=True)
             for _ in range(min(len(os.sched_getaffinity(0)), 16))]
    shares = [float(p.communicate(timeout=30 + seconds)[0]) for p in procs]
    return sum(shares) / len(shares)


def busy_machine(before, started, steal_before=None):
    """(busy, what was measured) for a miss in an attempt that began at clock() STARTED with cpu_pressure()
    BEFORE and cpu_steal() STEAL_BEFORE: busy when cpu_probe(), run now, was given less than BUSY_PROBE_SHARE, or
    the host took more than BUSY_STEAL_SHARE of the attempt's CPU time."""
    after, wall_us, steal_after = cpu_pressure(), max(1.0, (clock() - started) * 1e6), cpu_steal()
    share = cpu_probe()
    stolen = 0.0
    if steal_before is not None and steal_after is not None and steal_after[1] > steal_before[1]:
        stolen = (steal_after[0] - steal_before[0]) / (steal_after[1] - steal_before[1])
    busy = share < BUSY_PROBE_SHARE or stolen > BUSY_STEAL_SHARE
    psi = (f"; PSI some {100 * (after[0] - before[0]) / wall_us:.1f}% over the attempt, its own load included"
           if before is not None and after is not None else "")
    return busy, (f"a CPU probe was given {100 * share:.0f}% of its time: {'busy' if busy else 'not busy'} "
                  f"(threshold {100 * BUSY_PROBE_SHARE:.0f}%); the host took {100 * stolen:.1f}% of the attempt's "
                  f"CPU time (steal; threshold {100 * BUSY_STEAL_SHARE:.0f}%){psi}")


def record_retry(attempt: int, attempts: int, reason: str, pressure: str):
    """Puts a retry in the test's report (a user property "retry", which the JUnit XML carries and tests/run
    counts) and prints it past pytest's capture, so a log shows it whether the test passes or not."""
    item = _running_test
    where = item.nodeid if item is not None else "(outside a test)"
    text = f"attempt {attempt} of {attempts} missed: {(reason.splitlines() or ['?'])[0][:300]} [{pressure}]"
    if item is not None:
        item.user_properties.append(("retry", text))
    capture = item.config.pluginmanager.getplugin("capturemanager") if item is not None else None
    if capture is None:  # -p no:capture: nothing to get past
        print(f"\nRETRY: {where}: {text}", flush=True)
        return
    with capture.global_and_fixture_disabled():
        print(f"\nRETRY: {where}: {text}", flush=True)


def measured(check, attempts: int = 3):
    """Runs check() until it passes, at most ATTEMPTS times. A TooSlow is taken again only when the machine was
    busy by others' load at the miss (busy_machine); a NotMeasured (the attempt's own data void it) is taken
    again whatever the machine. Each retry is recorded in the test's report and printed (record_retry), and
    counted (tests/run). A TooSlow on a machine that was not busy is the code's: it fails at once."""
    for attempt in range(1, attempts + 1):
        before, started, steal = cpu_pressure(), clock(), cpu_steal()
        try:
            return check()
        except NotMeasured as void:
            if attempt == attempts:
                void.args = (f"{void}\n[attempt {attempt} of {attempts}: every one void]",)
                raise
            record_retry(attempt, attempts, str(void), "the attempt's own data void it")
        except TooSlow as miss:
            busy, pressure = busy_machine(before, started, steal)
            if attempt == attempts or not busy:
                miss.args = (f"{miss}\n[attempt {attempt} of {attempts}; {pressure}"
                             f"{'' if busy else ': not taken again'}]",)
                raise
            record_retry(attempt, attempts, str(miss), pressure)


@dataclass
class PingStats:
    sent: int
    received: int
    min: float = float("nan")
    max: float = float("nan")
    seqs: set = field(default_factory=set)  # icmp_seq of each reply (without -q)
    rtts: list = field(default_factory=list)  # ms, each reply's (without -q)

    def assert_rtt_within(self, low: float, high: float):
        """No RTT under LOW, ever (a delay shorter than configured is a bug). Above HIGH, one reply in twenty may
        be late by up to HIGH - LOW more: a single wakeup the scheduler of a shared 2-core VM put off by a
        millisecond or two, with the machine otherwise quiet (CI saw 22.7 ms in a 20-22 ms test), says nothing
        about the emulator, while two late replies, or one far off, do."""
        assert self.sent > 0 and self.received == self.sent, f"lost pings: {self}"
        assert self.min >= low, f"an RTT of {self.min} ms, below {low}"
        late = [r for r in self.rtts or [self.max] if r > high]
        if len(late) > len(self.rtts) // 20 or any(r > high + (high - low) for r in late):
            raise TooSlow(f"RTTs of {late} ms of {len(self.rtts) or 'a summary of'} replies, above {high}")


def assert_ping_rtt(who: "Identity", argv, low: float, high: float, *, env=None, timeout: float = TIMEOUT):
    """Runs ARGV (tools with a ping_cmd inside) as WHO; every RTT must lie within [LOW, HIGH] ms."""
    def check():
        r = who.run(argv, env=env, timeout=timeout)
        assert r.returncode == 0, r.stderr
        ping_stats(r.stdout).assert_rtt_within(low, high)
        return r

    return measured(check)


def ping_stats(output: str) -> PingStats:
    totals = re.search(r"(\d+) packets transmitted, (\d+) received", output)
    assert totals, f"no ping summary in: {output!r}"
    stats = PingStats(int(totals.group(1)), int(totals.group(2)))
    rtt = re.search(r"min/avg/max/mdev = ([\d.]+)/[\d.]+/([\d.]+)/", output)
    if rtt:
        stats.min, stats.max = float(rtt.group(1)), float(rtt.group(2))
    stats.seqs = {int(s) for s in re.findall(r"icmp_seq=(\d+)", output)}
    stats.rtts = [float(t) for t in re.findall(r"icmp_seq=\d+ .*time=([\d.]+) ms", output)]
    return stats


@dataclass(frozen=True)
class QueueCounters:
    packets_in: int
    out: int
    dropped: int
    queued: int


def verbose_counters(stderr: str) -> Dict[str, QueueCounters]:
    """The per-direction counters `-v` prints at exit: {"uplink": ..., "downlink": ...}."""
    found = re.findall(r"^tm-\w+: (uplink|downlink): (\d+) packets in, (\d+) out, (\d+) dropped, (\d+) still queued$",
                       stderr, re.M)
    counters = {d: QueueCounters(*map(int, n)) for d, *n in found}
    assert set(counters) == {"uplink", "downlink"}, f"no per-direction counters in: {stderr!r}"
    return counters


def deepest_prompt(stderr: str) -> str:
    """The longest run of tracemod prompt tags ("[delay 0] [loss ...] ") in what an interactive shell printed."""
    runs = re.findall(r"(?:\[(?:delay|loss)[^\]]*\] )+", stderr)
    return max(runs, key=len, default="")


def write_public(directory, name: str, text: str) -> str:
    """Writes TEXT to DIRECTORY/NAME, readable by the unprivileged user too; returns the path."""
    path = os.path.join(directory, name)
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, 0o644)
    return path
