"""tm-multipath: one interface per path, each behind its own link, delay and loss, and MPTCP across them with no
setup by the user. The far end runs on the shell's outer side (--outside), under mptcpize or with IPPROTO_MPTCP,
for root and the unprivileged user alike. Every figure is checked against what the paths were told to be."""
import json
import re
import subprocess

import pytest

from conftest import TooSlow, assert_ping_rtt, measured, ping_cmd, sh, timely, write_public
from test_outside import free_port

# The two paths: 10 and 20 Mbit/s, 20 and 60 ms one way (round trips of 40 and 120 ms).
RATES = (10e6, 20e6)
DELAYS = (20, 60)
PATHS = tuple(f"rate={int(r / 1e6)}mbit,delay={d}" for r, d in zip(RATES, DELAYS))

# Sends for as long as the receiver reads, over MPTCP (IPPROTO_MPTCP, 262) on port 9700.
MPTCP_SENDER = ("python3 -c 'import socket; s = socket.socket(socket.AF_INET, socket.SOCK_STREAM, 262); "
                "s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind((\"\", 9700)); s.listen(1); "
                "c = s.accept()[0]\n"
                "try:\n  [c.send(bytes(1 << 16)) for _ in iter(int, 1)]\nexcept OSError: pass'")
# Reads over MPTCP from $TM_OUTER:9700 for SECONDS, printing "T BYTES" (CLOCK_MONOTONIC ms, bytes so far) every
# 50 ms: the time base of the links' logs.
MPTCP_RECEIVER = r"""
import os, socket, sys, time
seconds = float(sys.argv[1])
s = socket.socket(socket.AF_INET, socket.SOCK_STREAM, 262)
for _ in range(100):
    try:
        s.connect((os.environ["TM_OUTER"], 9700))
        break
    except OSError:
        time.sleep(0.05)
s.settimeout(0.05)
end, total, last = time.monotonic() + seconds, 0, 0.0
while (now := time.monotonic()) < end:
    try:
        total += len(s.recv(1 << 20))
    except socket.timeout:
        pass
    if now - last >= 0.05:
        print(f"{now * 1000:.3f} {total}", flush=True)
        last = now
"""


def multipath(tools, *paths, outside=None, options=(), cmd):
    argv = [tools.path("tm-multipath")]
    for p in paths:
        argv += ["--path", p]
    if outside:
        argv += ["--outside", outside]
    return argv + list(options) + ["--", *cmd]


def logged_bytes(log, event, start_ms=None, end_ms=None):
    """IP bytes of a link log's EVENT lines ("T + SIZE" arrivals, "T - SIZE DELAY" departures) in [START_MS,
    END_MS)."""
    total = 0
    with open(log) as f:
        for line in f:
            m = re.match(r"([\d.]+) " + re.escape(event) + r" (\d+)", line)
            if m and (start_ms is None or start_ms <= float(m.group(1)) < end_ms):
                total += int(m.group(2))
    return total


def departed_bytes(log, start_ms=None, end_ms=None):
    return logged_bytes(log, "-", start_ms, end_ms)


def base_timestamp(log):
    with open(log) as f:
        return float(re.search(r"^# base timestamp: ([\d.]+)$", f.read(), re.M).group(1))


def iperf_goodput(path):
    """The receiver's goodput of an iperf3 -J run, in bit/s (omitted seconds left out)."""
    with open(path) as f:
        return json.load(f)["end"]["sum_received"]["bits_per_second"]


def subflow_rtts(ss_text):
    """{local address: [(srtt, minrtt) ms of each TCP socket (MPTCP subflow) from it]} in `ss -tinH` output."""
    found = {}
    for local, info in re.findall(r"^\s*(?:[A-Z-]+\s+)?\d+\s+\d+\s+([\d.]+)(?:%\S+)?:\d+\s+\S+\s*\n(.*)$", ss_text, re.M):
        rtt, minrtt = re.search(r"\brtt:([\d.]+)/", info), re.search(r"\bminrtt:([\d.]+)", info)
        if rtt and minrtt:
            found.setdefault(local, []).append((float(rtt.group(1)), float(minrtt.group(1))))
    return found


def test_each_path_has_its_own_delay_and_address(who, tools):
    # Unbound traffic takes path 1; ping bound to path 2's address crosses path 2.
    # One ping at a time (an interval above the RTT): ping stops at its count of replies, so more in flight
    # would count as lost.
    assert_ping_rtt(who, multipath(tools, *PATHS, cmd=ping_cmd(count=5, interval=0.2, target="TM_OUTER")), 40, 45)
    bound = sh('exec ping -n -q -c 5 -i 0.2 -w 10 -I "$TM_PATH2" "$TM_OUTER"')
    assert_ping_rtt(who, multipath(tools, *PATHS, cmd=bound), 120, 125)
    bound6 = sh('exec ping -n -q -c 5 -i 0.2 -w 10 -I "$TM_PATH2_6" "$TM_OUTER6"')
    assert_ping_rtt(who, multipath(tools, *PATHS, cmd=bound6), 120, 125)


def test_each_path_has_its_own_loss(who, tools):
    # Path 1 loses everything (any of tm-loss's models, its arguments joined by ':'); path 2 nothing.
    paths = ["rate=10mbit,loss=gilbert:p=100%:r=1%:h=0:k=0", "rate=10mbit,delay=5"]
    r = who.run(multipath(tools, *paths, cmd=sh('ping -n -q -c 3 -i 0.2 -w 2 "$TM_OUTER"; echo "unbound $?"; '
                                              'ping -n -q -c 3 -i 0.2 -w 5 -I "$TM_PATH2" "$TM_OUTER"')))
    assert r.returncode == 0 and "unbound 1" in r.stdout, r.stdout + r.stderr
    assert "3 packets transmitted, 3 received" in r.stdout, r.stdout


def test_default_path_moves_unbound_traffic(who, tools):
    argv = multipath(tools, *PATHS, options=["--default-path", "2"],
                     cmd=ping_cmd(count=5, interval=0.2, target="TM_BASE"))
    assert_ping_rtt(who, argv, 120, 125)


def test_mptcp_download_uses_both_paths_at_their_delays(who, tools, public_tmp):
    logs = [str(public_tmp / f"path{i}.down") for i in (1, 2)]
    paths = [f"{p},down-log={log}" for p, log in zip(PATHS, logs)]
    result, ss = str(public_tmp / "iperf.json"), str(public_tmp / "ss.txt")
    script = ('mptcpize run iperf3 -c "$TM_OUTER" -R -t 12 -O 3 -J >"$1" & sleep 8; ss -tinH state established >"$2"; '
              'wait $!')

    def check():
        r = who.run(multipath(tools, *paths, outside="mptcpize run iperf3 -s", cmd=sh(script, result, ss)),
                    timeout=60)
        assert r.returncode == 0, r.stderr
        with open(ss) as f:
            rtts = subflow_rtts(f.read())
        # What the paths alone decide first (a subflow on each, never under its delay), so that a miss of theirs
        # fails at once; then what a busy machine can miss (rates, an RTT above its delay).
        # Path i+1's address: the shell's i-th sibling /30.
        subflows = [rtts.get(f"100.64.0.{4 * i + 2}") for i in range(len(DELAYS))]
        for i, delay in enumerate(DELAYS):
            assert subflows[i], f"no subflow from path {i + 1}: {rtts}"
            for srtt, minrtt in subflows[i]:
                assert minrtt >= 2 * delay, f"path {i + 1}'s subflow saw {minrtt} ms"
        goodput = iperf_goodput(result)
        timely(goodput >= 0.85 * sum(RATES), f"MPTCP got {goodput / 1e6:.2f} Mbit/s of {sum(RATES) / 1e6:.0f}")
        for log, rate in zip(logs, RATES):  # each path carried its share
            timely(departed_bytes(log) * 8 > 0.5 * rate * 12, f"{log} carried {departed_bytes(log)} bytes")
        for i, delay in enumerate(DELAYS):
            for srtt, minrtt in subflows[i]:
                if minrtt > 2 * delay + 5:
                    raise TooSlow(f"path {i + 1}'s subflow min RTT {minrtt} ms")

    measured(check)
    # tm-graph draws both paths in one picture, and sums each up under its name.
    svg = str(public_tmp / "paths.svg")
    r = who.run(tools.tool("tm-graph", *logs, "--svg", svg))
    assert r.returncode == 0 and all(f"{log}:\nAverage capacity" in r.stdout for log in logs), r.stderr
    with open(svg) as f:
        picture = f.read()
    assert all(f"{log} delivered" in picture for log in logs), "a path is missing from the picture"


def test_mptcp_to_the_host_on_the_kernel_path(root, tools, public_tmp):
    # As root the far end can be the host itself: both subflows are masqueraded to one address on the way, which
    # MPTCP's tokens do not mind.
    port = free_port()
    server = subprocess.Popen(["mptcpize", "run", "iperf3", "-s", "-1", "-p", str(port)], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    try:
        result = str(public_tmp / "iperf.json")
        script = f'sleep 0.5; exec mptcpize run iperf3 -c "$TM_BASE" -p {port} -R -t 8 -O 2 -J >"$1"'
        r = root.run(multipath(tools, *PATHS, cmd=sh(script, result)), timeout=60)
        assert r.returncode == 0, r.stderr
        goodput = iperf_goodput(result)
        assert goodput >= 0.85 * sum(RATES), f"MPTCP to the host got {goodput / 1e6:.2f} Mbit/s"
    finally:
        server.kill()
        server.wait()


def test_tcp_bound_to_path_2_stays_on_it(who, tools, public_tmp):
    logs = [str(public_tmp / f"path{i}.down") for i in (1, 2)]
    paths = [f"{p},down-log={log}" for p, log in zip(PATHS, logs)]
    result = str(public_tmp / "iperf.json")
    # CUBIC keeps the link's queue occupied; BBR (this machine's default) drains it every 10 s to probe the RTT
    # and gets 93-94% here: a property of the sender, not of the path.
    script = 'exec iperf3 -c "$TM_OUTER" -B "$TM_PATH2" -R -t 12 -O 3 -C cubic -J >"$1"'

    def check():
        r = who.run(multipath(tools, *paths, outside="iperf3 -s", options=["-v"], cmd=sh(script, result)), timeout=60)
        assert r.returncode == 0, r.stderr
        assert re.search(r"^tm-multipath: path 2: downlink: \d+ packets in", r.stderr, re.M), r.stderr
        assert departed_bytes(logs[0]) < 1500, f"path 1 carried {departed_bytes(logs[0])} bytes"
        goodput = iperf_goodput(result)
        timely(goodput >= 0.95 * RATES[1], f"TCP on path 2 got {goodput / 1e6:.2f} Mbit/s of 20")
        timely(departed_bytes(logs[1]) * 8 > 0.95 * RATES[1] * 12,
               f"path 2 carried {departed_bytes(logs[1])} bytes in 12 s, below 95% of 20 Mbit/s")

    measured(check, attempts=2)


# Two paths whose rates differ by direction and from each other: an upload bound to path 2 must get path 2's
# uplink rate, neither path 1's nor its own downlink's.
ASYMMETRIC = ("up-rate=4mbit,down-rate=20mbit,delay=10", "up-rate=8mbit,down-rate=2mbit,delay=10")
UP_RATE_2 = 8e6


def test_an_upload_on_path_2_gets_path_2s_uplink_rate(who, tools, public_tmp):
    logs = [str(public_tmp / f"path{i}.up") for i in (1, 2)]
    paths = [f"{p},up-log={log}" for p, log in zip(ASYMMETRIC, logs)]
    result = str(public_tmp / "iperf.json")
    script = 'exec iperf3 -c "$TM_OUTER" -B "$TM_PATH2" -t 8 -O 2 -C cubic -J >"$1"'

    def check():
        r = who.run(multipath(tools, *paths, outside="iperf3 -s", cmd=sh(script, result)), timeout=60)
        assert r.returncode == 0, r.stderr
        goodput = iperf_goodput(result)
        print(f"upload on path 2: {goodput / 1e6:.2f} Mbit/s (its uplink: 8)")
        assert goodput <= 1.02 * UP_RATE_2, f"TCP up path 2 got {goodput / 1e6:.2f} Mbit/s, more than its 8"
        assert departed_bytes(logs[0]) < 1500, f"path 1's uplink carried {departed_bytes(logs[0])} bytes"
        # Half of it or less is another rate (path 1's 4, path 2's downlink's 2), which no busy machine explains.
        assert goodput > 0.6 * UP_RATE_2, f"TCP up path 2 got {goodput / 1e6:.2f} Mbit/s: another path's rate?"
        if goodput < 0.9 * UP_RATE_2:
            raise TooSlow(f"TCP up path 2 got {goodput / 1e6:.2f} Mbit/s of 8")

    measured(check, attempts=2)


def onoff_trace(public_tmp, on_s, off_s, period_s):
    """20 Mbit/s (5 opportunities every 3 ms) but for OFF_S seconds from ON_S on; the trace loops every PERIOD_S."""
    lines = []
    for ms in range(1, period_s * 1000 + 1):
        if on_s * 1000 < ms <= (on_s + off_s) * 1000:
            continue
        lines += [str(ms)] * (2 if ms % 3 else 1)
    if lines[-1] != str(period_s * 1000):
        lines.append(str(period_s * 1000))
    return write_public(public_tmp, "onoff.trace", "\n".join(lines) + "\n")


def test_mptcp_goes_on_over_the_other_path_while_one_is_off(who, tools, public_tmp):
    # Path 2 (20 Mbit/s) goes off from 4 s to 9 s of its trace; path 1 (10 Mbit/s) carries the transfer alone.
    # The emulator's part: path 2 carries nothing while off, and path 1 carries what it is offered, up to its
    # rate. The kernel's MPTCP then leaves a hole in the data for its retransmission timers (RTOs, then
    # stale_loss_cnt of them before all of the dead subflow's data is sent again), and while the hole lasts the
    # sender offers path 1 less than it could carry (one CI run: 7.76 Mbit/s of 10): the goodput over the 5 s,
    # 73-80% of path 1's rate on the 2-core VM with the kernel's defaults, is held to 60% here
    # (docs/ARCHITECTURE.md §4, "Several paths").
    trace = onoff_trace(public_tmp, 4, 5, 30)
    logs = [str(public_tmp / f"path{i}.down") for i in (1, 2)]
    paths = [f"{PATHS[0]},down-log={logs[0]}", f"trace={trace},delay={DELAYS[1]},down-log={logs[1]}"]
    receiver = ["python3", "-c", MPTCP_RECEIVER, "12"]
    r = who.run(multipath(tools, *paths, outside=MPTCP_SENDER, cmd=receiver), timeout=60)
    assert r.returncode == 0, r.stderr
    start = base_timestamp(logs[1])
    off, on = start + 4000, start + 9000
    samples = [tuple(map(float, line.split())) for line in r.stdout.splitlines()]
    received = lambda t: max((b for s, b in samples if s <= t), default=0)
    assert samples and samples[-1][0] >= on, f"the transfer ended before the outage did: {samples[-1:]}"
    assert departed_bytes(logs[1], off + 100, on) == 0, "path 2 carried data while off"
    # From 1 s into the outage to its end; what the queue held at either end moves the two by under 10%.
    survivor = departed_bytes(logs[0], off + 1000, on) * 8 / 4
    offered = logged_bytes(logs[0], "+", off + 1000, on) * 8 / 4
    assert survivor >= 0.9 * min(RATES[0], offered), \
        f"path 1 carried {survivor / 1e6:.2f} Mbit/s of IP while path 2 was off, offered {offered / 1e6:.2f}"
    goodput = (received(on) - received(off)) * 8 / 5
    assert goodput >= 0.6 * RATES[0], f"{goodput / 1e6:.2f} Mbit/s of goodput over the outage"


def mptcp_counters(text):
    """{name: value} of the MPTcpExt lines of /proc/net/netstat (a line of names, then one of values)."""
    rows = [line.split() for line in text.splitlines() if line.startswith("MPTcpExt:")]
    return dict(zip(rows[0][1:], map(int, rows[1][1:]))) if len(rows) == 2 else {}


def test_notice_withdraws_the_dead_path_from_mptcp(who, tools, public_tmp):
    # As the test above, but path 2's device notices the outage after 100 ms (notice=100ms): its endpoints are
    # withdrawn from the command's path manager, which sends REMOVE_ADDR over path 1, and the sender re-sends
    # path 2's data on path 1 at once instead of after its timers; when the trace comes back the endpoints are
    # added again and a new subflow joins. Measured on the 2-core VM, five runs each: 89.0-91.5% of path 1's rate
    # over the outage with notice=100ms, 78.6-91.8% with 500ms, 74.8-81.7% without; held to 80% here.
    trace = onoff_trace(public_tmp, 4, 5, 30)
    logs = [str(public_tmp / f"path{i}.down") for i in (1, 2)]
    paths = [f"{PATHS[0]},down-log={logs[0]}", f"trace={trace},delay={DELAYS[1]},down-log={logs[1]},notice=100ms"]
    cmd = sh('python3 -c "$1" 12 >"$2"; cat /proc/net/netstat', MPTCP_RECEIVER, str(public_tmp / "received"))
    r = who.run(multipath(tools, *paths, outside=MPTCP_SENDER, options=["-v"], cmd=cmd), timeout=60)
    assert r.returncode == 0, r.stderr
    assert re.search(r"^tm-multipath: path 2: withdrawn from MPTCP at 41\d\d ms", r.stderr, re.M), r.stderr
    assert re.search(r"^tm-multipath: path 2: back in MPTCP at 90\d\d ms", r.stderr, re.M), r.stderr
    counters = mptcp_counters(r.stdout)
    assert counters.get("RmAddrTx", 0) >= 1 and counters.get("MPJoinSynTx", 0) >= 2, counters
    start = base_timestamp(logs[1])
    off, on = start + 4000, start + 9000
    assert departed_bytes(logs[1], on + 1000, on + 3000) > 0, "path 2 carried nothing after the outage"
    with open(public_tmp / "received") as f:
        samples = [tuple(map(float, line.split())) for line in f]
    received = lambda t: max((b for s, b in samples if s <= t), default=0)
    assert samples and samples[-1][0] >= on, f"the transfer ended before the outage did: {samples[-1:]}"
    goodput = (received(on) - received(off)) * 8 / 5
    assert goodput >= 0.8 * RATES[0], f"{goodput / 1e6:.2f} Mbit/s of goodput over the outage"


@pytest.mark.parametrize("argv, message", [
    ([], "give each path with --path SPEC"),
    (["--path", "rate=10mbit,colour=red"], "unknown key 'colour'"),
    (["--path", "delay=10"], "missing path 1 uplink"),
    (["--path", "rate=10mbit", "--default-path", "2"], "--default-path"),
    (["--path", "rate=10mbit,queue=codel:target=5"], "interval"),
    (["--path", "rate=10mbit,down-loss=gilbert:p=1%"], "down-loss"),
    (["--path", "rate=10mbit", "--pcap", "x.pcapng"], "--pcap"),
    (["--path", "rate=10mbit,notice=soon"], "notice="),
    (["--path", "rate=10mbit,notice=0"], "notice="),
    (["--path", "rate=10mbit,up-rate=5mbit"], "rate= and up-rate= both give the uplink's capacity"),
    (["--path", "rate=10mbit", "--path", "rate=5mbit", "--once"], "--once: every path has a constant rate"),
    (["--path", "rate=1mbit"] * 5, "at most 4 paths (MPTCP's 8 endpoints, two per path)"),
])
def test_bad_paths_are_refused_in_one_line(root, tools, argv, message):
    r = root.run([tools.path("tm-multipath"), *argv, "--", "true"])
    assert r.returncode == 2, r.stderr
    assert message in r.stderr.splitlines()[0], r.stderr


def test_nests_inside_and_around_other_shells(who, tools):
    # 20 pings, so that one the VM woke late (CI saw one of 5 at 55.7 ms, the machine otherwise quiet) may pass.
    inner = tools.delay(5, cmd=ping_cmd(count=20, interval=0.1, target="TM_BASE"))
    assert_ping_rtt(who, multipath(tools, *PATHS, cmd=inner), 50, 55)
    around = tools.delay(5, cmd=multipath(tools, *PATHS, cmd=ping_cmd(count=20, interval=0.1, target="TM_BASE")))
    assert_ping_rtt(who, around, 50, 55)
