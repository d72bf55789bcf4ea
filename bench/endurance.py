#!/usr/bin/env python3
"""The endurance benchmarks, bench/soak and bench/cycles (stdlib only). Their bash scripts check the machine and
start this file as pid 1 of a private network, mount and pid namespace (the "world", see bench/README.md);
the other modes run inside a tracemod stack.

  soak MINUTES USER BINDIR TRACES SCRATCH      a busy stack for MINUTES: table per minute, verdict, leftovers
  cycles COUNT USER BINDIR TRACES SCRATCH SEED start and SIGKILL COUNT nested stacks, count what is left
  serve FILE         (the soak's --outside, in the outermost shell's outer namespace) iperf3 server, the probe's
                     receiver (UDP 9300: "SEQ T" per datagram to FILE, T its kernel receive time on
                     CLOCK_MONOTONIC in ns) and a sink for the UDP load (UDP 9301)
  client STOP SECS   (the soak's innermost command) the probe (36-byte IP datagrams, 200/s) and the UDP load
                     (1200-byte, 250/s) to $SOAK_SERVER, TCP downloads (iperf3 -R, 60 s each) one after
                     another, until the file STOP exists (at most SECS)

Lateness of departures: tm-link reports it (-v) only at exit, and its log writes a departure at the time of the
opportunity that carried it (the release time), so the log alone cannot show how late the ferry handed the
packet to the kernel. The soak therefore matches the link's uplink log with what arrived: tm-link is the
outermost shell and the probe's receiver runs on its outer side, so nothing lies between the two but one veth.
Its datagrams are 36 IP bytes, a size no TCP/IPv4, IPv6 or ARP packet has; the queue is FIFO; so the k-th
36-byte departure in the log is the k-th datagram received, and its lateness is the receiver kernel's time stamp
minus the logged departure: what tm-link -v measures (release time to send()) plus the veth's few
microseconds. tm-link -v's own whole-run figures are printed at the end beside it.
"""

import json
import math
import os
import random
import select
import shlex
import signal
import socket
import statistics
import struct
import subprocess
import sys
import threading
import time

HERE = os.path.abspath(__file__)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "..", "tests", "integration"))
import link_probe  # noqa: E402  the UDP sender and clock offset the tests use (bench/link uses it too)

SO_TIMESTAMPNS = 35  # Linux (asm-generic/socket.h); not named by the socket module
SO_RXQ_OVFL = 40
PROBE_PORT, SINK_PORT = 9300, 9301
PROBE_SIZE, PROBE_PPS = 36, 200  # IP bytes: IPv4 20 + UDP 8 + a sequence number 8
LOAD_SIZE, LOAD_PPS = 1200, 250  # 2.4 Mbit/s, some 40% of the uplink trace's mean
HEADERS = link_probe.HEADERS
SHELLS = ("tm-link", "tm-loss", "tm-delay")
NAMESPACE_KINDS = ("net", "pid", "mnt", "user", "uts", "ipc", "cgroup", "time")
PRIVATE_DIRS = ("/tmp", "/var/tmp", "/dev/shm")
INNER_PY = "/usr/bin/python3" if os.access("/usr/bin/python3", os.X_OK) else sys.executable
SETTLE = 15  # seconds the kernel may take to tear down what a dead shell held (a closing child lives on briefly)
LINGER = 600  # seconds to watch what is left after SETTLE go


def percentile(sorted_values, p):
    """Nearest rank: a value that was measured."""
    rank = max(1, math.ceil(p / 100 * len(sorted_values)))
    return sorted_values[rank - 1]


def say(*args):
    print(*args, flush=True)


# ---------------------------------------------------------------------------------------------------------
# Inside the soak's stack


def cmd_serve(args):
    subprocess.Popen(["iperf3", "-s"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # dies with us
    sink = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sink.bind(("0.0.0.0", SINK_PORT))
    threading.Thread(target=lambda: [sink.recv(65536) for _ in iter(int, 1)], daemon=True).start()
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
    s.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    s.setsockopt(socket.SOL_SOCKET, SO_RXQ_OVFL, 1)
    s.bind(("0.0.0.0", PROBE_PORT))
    offset, offset_at, flushed, overflow = link_probe.monotonic_minus_realtime(), time.monotonic(), time.monotonic(), 0
    with open(args[0], "a") as out:
        while True:
            data, ancillary, _, _ = s.recvmsg(2048, socket.CMSG_SPACE(16) + socket.CMSG_SPACE(4))
            t = None
            for level, kind, value in ancillary:
                if (level, kind) == (socket.SOL_SOCKET, SO_TIMESTAMPNS):
                    sec, nsec = struct.unpack("qq", value[:16])
                    t = sec * 1_000_000_000 + nsec + offset
                elif (level, kind) == (socket.SOL_SOCKET, SO_RXQ_OVFL):
                    dropped = struct.unpack("I", value[:4])[0]
                    if dropped != overflow:
                        overflow = dropped
                        out.write(f"o {dropped}\n")
            if len(data) + HEADERS == PROBE_SIZE and t is not None:
                out.write(f"{struct.unpack('!Q', data[:8])[0]} {t}\n")
            now = time.monotonic()
            if now - offset_at > 10:  # follows a step of the realtime clock within 10 s
                offset, offset_at = link_probe.monotonic_minus_realtime(), now
            if now - flushed > 0.5:
                out.flush()
                flushed = now


def cmd_client(args):
    stop, deadline, server = args[0], time.monotonic() + float(args[1]), os.environ["SOAK_SERVER"]
    stopped = lambda: os.path.exists(stop) or time.monotonic() > deadline
    for port, pps, size in ((PROBE_PORT, PROBE_PPS, PROBE_SIZE), (SINK_PORT, LOAD_PPS, LOAD_SIZE)):
        threading.Thread(target=link_probe.send, args=(server, port, pps, float(args[1]), size), daemon=True).start()
    runs, failed, mbits = 0, 0, []
    while not stopped():
        p = subprocess.Popen(["iperf3", "-c", server, "-R", "-t", "60", "-J"], stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, text=True)
        out = []
        reader = threading.Thread(target=lambda: out.append(p.stdout.read()), daemon=True)
        reader.start()
        while p.poll() is None and not stopped():
            time.sleep(0.5)
        if p.poll() is None:
            p.terminate()
        p.wait()
        reader.join(5)
        runs += 1
        try:
            mbits.append(json.loads(out[0])["end"]["sum_received"]["bits_per_second"] / 1e6)
        except (IndexError, ValueError, KeyError, TypeError):
            failed += 1
            time.sleep(1)
    mean = f"{statistics.mean(mbits):.2f}" if mbits else "-"
    say(f"client: {runs} TCP downloads, {failed} without a report, mean {mean} Mbit/s")


# ---------------------------------------------------------------------------------------------------------
# What the world holds


def proc_table():
    """{pid: (comm, state, ppid)} of every process now."""
    table = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    head, tail = f.read().rsplit(")", 1)
            except OSError:
                continue
            fields = tail.split()
            table[int(entry)] = (head.split("(", 1)[1], fields[0], int(fields[1]))
    return table


def has_tag(pid, tag):
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            return f"TMB_TAG={tag}".encode() in f.read().split(b"\0")
    except OSError:
        return False


def shells(tag):
    """{comm: pid} of the tracemod shells carrying TAG: a tm-* process whose parent is not a tm-* of the same
    name (the host helper and the command's init are forks of their shell, with its name)."""
    table = proc_table()
    found = {}
    for pid, (comm, state, ppid) in table.items():
        if comm in SHELLS and state != "Z" and table.get(ppid, ("",))[0] != comm and has_tag(pid, tag):
            found[comm] = pid
    return found


def lines_of(*argv):
    r = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    return {line.strip() for line in r.stdout.splitlines() if line.strip()}


def world_state(scratch):
    """What a stack could leave in the world, as sets: processes (every live one but us: the world is ours),
    namespaces they are in or hold, interfaces, nftables tables, named namespaces and the peer namespace ids
    this namespace gave (one per namespace a veth of ours still reaches), files in /tmp, /var/tmp and /dev/shm
    (but our scratch directory), and mounts."""
    me = os.getpid()
    table = proc_table()
    procs = {p for p, (_, state, _) in table.items() if p != me and state != "Z"}
    mine = set()
    for kind in NAMESPACE_KINDS:
        try:
            mine.add(os.readlink(f"/proc/self/ns/{kind}"))
        except OSError:
            pass
    namespaces = set()
    for pid in table:
        links = []
        try:
            if pid in procs:
                links += [os.readlink(f"/proc/{pid}/ns/{k}") for k in NAMESPACE_KINDS
                          if os.path.exists(f"/proc/{pid}/ns/{k}")]
            links += [os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")]
        except OSError:
            continue
        namespaces |= {link for link in links if link.split(":")[0] in NAMESPACE_KINDS and ":[" in link} - mine
    files = set()
    for d in PRIVATE_DIRS:
        for root, dirs, names in os.walk(d):
            if os.path.abspath(root) == scratch:
                dirs[:] = names[:] = []
                continue
            files |= {os.path.join(root, n) for n in dirs + names if os.path.join(root, n) != scratch}
    with open("/proc/self/mountinfo") as f:
        mounts = {" ".join(line.split()[:1] + line.split()[4:5] + line.split(" - ")[1].split()[:1]) for line in f}
    return {
        "processes": {f"{p} {table[p][0]}" for p in procs},
        "namespaces": namespaces,
        "interfaces": {line.split(":")[1].strip().split("@")[0] for line in lines_of("ip", "-o", "link")} - {"lo"},
        "nft tables": lines_of("nft", "list", "tables"),
        "named netns": lines_of("ip", "netns", "list"),
        "peer netns ids": lines_of("ip", "netns", "list-id"),
        "temp files": files,
        "mounts": mounts,
    }


def reap():
    """We are the world's pid 1: orphans (the outermost shell's closing child, say) come to us. Reaps those, and
    not the children we wait for ourselves (a stolen exit status would read as 0)."""
    for pid, (_, state, ppid) in proc_table().items():
        if state == "Z" and ppid == os.getpid() and pid not in REAP_KEEP:
            try:
                os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                pass


REAP_KEEP = set()  # pids of the children we wait for


def leftovers(before, scratch, settle=SETTLE):
    """What the world holds beyond BEFORE, once it stopped changing or SETTLE seconds passed."""
    start = time.monotonic()
    while True:
        reap()
        now = world_state(scratch)
        left = {k: sorted(now[k] - before[k]) for k in before}
        if not any(left.values()) or time.monotonic() - start > settle:
            return left
        time.sleep(0.2)


def print_leftovers(left):
    say("left behind: " + ", ".join(f"{len(v)} {k}" for k, v in left.items()))
    for k, v in left.items():
        if v:
            say(f"  {k}: {' | '.join(v[:10])}{' ...' if len(v) > 10 else ''}")
    return not any(left.values())


def final_leftovers(before, scratch, limit=LINGER):
    """Prints what is left SETTLE seconds after the last stack; if anything is, watches up to LIMIT seconds more
    for it to go (a namespace that only an orphaned TCP socket holds goes when the socket gives up) and prints
    what is left then. True if nothing is left at the end."""
    start = time.monotonic()
    if print_leftovers(leftovers(before, scratch)):
        return True
    while time.monotonic() - start < limit:
        time.sleep(2)
        reap()
        left = {k: sorted(v - before[k]) for k, v in world_state(scratch).items()}
        if not any(left.values()):
            say(f"all gone {time.monotonic() - start:.0f} s after the end")
            return True
    say(f"still there {limit} s after the end:")
    return print_leftovers(left)


# ---------------------------------------------------------------------------------------------------------
# Running stacks as a user


def user_env(user, tag, extra=None):
    import pwd
    pw = pwd.getpwnam(user)
    env = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME": pw.pw_dir,
           "USER": user, "LOGNAME": user, "SHELL": "/bin/sh", "LANG": "C.UTF-8", "TMB_TAG": tag}
    env.update(extra or {})
    return env


def as_user(user, argv):
    if user == "root":
        return argv
    return ["setpriv", f"--reuid={user}", f"--regid={user}", "--init-groups", "--", *argv]


def world_setup():
    """pid 1 ignores the signals it has no handler for: give SIGTERM and SIGHUP one."""
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, lambda *_: sys.exit(128 + 15))


def stderr_lines(path, limit=20):
    try:
        with open(path, errors="replace") as f:
            return f.read().splitlines()[-limit:]
    except OSError:
        return []


# ---------------------------------------------------------------------------------------------------------
# bench/soak


class Lateness:
    """Matches the k-th 36-byte departure of the uplink log with the k-th probe datagram received."""

    def __init__(self, log, rx, t0_us):
        self.log, self.rx, self.t0_us = log, rx, t0_us
        self.log_at = self.rx_at = 0
        self.log_rest = self.rx_rest = ""
        self.departures, self.arrivals = [], []
        self.bins = {}  # minute of the departure -> [lateness us]
        self.overflow = self.implausible = 0

    def _read(self, path, at, rest):
        try:
            with open(path, errors="replace") as f:
                f.seek(at)
                text = f.read()
                at = f.tell()
        except OSError:
            return at, rest, []
        text = rest + text
        lines = text.split("\n")
        return at, lines[-1], lines[:-1]

    def update(self):
        """Reads what the log and the receiver wrote since; returns the lateness (us) of the pairs matched."""
        self.log_at, self.log_rest, lines = self._read(self.log, self.log_at, self.log_rest)
        for line in lines:
            f = line.split()
            if len(f) >= 3 and f[1] == "-" and f[2] == str(PROBE_SIZE):
                whole, _, frac = f[0].partition(".")
                self.departures.append(int(whole) * 1000 + int((frac + "000")[:3]))
        self.rx_at, self.rx_rest, lines = self._read(self.rx, self.rx_at, self.rx_rest)
        for line in lines:
            f = line.split()
            if len(f) == 2 and f[0] == "o":
                self.overflow = int(f[1])
            elif len(f) == 2:
                self.arrivals.append(int(f[1]) // 1000)
        n = min(len(self.departures), len(self.arrivals))
        matched = []
        for d, r in zip(self.departures[:n], self.arrivals[:n]):
            late = r - d
            if late < -20 or late > 1_000_000:  # before it left, or a second late: the pairing slipped
                self.implausible += 1
                continue
            matched.append(late)
            self.bins.setdefault(max(0, (d - self.t0_us) // 60_000_000), []).append(late)
        del self.departures[:n], self.arrivals[:n]
        return matched


def sample(pid):
    """(VmRSS kB, open fds, CPU ticks) of PID."""
    with open(f"/proc/{pid}/status") as f:
        rss = next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))
    fds = len(os.listdir(f"/proc/{pid}/fd"))
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return rss, fds, int(fields[11]) + int(fields[12])


def cpu_pressure():
    try:
        with open("/proc/pressure/cpu") as f:
            return float(f.readline().split()[1].split("=")[1])
    except (OSError, IndexError, ValueError):
        return float("nan")


def theil_sen(points):
    """Median of the slopes between every two points (x, y): a trend a few outliers do not move."""
    slopes = [(y2 - y1) / (x2 - x1) for i, (x1, y1) in enumerate(points) for x2, y2 in points[i + 1:] if x2 != x1]
    return statistics.median(slopes) if slopes else 0.0


def soak_stack(bindir, traces, scratch, seconds):
    link_args = ["-v", "--uplink-queue=droptail", "--uplink-queue-args=packets=100", "--downlink-queue=droptail",
                 "--downlink-queue-args=packets=100", f"--uplink-log={scratch}/uplink.log",
                 "--outside", f"exec {INNER_PY} {shlex.quote(HERE)} serve {shlex.quote(scratch)}/probe.rx",
                 f"{traces}/Verizon-LTE-short.up", f"{traces}/Verizon-LTE-short.down"]
    return [f"{bindir}/tm-link", *link_args, "--",
            "sh", "-c", 'SOAK_SERVER=$TM_OUTER; export SOAK_SERVER; exec "$@"', "sh",
            f"{bindir}/tm-loss", "-v", "--uplink-loss", "0.01", "--downlink-loss", "0.01", "--",
            f"{bindir}/tm-delay", "-v", "10", "--",
            INNER_PY, HERE, "client", f"{scratch}/stop", str(seconds)]


def cmd_soak(args):
    world_setup()
    minutes, user, bindir, traces, scratch = int(args[0]), args[1], args[2], args[3], args[4]
    window = 10 if minutes >= 20 else max(1, minutes // 2)
    tag = f"tmsoak-{user}"
    before = world_state(scratch)
    argv = as_user(user, soak_stack(bindir, traces, scratch, minutes * 60 + 300))
    with open(f"{scratch}/stack.out", "w") as out, open(f"{scratch}/stack.err", "w") as err:
        stack = subprocess.Popen(argv, env=user_env(user, tag), stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                 cwd="/")
    REAP_KEEP.add(stack.pid)
    found = {}
    for _ in range(300):
        found = shells(tag)
        if len(found) == len(SHELLS) or stack.poll() is not None:
            break
        time.sleep(0.1)
    if len(found) != len(SHELLS):
        stack.kill()
        sys.exit("soak: the stack did not start: " + " / ".join(stderr_lines(f"{scratch}/stack.err")))
    t0 = time.monotonic()
    late = Lateness(f"{scratch}/uplink.log", f"{scratch}/probe.rx", time.monotonic_ns() // 1000)
    say(f"soak as {user}: {minutes} min; stack (outermost first): tm-link Verizon-LTE-short up/down, drop-tail "
        f"100 packets each way, uplink log | tm-loss 1% each way | tm-delay 10 ms; load: TCP downloads (iperf3 -R, "
        f"60 s each), UDP up {LOAD_SIZE} B x {LOAD_PPS}/s, probe {PROBE_SIZE} B x {PROBE_PPS}/s")
    say("shells: " + ", ".join(f"{c} pid {p}" for c, p in found.items()))
    say("RSS MiB / open fds / CPU s in the minute, per shell; lateness (us) of the probe's departures matched since "
        "the last row (the log is written in 1 MiB blocks); CPU pressure: /proc/pressure/cpu some avg60 (%)")
    head = f"{'min':>4} " + " ".join(f"{c + ' rss/fd/cpu':>22}" for c in SHELLS)
    say(head + f" {'n':>6} {'p50':>5} {'p99':>6} {'max':>6} {'psi':>5}")
    rows, last_cpu = [], {c: sample(p)[2] for c, p in found.items()}
    tick = os.sysconf("SC_CLK_TCK")
    for m in range(1, minutes + 1):
        while time.monotonic() < t0 + 60 * m:
            reap()
            if stack.poll() is not None:
                sys.exit(f"soak: the stack exited (status {stack.returncode}) in minute {m}: "
                         + " / ".join(stderr_lines(f"{scratch}/stack.err")))
            time.sleep(min(1.0, max(0.0, t0 + 60 * m - time.monotonic())))
        row = {"minute": m, "psi": cpu_pressure()}
        for c, p in found.items():
            try:
                rss, fds, cpu = sample(p)
            except OSError as e:
                sys.exit(f"soak: {c} (pid {p}) has gone in minute {m}: {e}")
            row[c] = (rss, fds, (cpu - last_cpu[c]) / tick)
            last_cpu[c] = cpu
        matched = sorted(late.update())
        rows.append(row)
        cells = " ".join(f"{row[c][0] / 1024:>9.2f}/{row[c][1]:>4}/{row[c][2]:>6.2f}" for c in SHELLS)
        lat = (f"{len(matched):>6} {percentile(matched, 50):>5} {percentile(matched, 99):>6} {matched[-1]:>6}"
               if matched else f"{0:>6} {'-':>5} {'-':>6} {'-':>6}")
        say(f"{m:>4} {cells} {lat} {row['psi']:>5.2f}")
    open(f"{scratch}/stop", "w").close()
    try:
        status = stack.wait(90)
    except subprocess.TimeoutExpired:
        stack.kill()
        status = stack.wait()
    late.update()
    say(f"stack exit status {status}; " + "; ".join(stderr_lines(f"{scratch}/stack.out", 3)))
    say("the shells' own -v reports:")
    for line in stderr_lines(f"{scratch}/stack.err", 40):
        say("  " + line)
    ok = soak_verdict(rows, late, window, minutes)
    say(f"after the stack's exit (settled up to {SETTLE} s):")
    ok = final_leftovers(before, scratch) and ok
    say(f"VERDICT {user}: {'PASS' if ok else 'FAIL'}")
    sys.exit(0 if ok else 1)


def soak_verdict(rows, late, window, minutes):
    ok = True
    first, last = rows[:window], rows[-window:]
    say(f"verdict (first {window} vs last {window} minutes):")
    for c in SHELLS:
        for i, what in ((0, "RSS"), (1, "fds")):
            a = statistics.mean(r[c][i] for r in first)
            b = statistics.mean(r[c][i] for r in last)
            change = (b - a) / a
            flat = abs(change) <= 0.05
            ok &= flat
            unit = (lambda v: f"{v / 1024:.2f} MiB") if i == 0 else (lambda v: f"{v:.1f}")
            say(f"  {c} {what}: {unit(a)} -> {unit(b)} ({change:+.1%}) {'flat' if flat else 'NOT FLAT'} "
                "(within 5%)")
        a = statistics.mean(r[c][2] for r in first)
        b = statistics.mean(r[c][2] for r in last)
        say(f"  {c} CPU: {a:.2f} -> {b:.2f} s per minute")
    pooled = lambda ms: sorted(x for m in ms for x in late.bins.get(m, []))
    a, b = pooled(range(window)), pooled(range(minutes - window, minutes))
    if not a or not b:
        say("  lateness: NO PROBE DEPARTURES MATCHED")
        return False
    per_minute = [(m, percentile(sorted(v), 99)) for m, v in sorted(late.bins.items()) if m < minutes]
    trend = theil_sen(per_minute) * minutes
    bound = max(50.0, 0.25 * percentile(a, 99))
    creeping = trend > bound
    ok &= not creeping
    psi = lambda rs: statistics.mean(r["psi"] for r in rs)
    say(f"  lateness p99: {percentile(a, 99)} us -> {percentile(b, 99)} us (p50 {percentile(a, 50)} -> "
        f"{percentile(b, 50)} us, max {a[-1]} -> {b[-1]} us; {len(a)} and {len(b)} departures; CPU pressure "
        f"{psi(first):.2f}% -> {psi(last):.2f}%)")
    say(f"  lateness trend: the per-minute p99's Theil-Sen slope adds {trend:+.1f} us over {minutes} min; "
        f"creeping means more than {bound:.0f} us (50 us or a quarter of the first p99): "
        f"{'CREEPING' if creeping else 'not creeping'}")
    say("  per-minute p99 (us, by departure minute): " + " ".join(str(p) for _, p in per_minute))
    every = sorted(x for v in late.bins.values() for x in v)
    say(f"  whole run: {len(every)} probe departures, lateness p50 {percentile(every, 50)} us, p99 "
        f"{percentile(every, 99)} us, max {every[-1]} us; {late.implausible} pairs out of bounds, receiver socket "
        f"dropped {late.overflow}")
    if late.implausible or late.overflow:
        ok = False
    return ok


# ---------------------------------------------------------------------------------------------------------
# bench/cycles


def cycle_stack(bindir, traces, marker):
    return [f"{bindir}/tm-delay", "--outside", "exec iperf3 -s", "5", "--",
            "sh", "-c", 'SERVER=$TM_OUTER; export SERVER; exec "$@"', "sh",
            f"{bindir}/tm-loss", "--uplink-loss", "0.01", "--downlink-loss", "0.01", "--",
            f"{bindir}/tm-link", "--uplink-queue=droptail", "--uplink-queue-args=packets=100",
            "--downlink-queue=droptail", "--downlink-queue-args=packets=100",
            f"{traces}/Verizon-LTE-short.up", f"{traces}/Verizon-LTE-short.down", "--",
            "sh", "-c", 'touch "$1"; ping -q -i 0.01 "$TM_BASE" >/dev/null 2>&1 & '
            'exec iperf3 -c "$SERVER" -t 30 >/dev/null 2>&1', "sh", marker]


def cmd_cycles(args):
    world_setup()
    count, user, bindir, traces, scratch, seed = int(args[0]), args[1], args[2], args[3], args[4], int(args[5])
    rng = random.Random(seed)
    before = world_state(scratch)
    kinds = {"start-up": 0, "traffic": 0, "traffic, middle shell": 0}
    early = failed = stuck = 0
    ready_times = []
    first_failure = None
    say(f"cycles as {user}: {count} stacks of tm-delay 5 (--outside iperf3 -s) | tm-loss 1% | tm-link "
        f"Verizon-LTE-short (drop-tail 100) | iperf3 up + ping; seed {seed}")
    t_start = time.monotonic()
    for i in range(count):
        tag = f"tmcycles-{user}-{i}"
        marker = f"{scratch}/ready-{i}"
        kind = ("start-up", "traffic", "start-up", "traffic", "traffic, middle shell")[i % 5]
        kinds[kind] += 1
        err_path = f"{scratch}/err-{i}"
        with open(err_path, "w") as err:
            t0 = time.monotonic()
            p = subprocess.Popen(as_user(user, cycle_stack(bindir, traces, marker)), env=user_env(user, tag),
                                 stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err, cwd="/")
        REAP_KEEP.add(p.pid)
        median_ready = statistics.median(ready_times) if ready_times else 0.3
        if kind == "start-up":
            time.sleep(rng.uniform(0, median_ready))
            early += not os.path.exists(marker)
            p.kill()
        else:
            while not os.path.exists(marker) and p.poll() is None and time.monotonic() - t0 < 30:
                time.sleep(0.005)
            if not os.path.exists(marker):
                failed += 1
                first_failure = first_failure or " / ".join(stderr_lines(err_path, 5))
                p.kill()
            else:
                ready_times.append(time.monotonic() - t0)
                time.sleep(rng.uniform(0, 1.0))
                if kind == "traffic":
                    p.kill()
                else:
                    middle = shells(tag).get("tm-loss")
                    if middle:
                        os.kill(middle, signal.SIGKILL)
                    try:  # the outer shell's command has gone: it exits by itself
                        p.wait(10)
                    except subprocess.TimeoutExpired:
                        stuck += 1
                        p.kill()
        p.wait()
        REAP_KEEP.discard(p.pid)
        reap()
        for path in (marker, err_path):
            try:
                os.unlink(path)
            except OSError:
                pass
        if (i + 1) % 100 == 0 or i + 1 == count:
            left = leftovers(before, scratch, settle=3)
            say(f"after {i + 1} stacks ({time.monotonic() - t_start:.0f} s): "
                + ", ".join(f"{len(v)} {k}" for k, v in left.items()))
    say(f"killed: {kinds['start-up']} during start-up ({early} before the innermost command ran, the rest just "
        f"after), {kinds['traffic']} while traffic flowed (0-1 s after it began), {kinds['traffic, middle shell']} "
        f"by killing the middle shell while traffic flowed; start-up to traffic median "
        f"{statistics.median(ready_times) * 1000 if ready_times else float('nan'):.0f} ms; {failed} stacks never "
        f"started their traffic, {stuck} did not exit after their middle shell was killed")
    if first_failure:
        say(f"  first failure: {first_failure}")
    say(f"after all {count} stacks, settled (up to {SETTLE} s):")
    ok = final_leftovers(before, scratch) and not failed and not stuck
    say(f"VERDICT {user}: {'PASS' if ok else 'FAIL'}")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    modes = {"serve": cmd_serve, "client": cmd_client, "soak": cmd_soak, "cycles": cmd_cycles}
    if len(sys.argv) < 2 or sys.argv[1] not in modes:
        sys.exit(__doc__)
    modes[sys.argv[1]](sys.argv[2:])
