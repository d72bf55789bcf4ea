"""Faults a long run meets, each survived as documented:

- the disk fills while a log or capture is written: the shell says so once, at once, naming the file; the
  command's traffic flows on; the file keeps whole records only; at exit one line says what was not written and
  the status is non-zero (tmpfs mounts of a few hundred KiB, made and removed by the test);
- the ferry is stopped (SIGSTOP) for 2 s: traffic resumes, and a link behaves as one that stalled (no burst
  faster than its rate, nothing lost beyond its queue's limit), a delay line never delivers early;
- the host helper (kernel path or pasta) or an --outside server is killed mid-run: one clear line, the command
  runs on, and nothing is left once the shell ends;
- a trace or schedule changes or vanishes while it is replayed: it was read at start, nothing changes.
"""
import os
import re
import signal
import struct
import subprocess
import time
from dataclasses import dataclass

import pytest

from conftest import (PATH, TIMEOUT, TooSlow, measured, python_script, read_until, sh, verbose_counters,
                      write_public)
from test_cleanup import (assert_nothing_left, clock_ticks_now, descendants, host_state, namespaces,  # noqa: F401
                          private_tmp, process_table)

LOG_LINE = re.compile(r"^\d+\.\d{3} (?:# 1500|\+ \d+|- \d+ \d+\.\d{3}|d \d+ \d+)$")
FAILED = "write failed (No space left on device): nothing more is written to it; the command runs on"


# ---------------------------------------------------------------------------------------------------------
# A full disk


@pytest.fixture
def small_disk(tmp_path):
    """A 256 KiB tmpfs that root and the unprivileged user can both write to. Unmounted at the end whatever
    happened (lazily if something still holds it), with everything written on it.

    Root mounts it for both: a full disk is the same ENOSPC whoever writes, and so the unprivileged user's run
    is the real one, from an unprivileged shell. A tmpfs of the user's own would need a user namespace of its
    own, and a shell started in there is root in that namespace: another path, not the user's."""
    mnt = tmp_path / "small-disk"
    mnt.mkdir()
    for p in tmp_path.parents:
        if str(p) in ("/", "/tmp", "/var/tmp"):
            break
        os.chmod(p, os.stat(p).st_mode | 0o711)
    os.chmod(tmp_path, 0o711)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k,mode=1777", "tracemod-small-disk", str(mnt)],
                   check=True, timeout=TIMEOUT)
    try:
        yield mnt
    finally:
        # A shell's host helper, forked before the files were opened, may hold them a few tens of ms after the
        # shell has exited: wait for it a while, then detach the mount anyway.
        for _ in range(40):
            if subprocess.run(["umount", str(mnt)], capture_output=True, timeout=TIMEOUT).returncode == 0:
                break
            time.sleep(0.05)
        else:
            subprocess.run(["umount", "--lazy", str(mnt)], timeout=TIMEOUT)
        with open("/proc/self/mounts") as f:
            assert str(mnt) not in f.read(), f"{mnt} still mounted"


def losses(stderr, tool):
    """{what: (records, bytes)} from the exit's lines "TOOL: WHAT: N NOUN (B bytes) not written (why)"."""
    found = re.findall(rf"^{tool}: (.+?): (\d+) [a-z ]+ \((\d+) bytes\) not written \(No space left on device\)$",
                       stderr, re.M)
    return {what: (int(n), int(b)) for what, n, b in found}


def said_once(stderr, tool, what):
    """The line said when WHAT could not be written: exactly once, and before the command's own last word."""
    lines = stderr.splitlines()
    said = [i for i, line in enumerate(lines) if line == f"{tool}: {what}: {FAILED}"]
    assert len(said) == 1, f"{what}: said {len(said)} times: {stderr}"
    assert said[0] < lines.index("command done"), f"{what}: said only at the end, not as it happened: {stderr}"


@pytest.mark.parametrize("fused", [False, True], ids=["alone", "fused"])
def test_a_full_disk_under_a_link_log_is_said_once_and_the_traffic_flows_on(who, tools, small_disk, public_tmp,
                                                                            fused):
    # At 1 Gbit/s a log holds 83,333 opportunity lines a second, some 1.7 MB: the 256 KiB disk under the uplink's
    # log is full within a second, long before the pings end. The downlink's log, on a disk with room, is whole.
    # Fused under a tm-delay, the tm-delay's ferry writes tm-link's logs: the same lines, and the same status 1.
    up, down = small_disk / "up.log", public_tmp / "down.log"
    cmd = sh('ping -n -q -c 60 -i 0.05 -w 20 "$TM_BASE"; s=$?; echo command done >&2; exit $s')
    argv = tools.shell("tm-link", "--uplink-rate", "1gbit", "--downlink-rate", "1gbit", f"--uplink-log={up}",
                       f"--downlink-log={down}", cmd=cmd)
    if fused:
        argv = tools.delay("-v", 0, cmd=argv)
    r = who.run(argv, timeout=60, env={"TM_NO_FUSE": "0"})
    assert "60 packets transmitted, 60 received" in r.stdout, f"the traffic stopped: {r.stdout} {r.stderr}"
    assert r.returncode == 1, f"a short log must fail the run: status {r.returncode}: {r.stderr}"
    assert ("tm-link (level 2) is fused" in r.stderr) == fused, r.stderr
    what = f"--uplink-log {up}"
    said_once(r.stderr, "tm-link", what)
    lost = losses(r.stderr, "tm-link")
    assert list(lost) == [what] and lost[what][0] > 1000 and lost[what][1] > 20_000, f"{lost}: {r.stderr}"
    assert "--downlink-log" not in r.stderr, r.stderr
    for path in (up, down):
        text = path.read_text()
        assert text.endswith("\n"), f"{path} ends in a cut line: {text[-40:]!r}"
        body = [line for line in text.splitlines() if not line.startswith("#")]
        assert body and all(LOG_LINE.match(line) for line in body), f"{path}: a line not in the log's grammar"
        g = subprocess.run(tools.tool("tm-graph", path), capture_output=True, text=True, timeout=TIMEOUT)
        assert g.returncode == 0, f"tm-graph cannot read {path}: {g.stderr}"
    kept, whole = up.stat().st_size, down.stat().st_size
    assert kept + lost[what][1] > whole / 2, f"kept {kept} + lost {lost[what][1]} bytes, the whole downlink {whole}"
    print(f"lost: {lost}; kept {kept} bytes; the downlink's whole log {whole} bytes")


def pcapng_blocks(path):
    """The blocks of a pcapng file as (type, length); fails on a block cut short."""
    data, at, blocks = path.read_bytes(), 0, []
    while at < len(data):
        assert at + 12 <= len(data), f"{path}: a block cut at byte {at} of {len(data)}"
        kind, length = struct.unpack_from("<II", data, at)
        assert at + length <= len(data), f"{path}: a block of {length} bytes cut at byte {len(data) - at}"
        assert struct.unpack_from("<I", data, at + length - 4)[0] == length, f"{path}: a block's lengths differ"
        blocks.append((kind, length))
        at += length
    return blocks


def test_a_full_disk_under_a_capture_is_said_once_and_the_traffic_flows_on(who, tools, small_disk):
    # 300 pings of 1400 bytes captured whole both ways: some 900 KB of frames for a 256 KiB disk.
    pcap = small_disk / "run.pcapng"
    cmd = sh('ping -n -q -c 300 -i 0.01 -s 1400 -w 20 "$TM_BASE"; s=$?; echo command done >&2; exit $s')
    r = who.run(tools.delay("--pcap", pcap, "--pcap-snaplen", 0, 0, cmd=cmd), timeout=60)
    assert "300 packets transmitted, 300 received" in r.stdout, f"the traffic stopped: {r.stdout} {r.stderr}"
    assert r.returncode == 1, f"a short capture must fail the run: status {r.returncode}: {r.stderr}"
    what = f"--pcap {pcap}"
    said_once(r.stderr, "tm-delay", what)
    lost = losses(r.stderr, "tm-delay")
    assert what in lost and lost[what][0] > 100, f"{lost}: {r.stderr}"
    blocks = pcapng_blocks(pcap)
    packets = sum(1 for kind, _ in blocks if kind == 6)
    assert blocks[0][0] == 0x0A0D0D0A and 0 < packets < 600, f"{len(blocks)} blocks, {packets} packets"
    t = subprocess.run(["tcpdump", "-r", str(pcap), "-nn"], capture_output=True, text=True, timeout=TIMEOUT,
                       env={"PATH": PATH})
    assert t.returncode == 0 and "truncated" not in t.stderr, f"tcpdump: {t.stderr}"
    assert len(t.stdout.splitlines()) == packets
    print(f"lost: {lost}; kept: {packets} frames, {pcap.stat().st_size} bytes")


def test_a_log_on_a_disk_with_room_loses_nothing_and_the_status_is_the_commands(who, tools, small_disk):
    log = small_disk / "up.log"
    r = who.run(tools.shell("tm-link", "--uplink-rate", "12mbit", "--downlink-rate", "12mbit", f"--uplink-log={log}",
                            cmd=sh("exit 3")))
    assert r.returncode == 3 and "not written" not in r.stderr and "write failed" not in r.stderr, r.stderr
    assert log.read_text().startswith("# tracemod tm-link (uplink)")


# ---------------------------------------------------------------------------------------------------------
# The ferry stopped


def comm(pid):
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().strip()
    except OSError:
        return ""


def shell_pid(top, name, parent="python3"):
    """The pid of the process called NAME, a child of one called PARENT, among TOP's descendants, waited for."""
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:
        table = process_table()
        for pid in descendants(top):
            if pid != top and comm(pid) == name and pid in table and comm(table[pid][0]) == parent:
                return pid
        time.sleep(0.05)
    raise AssertionError(f"no {name} below a {parent} below {top}")


@dataclass
class StoppedRun:
    got: list  # (seq, sent, received) per datagram that arrived; CLOCK_REALTIME ns, as the probe's
    sent: int
    stopped: int  # when the stop began and ended, CLOCK_REALTIME ns
    resumed: int
    stopped_mono: int  # the same in CLOCK_MONOTONIC ns, the link log's clock
    resumed_mono: int
    err: str


def stopped_run(who, spawn, tools, inner_tool, inner_args, *, pps=250, seconds=5.0, stop_at=1.5, stop_for=2.0):
    """A UDP stream from the command of INNER_TOOL (nested in `tm-delay --isolated 0`, where its receiver runs) to
    its outer side, whose ferry is stopped for STOP_FOR s STOP_AT s into it."""
    probe = python_script("fault_probe.py")
    sender = sh(f'"$@" send "$TM_OUTER" 9300 {pps} {seconds} 1500; s=$?; sleep 0.5; exit $s', *probe)  # drained
    inner = tools.shell(inner_tool, "-v", *inner_args, cmd=sender)
    outer = spawn(who, tools.delay("--isolated", 0, cmd=[*probe, "recv", "9300", *inner]))
    ferry = shell_pid(outer.pid, inner_tool)
    time.sleep(stop_at)
    stopped, stopped_mono = time.time_ns(), time.monotonic_ns()
    os.kill(ferry, signal.SIGSTOP)
    time.sleep(stop_for)
    resumed, resumed_mono = time.time_ns(), time.monotonic_ns()
    os.kill(ferry, signal.SIGCONT)
    out, err = outer.communicate(timeout=60)
    out, err = out.decode(), err.decode()
    assert outer.returncode == 0, err
    sent = int(re.search(r"^sent (\d+)$", out, re.M).group(1))
    got = [tuple(map(int, line.split())) for line in out.splitlines() if re.match(r"^\d+ \d+ \d+$", line)]
    return StoppedRun(got, sent, stopped, resumed, stopped_mono, resumed_mono, err)


# (link rate in Mbit/s, datagrams a second, stop in s). "idle": 250 datagrams a second of 1500 bytes through a
# 12 Mbit/s link (an opportunity a ms), a quarter busy, stopped for 0.5 s: the datagrams of the stop wait in the
# ferry's receive ring with their kernel times. "backlogged": 400 a second through 3 Mbit/s (one each 4 ms), its
# 100-packet queue full when it is stopped for 2 s. Either way the ring (1024 slots) loses none.
STOPS = {"idle": (12, 250, 0.5), "backlogged": (3, 400, 2.0)}


@pytest.mark.parametrize("load", sorted(STOPS))
def test_a_stopped_link_resumes_as_a_link_that_stalled(who, spawn, tools, public_tmp, load):
    # A link that stalled carried nothing meanwhile; it holds what arrived within its queue's limit, drops the
    # rest, and then carries one datagram an opportunity.
    mbit, pps, stop_for = STOPS[load]
    every = 12_000 // mbit  # us between opportunities
    log = public_tmp / "up.log"

    def check():
        run = stopped_run(who, spawn, tools, "tm-link", [
            "--uplink-rate", f"{mbit}mbit", "--downlink-rate", "12mbit", "--uplink-queue=droptail",
            "--uplink-queue-args=packets=100", f"--uplink-log={log}"], pps=pps, stop_for=stop_for)
        err, got = run.err, run.got
        up = verbose_counters(err)["uplink"]
        assert "lost in the kernel" not in err, err
        # The link also carries the kernel's neighbour discovery: a few frames more than the stream.
        assert 0 <= up.packets_in - run.sent <= 10 and up.queued == 0, f"{run.sent} sent: {err}"
        during = sum(1 for _, s, _ in got if run.stopped < s < run.resumed)
        # Nothing lost but what the queue dropped, and in the idle link only what the stop's arrivals put beyond
        # its limit.
        extra = up.packets_in - run.sent  # neighbour discovery, which a full queue may drop too
        assert 0 <= len(got) + up.dropped - run.sent <= extra, \
            f"{run.sent} sent, {len(got)} arrived, {up.dropped} dropped: {err}"
        if load == "idle":
            assert up.dropped <= pps * stop_for - 100 + 10, f"{up.dropped} dropped, {during} of the stop arrived"
        # The link carried nothing while it was stopped: its log has no departure in the stop (but for what
        # left in the 100 ms before the stall was seen), and those after it one an opportunity apart.
        text = log.read_text()
        departures = [micros(t) for t in re.findall(r"^([\d.]+) - 1500 ", text, re.M)]
        stop, resume = run.stopped_mono // 1000, run.resumed_mono // 1000
        inside = [t - stop for t in departures if stop + 150_000 < t < resume - 10_000]
        assert not inside, f"{len(inside)} departures logged during the stop, {inside[:3]} us into it"
        after = [t for t in departures if t >= resume - 10_000]
        assert all(b - a >= every for a, b in zip(after, after[1:])), "departures after the stop too close"
        # Traffic resumed: the stream's last datagrams, sent long after the stop, arrived.
        assert max(seq for seq, _, _ in got) >= run.sent - 5, f"the stream did not resume: {run.sent} sent, {err}"
        # No burst on the wire either: never more datagrams in 20 opportunities than the link carries, give or
        # take the ferry's lateness; a machine that held the ferry back for long (its own figure) is measured
        # again.
        window = 20 * every * 1000
        arrived = sorted(t for _, _, t in got if t > run.resumed)
        worst = max(sum(1 for u in arrived[i:i + 40] if u - t < window) for i, t in enumerate(arrived))
        late = int(re.search(r"^tm-link: uplink: .*departures late by .* max (\d+) us$", err, re.M).group(1))
        if worst > 25:
            gaps = [round((b - a) / 1000) for a, b in zip(arrived, arrived[1:])]
            message = (f"{worst} datagrams arrived within {window // 10**6} ms after the stop (the link carries 20); "
                       f"the ferry was up to {late} us late: {err}; gaps after it (us) {gaps[:150]}")
            if late > 10_000:
                raise TooSlow(message)
            raise AssertionError(message)
        assert any("ferry stalls: 1," in line for line in err.splitlines()), err
        return run, during, up, worst, late

    run, during, up, worst, late = measured(check)
    print(f"sent {run.sent}, {during} of the stop arrived, dropped {up.dropped}, at most {worst} in 20 "
          f"opportunities after it, ferry late by at most {late} us")


def test_a_stopped_delay_line_never_delivers_early_and_loses_nothing(who, spawn, tools):
    run = stopped_run(who, spawn, tools, "tm-delay", ["50"])
    got, sent, stopped, resumed, err = run.got, run.sent, run.stopped, run.resumed, run.err
    up = verbose_counters(err)["uplink"]
    assert "lost in the kernel" not in err and up.dropped == 0 and up.queued == 0, err
    assert len(got) == sent, f"{sent} sent, {len(got)} arrived: {err}"
    shortest = min(t - s for _, s, t in got)
    assert shortest >= 50_000_000, f"a datagram crossed in {shortest / 1e6:.3f} ms, under the 50 ms delay"
    late = [t - s for _, s, t in got if stopped < s < resumed]
    assert late and min(late) >= 50_000_000
    print(f"sent {sent}, shortest delay {shortest / 1e6:.3f} ms")


# ---------------------------------------------------------------------------------------------------------
# The host helper or an --outside server killed

# The command: says it is ready, waits for the test's go (a file), then crosses its link (a ping to its outer
# end, which needs neither the host nor the --outside command) and ends with status 0.
AFTER_GO = ('echo ready; i=0; while [ ! -e "$1" ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i + 1)); done; '
            'exec ping -n -q -c 5 -i 0.1 -w 10 "$TM_OUTER"')


def host_helper(shell):
    """The shell's host helper: the one of its children still in the host's user namespace, as the test is, or
    the pasta it became (which joins the shell's)."""
    ours = os.readlink("/proc/self/ns/user")
    children = [p for p, (parent, _) in process_table().items() if parent == shell]
    helpers = [p for p in children if comm(p) in ("pasta", "passt") or os.readlink(f"/proc/{p}/ns/user") == ours]
    assert len(helpers) == 1, f"host helpers among {children}: {helpers}"
    return helpers[0]


def test_a_killed_host_helper_is_said_and_leaves_nothing(who, root, tools, spawn, private_tmp):
    # As root the helper holds the kernel path (the host's NAT table, tmhN); as the user it has become pasta.
    private, wrap = private_tmp
    go = private["/tmp"] / "go"  # the shell's /tmp is this directory
    before = host_state(private)
    shell = spawn(root, wrap(who, tools.delay(0, cmd=sh(AFTER_GO, "/tmp/go"))))
    read_until(shell, "ready")
    processes = descendants(shell.pid)
    namespace_ids = set().union(*map(namespaces, processes)) - namespaces("self")
    helper = host_helper(shell.pid)
    with_shell = host_state(private)
    killed_at = clock_ticks_now()
    os.kill(helper, signal.SIGKILL)
    # What the helper held on the host goes now, while the shell still runs (the kernel path: its NAT table with
    # its socket, tmhN deleted by the shell; pasta: its tap device in P0, nothing on the host).
    deadline = time.monotonic() + 5
    while (held := {k: with_shell[k] - before[k] for k in ("interfaces", "nft tables")}) and \
            any(host_state(private)[k] & v for k, v in held.items()) and time.monotonic() < deadline:
        time.sleep(0.1)
    still = {k: sorted(host_state(private)[k] & v) for k, v in held.items() if host_state(private)[k] & v}
    assert shell.poll() is None, "the shell ended with its helper"
    go.touch()
    out, err = shell.communicate(timeout=TIMEOUT)
    out, err = out.decode(), err.decode()
    go.unlink()  # the test's own, not the shell's
    assert shell.returncode == 0, f"the command did not run on: {out} {err}"
    assert "5 packets transmitted, 5 received" in out, out
    said = [line for line in err.splitlines() if "the host helper" in line]
    if "running isolated" in err:  # the user, where pasta cannot run: the helper only wrote the id maps
        assert not said, err
    else:
        expected = ("tm-delay: the host helper was killed by signal 9 while the command ran: the host's NAT table "
                    "went with it, and the host link is removed" if who.uid == 0 else
                    "tm-delay: the host helper (pasta) was killed by signal 9 while the command ran: the relay is gone")
        assert len(said) == 1 and said[0].startswith(expected), err
        assert said[0].endswith("$TM_BASE and the network beyond are no longer reachable; the command runs on"), err
    assert not still, f"left on the host while the shell ran on: {still}"
    assert_nothing_left(processes, namespace_ids, killed_at, before, private)


def test_a_killed_outside_server_is_said_and_leaves_nothing(who, root, tools, spawn, private_tmp):
    private, wrap = private_tmp
    go = private["/tmp"] / "go"  # the shell's /tmp is this directory
    before = host_state(private)
    server = "exec python3 -c 'import socket, time; s = socket.create_server((\"\", 9302)); time.sleep(1000)'"
    shell = spawn(root, wrap(who, tools.delay("--outside", server, 0, cmd=sh(AFTER_GO, "/tmp/go"))))
    read_until(shell, "ready")
    processes = descendants(shell.pid)
    namespace_ids = set().union(*map(namespaces, processes)) - namespaces("self")
    killed_at = clock_ticks_now()
    os.kill(shell_pid(shell.pid, "python3", parent="tm-delay"), signal.SIGKILL)  # under its init
    time.sleep(0.5)
    assert shell.poll() is None, "the shell ended with its --outside command"
    go.touch()
    out, err = shell.communicate(timeout=TIMEOUT)
    out, err = out.decode(), err.decode()
    go.unlink()  # the test's own, not the shell's
    assert shell.returncode == 0 and "5 packets transmitted, 5 received" in out, f"{out} {err}"
    said = [line for line in err.splitlines() if line.endswith("while the command ran")]
    assert said == ["tm-delay: the --outside command exited with status 137 (killed by signal 9) while the "
                    "command ran"], err
    assert_nothing_left(processes, namespace_ids, killed_at, before, private)


# ---------------------------------------------------------------------------------------------------------
# A trace or schedule changed while replayed

# What is done to the file ($1) 0.5 s into the run; $2 is new text for it, a different rate or rhythm.
CHANGES = {
    "rewritten": 'printf "$2" > "$1"',  # in place, the same inode
    "replaced": 'printf "$2" > "$1.new" && mv "$1.new" "$1"',  # a new file under the name
    "truncated": ': > "$1"',
    "removed": 'rm "$1"',
}


@pytest.mark.parametrize("change", sorted(CHANGES))
def test_a_trace_changed_while_replayed_changes_nothing(who, tools, public_tmp, change):
    # A trace of one opportunity a ms (12 Mbit/s): the log shows every one of them, 1 ms apart, all run long (a
    # ping keeps the link's time moving: an idle link writes its opportunities as it next runs).
    trace = write_public(public_tmp, "one-a-ms.trace", "1\n")
    os.chown(trace, who.uid, who.gid)
    log = os.path.join(public_tmp, "up.log")
    cmd = changed_during_pings(change, trace, "1\\n1\\n1\\n1\\n")  # four times the rate
    r = who.run(tools.shell("tm-link", "--isolated", trace, trace, f"--uplink-log={log}", cmd=cmd))
    assert r.returncode == 0 and r.stderr == "", r.stderr
    text = open(log).read()
    base = micros(re.search(r"^# base timestamp: ([\d.]+)$", text, re.M).group(1))
    times = [micros(t) - base for t in re.findall(r"^([\d.]+) # 1500$", text, re.M)]
    assert times[-1] > 2_900_000, f"the log ends {times[-1]} us in"
    wrong = [t for t, ms in zip(times, range(1, len(times) + 1)) if t != ms * 1000]
    assert not wrong, f"opportunities not one a ms from the start: {wrong[:5]}"


def micros(text):
    """A log's time ("1234.567", ms to the us) in whole us."""
    whole, frac = text.split(".")
    return int(whole) * 1000 + int(frac.ljust(3, "0")[:3])


def changed_during_pings(change, path, new_text):
    """A command that pings its outer end for 3 s and makes CHANGE to PATH 0.5 s in."""
    script = f'ping -n -q -c 60 -i 0.05 "$TM_OUTER" > /dev/null & sleep 0.5; {CHANGES[change]} || exit 9; wait $!'
    return sh(script, path, new_text)


@pytest.mark.parametrize("change", ["rewritten", "removed"])
def test_a_schedule_changed_while_replayed_changes_nothing(who, tools, public_tmp, change):
    # Two states of 200 ms, looping: their changes, in the log, keep the schedule's own rhythm all run long.
    schedule = write_public(public_tmp, "two.sched", "200ms delay=5ms\n200ms delay=10ms\n")
    os.chown(schedule, who.uid, who.gid)
    log = os.path.join(public_tmp, "m.log")
    new = "50ms delay=1ms\\n50ms delay=2ms\\n"
    cmd = changed_during_pings(change, schedule, new)
    r = who.run(tools.shell("tm-modulate", "--isolated", schedule, f"--log={log}", cmd=cmd))
    assert r.returncode == 0 and r.stderr == "", r.stderr
    text = open(log).read()
    base = micros(re.search(r"^# base timestamp: ([\d.]+)$", text, re.M).group(1))
    states = [(micros(t) - base, int(n)) for t, n in re.findall(r"^([\d.]+) up state (\d+) ", text, re.M)]
    assert len(states) >= 14, states
    assert states == [(200_000 * i, 1 + i % 2) for i in range(len(states))], states[:8]
