"""Acceptance test of tm-record (issues 4 and 14): inside `tm-link T T` with a droptail queue, record the uplink
with the default options for 30 s, feedback over a Unix socket (off the measured path), and compare the
recorded trace with T. T is a constant rate, a step, a real LTE trace and a synthetic cellular-like trace whose
stalls are followed by bursts (traces/stalls-18-6mbit, which a Wi-Fi-sized queue cannot hold); a Wi-Fi-like
link (a 30-packet CoDel queue) is recorded too, and must not get a deeper queue than Wi-Fi's.

How the comparison is made. The recording's time 0 is its first arrival, which comes an unknown moment after
tm-link's own time 0 (the shell, the server and the client start in between). The test therefore slides T over
the recording, 1 ms at a time within T's first 10 s, and keeps the offset whose per-second opportunity counts
differ least from the recording's (sum of absolute differences). With that offset:
  - total: the recording's lines against T's opportunities in [offset, offset + 30 s): within 2%;
  - shape: Pearson correlation of the 30 per-second counts: at least 0.98. A constant trace has the same count
    every second (give or take one, by rounding), so a correlation is undefined or meaningless there: each
    second must then be within 2% of T instead.
Loss: every recording goes through tm-link with --uplink-log, and the datagrams tm-record counts lost must be
exactly those the log shows the link dropping (its drop lines, among the datagrams sent before the last one
recorded); and each case bounds the loss itself (LOSS_BOUND), so a sender that floods the queue fails.
Root only, but for one 5 s recording as the unprivileged user. Each case takes its recording's length plus
start-up; the figures are printed whether the case passes or not."""
import bisect
import collections
import math
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from typing import Optional

import pytest

from conftest import TRACES, NotMeasured, measured, sh, timely, verbose_counters

DURATION = 30
QUEUE = ("--uplink-queue=droptail", "--uplink-queue-args=packets=1000")
TOKEN = "acceptance"
SEARCH_MS = 10000


def constant_trace(mbit, seconds):
    gap = 12.0 / mbit  # ms per 1500-byte opportunity
    return [math.ceil((i + 1) * gap - 1e-9) for i in range(int(round(seconds * 1000 / gap)))]


def step_trace(phases):
    out, t0 = [], 0
    for mbit, seconds in phases:
        out += [t0 + t for t in constant_trace(mbit, seconds)]
        t0 += seconds * 1000
    return out


def write_trace(path, times):
    with open(path, "w") as f:
        f.write("".join(f"{t}\n" for t in times))
    os.chmod(path, 0o644)
    return path


def read_trace(path):
    with open(path) as f:
        return [int(x) for x in f.read().split()]


def looped(trace, upto_ms):
    period, out, k = trace[-1], [], 0
    while k * period <= upto_ms:
        out += [k * period + t for t in trace]
        k += 1
    return out


def per_second(times, start, seconds):
    return [bisect.bisect_left(times, start + (k + 1) * 1000) - bisect.bisect_left(times, start + k * 1000)
            for k in range(seconds)]


def correlation(a, b):
    ma, mb = sum(a) / len(a), sum(b) / len(b)
    va, vb = sum((x - ma) ** 2 for x in a), sum((y - mb) ** 2 for y in b)
    if va == 0 or vb == 0:
        return float("nan")
    return sum((x - ma) * (y - mb) for x, y in zip(a, b)) / math.sqrt(va * vb)


def compare(reference, recorded, duration=None):
    """(ratio of totals, correlation, recorded per-second, reference per-second, offset ms)."""
    duration = duration or DURATION
    ref = looped(reference, SEARCH_MS + duration * 1000 + 1000)
    mine = per_second(recorded, 0, duration)
    best = None
    for offset in range(SEARCH_MS):
        theirs = per_second(ref, offset, duration)
        err = sum(abs(x - y) for x, y in zip(mine, theirs))
        if best is None or err < best[0]:
            best = (err, offset, theirs)
    _, offset, theirs = best
    total = bisect.bisect_left(ref, offset + duration * 1000) - bisect.bisect_left(ref, offset)
    # A constant link's seconds differ by rounding alone (999 or 1000): no shape to correlate with.
    constant = max(theirs) - min(theirs) <= 1
    return len(recorded) / total, float("nan") if constant else correlation(mine, theirs), mine, theirs, offset


# The sink stops 2 s after the last byte: when tm-link ends, its namespace goes without a FIN. It writes the
# bytes it got and the time between the first and the last.
TCP_SINK = ("import socket,sys,time; s=socket.socket(); s.setsockopt(socket.SOL_SOCKET,socket.SO_REUSEADDR,1); "
            "s.bind(('0.0.0.0',9600)); s.listen(); c,_=s.accept(); c.settimeout(2); n=0; t0=t1=None\n"
            "while True:\n"
            " try: d=c.recv(1<<16)\n"
            " except socket.timeout: break\n"
            " if not d: break\n"
            " t1=time.monotonic(); t0=t0 or t1; n+=len(d)\n"
            "open(sys.argv[1],'w').write(f'{n} {(t1 or 0)-(t0 or 0)}')")
TCP_SOURCE = ("import socket,sys,time; c=socket.create_connection((sys.argv[1],9600)); b=bytes(1<<16); "
              "end=time.monotonic()+float(sys.argv[2])\nwhile time.monotonic()<end: c.sendall(b)\nc.close()")


def record(who, tools, tmp, trace, *, loss=None, competing=False, duration=DURATION, client_args=(), queue=QUEUE):
    """Records the uplink of `tm-link TRACE TRACE` (droptail 1000 packets unless QUEUE) as WHO, the client given
    CLIENT_ARGS, tm-link's uplink log in TMP/up.log (and tm-loss -v's counters in stderr); returns the tools'
    stderr."""
    fb, out, tcp, log = tmp / "fb", tmp / "rec", tmp / "tcp", tmp / "up.log"
    client = sh('exec "$@" "$REC_SERVER"', tools.path("tm-record"), "client", "--token", TOKEN, "--feedback", fb,
                "--duration", duration, "-q", "-o", tmp / "client", *client_args)
    if loss is not None:
        client = tools.loss("-v", "--seed", 1, "uplink", loss, cmd=client)
    inside = sh('export REC_SERVER="$TM_OUTER"; ' +
                (f'python3 -c "$1" "$TM_OUTER" {duration + 5} & ' if competing else "") +
                'shift; exec "$@"', TCP_SOURCE, *client)
    link = tools.shell("tm-link", trace, trace, *queue, "--uplink-log", log, cmd=inside)
    outer = sh('rec=$1 fb=$2 out=$3 sink=$4 tcp=$5; shift 5; '
               '"$rec" server --token ' + TOKEN + ' --feedback "$fb" --once -q -o "$out" & '
               + ('python3 -c "$sink" "$tcp" & ' if competing else "") +
               'while [ ! -S "$fb" ]; do sleep 0.02; done; "$@"; st=$?; wait; exit $st',
               tools.path("tm-record"), fb, out, TCP_SINK, tcp, *link)
    r = who.run(tools.delay("--isolated", 0, cmd=outer), timeout=duration + 40)
    assert r.returncode == 0, r.stderr
    return r.stderr


def report(capsys, name, ratio, corr, mine, theirs, offset, extra=""):
    with capsys.disabled():
        print(f"\n  tm-record {name}: opportunities recorded/link {ratio:.4f}, per-second correlation "
              f"{corr:.4f}, offset {offset} ms{extra}\n    recorded {mine}\n    link     {theirs}")


def loss_of(stderr):
    m = re.search(r"tm-record: up: .* loss ([\d.]+)% \((\d+) of (\d+)\)", stderr)
    assert m, stderr
    return float(m.group(1))


def lost_of(stderr):
    """(datagrams the receiver counts lost, datagrams it expected: up to the last one it recorded)."""
    m = re.search(r"tm-record: up: .* loss [\d.]+% \((\d+) of (\d+)\)", stderr)
    assert m, stderr
    return int(m.group(1)), int(m.group(2))


def sent_of(stderr):
    m = re.search(r"tm-record: up: sent (\d+) packets", stderr)
    assert m, stderr
    return int(m.group(1))


PACKET = 1500  # tm-record's default --packet-size: its data packets' IP bytes


def link_drops(log, expected):
    """(datagrams that reached the link, its drops of them, those among the first EXPECTED) from tm-link's uplink
    log. The recorder's data packets are the link's only ones of PACKET bytes (beside them go its small probes
    and the kernel's), so the k-th arrival of that size is sequence number k-1. A FIFO queue loses the packet that
    just arrived (a drop line right after its arrival, at the same time: the queue was full) or its oldest
    (CoDel, at dequeue); departures leave oldest first."""
    queue, arrived, dropped, last = collections.deque(), 0, [], None
    with open(log) as f:
        for line in f:
            t, kind, n = (line.split() + ["", "", ""])[:3]
            if kind == "+":
                queue.append(arrived if int(n) == PACKET else None)
                arrived += int(n) == PACKET
            elif kind == "-":
                queue.popleft()
            elif kind == "d":
                for _ in range(int(n)):
                    dropped.append(queue.pop() if last == ("+", t) else queue.popleft())
            last = (kind, t)
    dropped = [seq for seq in dropped if seq is not None]
    return arrived, len(dropped), sum(seq < expected for seq in dropped)


@dataclass
class Losses:
    """What the recorder counted lost and what the link log and tm-loss say was dropped."""
    lost: int  # by the receiver, among the datagrams up to the last one it recorded
    expected: int  # those datagrams
    sent: int  # by the sender, in all
    arrived: int  # at the link, by its log
    drops: int  # the link log's drop lines (packets), in all
    before: int  # of them, among the datagrams up to the last recorded (sequence numbers below EXPECTED)
    tmloss: Optional[int] = None  # dropped by tm-loss, before the link (its -v counters)

    def __str__(self):
        return (f"lost {self.lost} of {self.expected} ({self.sent} sent); the link log: {self.arrived} arrived, "
                f"{self.drops} dropped, {self.before} of them before the last datagram recorded"
                + ("" if self.tmloss is None else f"; tm-loss dropped {self.tmloss}"))


def losses(stderr, log, tmloss=False):
    lost, expected = lost_of(stderr)
    arrived, drops, before = link_drops(log, expected)
    return Losses(lost, expected, sent_of(stderr), arrived, drops, before,
                  verbose_counters(stderr)["uplink"].dropped if tmloss else None)


def assert_lost_as_the_link_dropped(l: Losses):
    """The recorder's lost count is the link's drops among the datagrams up to the last one it recorded (those
    sent after it were never missed). With tm-loss before the link, its drops up to there are the loss: the
    link's log then numbers only what tm-loss let through, so the link must drop nothing."""
    if l.tmloss is not None:
        assert l.drops == 0, f"the link dropped {l.drops} datagrams, beyond tm-loss's: {l}"
        # What never reached the link, tm-loss dropped; its count may hold more (the recorder's small probes).
        dropped = l.sent - l.arrived
        assert 0 <= dropped <= l.tmloss, f"datagrams neither dropped by tm-loss nor reaching the link: {l}"
        # tm-loss's drops after the last datagram recorded are among the SENT - EXPECTED sent after it.
        assert l.lost <= dropped <= l.lost + l.sent - l.expected, f"lost other than tm-loss dropped: {l}"
        return
    assert l.arrived == l.sent, f"the link carried other packets than the recorder's, or lost some: {l}"
    assert l.lost == l.before, f"the recorder's lost count is not the link's drops: {l}"


# The recorder's loss, at most, in %. While Wi-Fi's thresholds hold (the steady links, --profile wifi, the
# unprivileged user's 5 s) the queue is kept within 80 ms, at most 160 packets at these rates (24 Mbit/s at
# most), and a loss shrinks the window: the 1000-packet droptail queue never overflows, so nothing may be lost.
# CoDel-30: at 20 Mbit/s its 30 packets are 18 ms, under Wi-Fi's 20 ms low threshold, so there the window grows
# until the queue drops and each drop takes one packet off it: 16.1% and 16.7% lost in two runs without a stall;
# 25%. (With a stall on a busy machine auto rose, loss was ignored, and the queue was flooded: 49-88%.)
# TCP sharing the link may fill the queue: 1% (0 seen). Once auto has raised the thresholds a loss is ignored,
# as the Saturator does: on Verizon's and ATT's uplinks the raised thresholds (320/1280, 640/2560 ms) still fit
# the queue at their rates (0 lost in each run seen): 1%. On stalls-18-6mbit a 6 Mbit/s link holds the 1000
# packets for 2 s, under the raised high threshold (2560 ms), so the window only grows and the queue overflows by
# design: 63% seen; 70% (the 100 Mbit/s --max-rate cap alone would allow 87%).
LOSS_BOUND = {
    "constant-12mbit": 0, "step-5-20-2mbit": 0, "Verizon-LTE-short.up": 1, "ATT-LTE-driving-2016.up": 1,
    "stalls-18-6mbit": 70, "wifi profile": 0, "wifi-like": 25, "competing": 1,
}


def assert_loss_within(stderr, bound):
    assert loss_of(stderr) <= bound, f"the recorder lost {loss_of(stderr):.2f}% of its datagrams, above {bound}%"


def assert_matches(ratio, corr, mine, theirs):
    """The recording against the link: more opportunities than it offered are the recorder's own error; fewer
    may be a sender a busy machine held back (its queue ran dry), so a shortfall is timely(): taken again if the
    machine was busy. The shape (the correlation) is never taken again."""
    assert ratio <= 1.02, f"total opportunities off by {100 * (ratio - 1):.2f}%"
    timely(ratio >= 0.98, f"total opportunities off by {100 * (ratio - 1):.2f}%")
    # A constant trace (its seconds equal, or one opportunity apart at the edges) has no variance to correlate
    # with: every second is checked on its own instead. A second short is checked first: a stall that moved a
    # second's opportunities into the next leaves one short and one over.
    if math.isnan(corr) or max(theirs) - min(theirs) <= 0.01 * max(theirs):
        short = max((y - x) / y for x, y in zip(mine, theirs))
        timely(short <= 0.02, f"a second short by {100 * short:.1f}%")
        worst = max(abs(x - y) / y for x, y in zip(mine, theirs))
        assert worst <= 0.02, f"a second off by {100 * worst:.1f}%"
    else:
        assert corr >= 0.98


# What the sender says of its thresholds when --profile auto kept Wi-Fi's all along.
WIFI_KEPT = "thresholds 20/80 ms (auto: 20/80 ms from the start)"
RAISED = re.compile(r"tm-record: up: ([\d.]+) s: thresholds now (\d+)/(\d+) ms \(--profile auto\)")
SHORTFALL = re.compile(r"tm-record: warning: the queue ran dry (\d+) times while the link could deliver: the trace "
                       r"misses about (\d+) of its opportunities \(([\d.]+)%\)")


def dry_summary(stderr):
    """The receiver's estimate of the opportunities its dry queue cost, in %."""
    m = re.search(r"tm-record: up: .*(queue never ran dry|queue ran dry \d+ times \(about \d+ opportunities "
                  r"missed, ([\d.]+)%\))", stderr)
    assert m, stderr
    return float(m.group(2) or 0)


def stalls_recorded(tools, tmp):
    """The stalls the recording shows: arrival gaps of at least the wifi profile's 20 ms that the next packet
    waited through (it queued that long). A steady emulated link shows them too when the machine is so busy
    that tm-link wakes late: it then delivers what it owes at once, a burst after a stall."""
    r = subprocess.run(tools.tool("tm-record", "distill", tmp / "rec.up.raw", "-o", tmp / "distilled"),
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    with open(tmp / "distilled.delay") as f:
        arrivals = [tuple(map(float, line.split())) for line in f]  # ms since the first, queueing delay in ms
    return [t - before for (before, _), (t, queued) in zip(arrivals, arrivals[1:])
            if t - before >= 20 and queued >= t - before - 1]


def assert_steady_link_recorded_steadily(stderr, tools, tmp, bound):
    """No warning of a short recording, auto kept Wi-Fi's thresholds, the queue never ran dry to any cost, and the
    loss kept within BOUND (with Wi-Fi's thresholds the queue never overflows: LOSS_BOUND). A stall of the
    emulated link itself may upset each of these: tm-link, woken late on a busy machine, delivers
    what it owes at once, a burst after a stall, which auto may take for a cellular link and which may find the
    queue dry. So a miss on a recording that shows a stall is NotMeasured: this attempt's link was not the steady
    one the test needs (CI saw one 31 ms stall on a quiet machine, the probe given 100% and PSI at 2.7%), and it
    is taken again; a recording passes only with every one of these checked."""
    try:
        assert not SHORTFALL.search(stderr), stderr
        assert WIFI_KEPT in stderr, "the thresholds rose on a link that never stalled:\n" + stderr
        assert dry_summary(stderr) < 0.1, stderr
        assert_loss_within(stderr, bound)
    except AssertionError as e:
        stalls = stalls_recorded(tools, tmp)
        if stalls:
            raise NotMeasured(f"the emulated link stalled {len(stalls)} times (the longest {max(stalls):.0f} ms) "
                              f"and: {e}") from None
        raise


def trace_file(tmp, name):
    """The trace NAME where the unprivileged user can read it: one made here, or one of traces/."""
    path = tmp / f"{name}.trace"
    if CASES[name] is None:
        shutil.copy(os.path.join(TRACES, name), path)
        os.chmod(path, 0o644)
        return path
    return write_trace(path, CASES[name]())


# name: how to make T (None: traces/NAME). ATT-LTE-driving-2016.up is the shipped trace a Wi-Fi-sized queue
# records shortest (its stalls last seconds); stalls-18-6mbit stalls every 2 s and bursts at 40 opportunities
# per ms. Seconds recorded: a constant rate needs few (each is checked on its own); the others enough to
# correlate, the step all three steps, and those that stall enough to make the first burst (which auto learns
# from) a small part.
CASES = {
    "constant-12mbit": lambda: constant_trace(12, 1),
    "step-5-20-2mbit": lambda: step_trace([(5, 10), (20, 10), (2, 10)]),
    "Verizon-LTE-short.up": None,
    "ATT-LTE-driving-2016.up": None,
    "stalls-18-6mbit": None,
}
SECONDS = {"constant-12mbit": 10, "Verizon-LTE-short.up": 20}
STEADY = ("constant-12mbit", "step-5-20-2mbit")  # no stall: Wi-Fi's thresholds must do


@pytest.mark.parametrize("name", list(CASES))
def test_record_acceptance_trace_matches_the_link(root, tools, public_tmp, capsys, name):
    measured(lambda: record_and_check(root, tools, public_tmp, capsys, name))


def record_and_check(root, tools, public_tmp, capsys, name):
    trace, duration = trace_file(public_tmp, name), SECONDS.get(name, DURATION)
    stderr = record(root, tools, public_tmp, trace, duration=duration)
    ratio, corr, mine, theirs, offset = compare(read_trace(trace), read_trace(public_tmp / "rec.up"), duration)
    raised = [f"{low}/{high} ms at {at} s" for at, low, high in RAISED.findall(stderr)]
    lost = losses(stderr, public_tmp / "up.log")
    report(capsys, name, ratio, corr, mine, theirs, offset,
           f", loss {loss_of(stderr):.2f}%, dry queue cost about {dry_summary(stderr):.2f}%, thresholds raised: "
           f"{', '.join(raised) or 'never'}\n    {lost}")
    assert_lost_as_the_link_dropped(lost)
    assert_matches(ratio, corr, mine, theirs)
    if name in STEADY:
        assert_steady_link_recorded_steadily(stderr, tools, public_tmp, LOSS_BOUND[name])
    else:
        assert_loss_within(stderr, LOSS_BOUND[name])
    if name == "stalls-18-6mbit":
        assert raised, "the thresholds did not rise on a link that stalls and bursts"


def test_record_acceptance_the_wifi_profile_records_a_bursty_link_short_and_says_so(root, tools, public_tmp,
                                                                                    capsys):
    trace = trace_file(public_tmp, "stalls-18-6mbit")
    stderr = record(root, tools, public_tmp, trace, duration=15, client_args=("--profile", "wifi"))
    ratio, corr, mine, theirs, offset = compare(read_trace(trace), read_trace(public_tmp / "rec.up"), 15)
    warning = SHORTFALL.search(stderr)
    estimate = float(warning.group(3)) if warning else dry_summary(stderr)
    lost = losses(stderr, public_tmp / "up.log")
    report(capsys, "stalls-18-6mbit with --profile wifi", ratio, corr, mine, theirs, offset,
           f", the receiver estimates {estimate:.2f}% missed{'' if warning else ' and did not warn'}\n    {lost}")
    assert_lost_as_the_link_dropped(lost)
    assert_loss_within(stderr, LOSS_BOUND["wifi profile"])
    short = 100 * (1 - ratio)
    assert short > 3, "a queue of Wi-Fi's size should have missed the bursts"
    assert warning, "the recording was short and the receiver did not say so:\n" + stderr
    # The estimate sees the milliseconds after the queue ran dry, at the rate of those before: it may miss
    # part of a burst, and should not invent one.
    assert 0.3 * short <= estimate <= 1.2 * short + 0.2, f"estimated {estimate:.2f}% for {short:.2f}%"
    # distill finds the same in the raw record.
    d = root.run(tools.tool("tm-record", "distill", public_tmp / "rec.up.raw", "-o", public_tmp / "again"))
    assert d.returncode == 0 and SHORTFALL.search(d.stderr).groups() == warning.groups(), d.stderr


# A Wi-Fi link's rate changes with its modulation, without stalls; mac80211 keeps its queue short with CoDel
# (target 20 ms, interval 100 ms). 3 Mbit/s for a fifth of the time: 30 packets are 120 ms there.
WIFI_LIKE = ("--on-off", "20mbit:3s,8mbit:3s,3mbit:2s,12mbit:2s", "--duration", "60s")
CODEL_30 = ("--uplink-queue=codel", "--uplink-queue-args=target=20,interval=100,packets=30")


def departure_delays(log):
    with open(log) as f:
        return [float(line.split()[3]) for line in f if " - " in line]


def test_record_acceptance_a_wifi_like_link_keeps_a_short_queue(root, tools, public_tmp, capsys):
    # A stall of the emulated link voids the attempt (assert_steady_link_recorded_steadily): taken again.
    measured(lambda: record_wifi_like(root, tools, public_tmp, capsys))


def record_wifi_like(root, tools, public_tmp, capsys):
    trace, log, duration = public_tmp / "wifi.trace", public_tmp / "up.log", 20
    r = root.run(tools.tool("tm-trace", "make", *WIFI_LIKE, "-o", trace))
    assert r.returncode == 0, r.stderr
    stderr = record(root, tools, public_tmp, trace, duration=duration, queue=CODEL_30)
    ratio, corr, mine, theirs, offset = compare(read_trace(trace), read_trace(public_tmp / "rec.up"), duration)
    delays = departure_delays(log)
    above = sum(d > 80 for d in delays) / len(delays)
    lost = losses(stderr, log)
    report(capsys, "Wi-Fi-like link, 30-packet CoDel queue", ratio, corr, mine, theirs, offset,
           f", loss {loss_of(stderr):.2f}%; queueing delay above the wifi profile's 80 ms for {100 * above:.2f}% "
           f"of {len(delays)} packets, p95 {sorted(delays)[int(0.95 * len(delays))]:.1f} ms\n    {lost}")
    assert above <= 0.05
    assert_lost_as_the_link_dropped(lost)
    assert_steady_link_recorded_steadily(stderr, tools, public_tmp, LOSS_BOUND["wifi-like"])
    assert_matches(ratio, corr, mine, theirs)


def test_record_acceptance_with_one_percent_loss(root, tools, public_tmp, capsys):
    # 24 Mbit/s for 15 s: the 30000 packets that 12 Mbit/s takes 30 s to send.
    trace = write_trace(public_tmp / "c24.trace", constant_trace(24, 1))
    stderr = record(root, tools, public_tmp, trace, loss=0.01, duration=15)
    ratio, corr, mine, theirs, offset = compare(read_trace(trace), read_trace(public_tmp / "rec.up"), 15)
    loss = loss_of(stderr)
    lost = losses(stderr, public_tmp / "up.log", tmloss=True)
    report(capsys, "constant-24mbit + tm-loss uplink 0.01", ratio, corr, mine, theirs, offset,
           f", loss {loss:.2f}%\n    {lost}")
    assert_lost_as_the_link_dropped(lost)
    # Binomial: 30000 packets lose 300 +- 17; 4 sigma is 0.23%.
    assert 0.77 <= loss <= 1.23
    assert_matches(ratio, corr, mine, theirs)


def test_record_acceptance_with_a_competing_tcp_flow(root, tools, public_tmp, capsys):
    trace = write_trace(public_tmp / "c12.trace", constant_trace(12, 1))
    stderr = record(root, tools, public_tmp, trace, competing=True, duration=20)
    ratio, corr, mine, theirs, offset = compare(read_trace(trace), read_trace(public_tmp / "rec.up"), 20)
    with open(public_tmp / "tcp") as f:
        tcp_bytes, tcp_seconds = (float(x) for x in f.read().split())
    # TCP's share: its bytes as MSS-sized packets against the link's opportunities over its own run time.
    tcp_share = tcp_bytes / 1448 / (1000 * tcp_seconds) if tcp_seconds else 0
    warned = "other traffic shares the link" in stderr
    unsure = "or other traffic shares it and the trace holds only the recorder's share" in stderr
    lost, _ = lost_of(stderr)
    _, drops, _ = link_drops(public_tmp / "up.log", 0)
    report(capsys, "constant-12mbit + competing TCP", ratio, corr, mine, theirs, offset,
           f"\n    the recorder's share of the link: {100 * ratio:.1f}%; TCP's: about {100 * tcp_share:.1f}% "
           f"({tcp_bytes / 1e6:.1f} MB in {tcp_seconds:.1f} s); recorder loss {loss_of(stderr):.2f}% ({lost} lost, "
           f"the link dropped {drops} of both flows); the recorder "
           + ("warned of other traffic" if warned else "said it could not tell whether other traffic shared the link"
              if unsure else "said nothing about other traffic"))
    # TCP's packets are the recorder's size: the log cannot tell whose it dropped, only that none was lost elsewhere.
    assert lost <= drops, f"the recorder lost {lost} datagrams, the link dropped {drops} packets"
    assert_loss_within(stderr, LOSS_BOUND["competing"])
    # What the recorder promises: the trace holds its share of the link, the rest went to the other traffic, and
    # it says so, or says that it cannot tell (a competitor that keeps the queue short looks like a slow link).
    assert tcp_share > 0.1, "the competing flow got nothing: no competition to test"
    assert abs(ratio + tcp_share - 1) <= 0.03, "the recorder's and TCP's shares do not make up the link"
    assert warned or unsure, "the recorder shared the link and said nothing of it:\n" + stderr


def test_record_acceptance_briefly_as_the_unprivileged_user(user, tools, public_tmp, capsys):
    trace = write_trace(public_tmp / "c12.trace", constant_trace(12, 1))
    stderr = record(user, tools, public_tmp, trace, duration=5)
    ratio, corr, mine, theirs, offset = compare(read_trace(trace), read_trace(public_tmp / "rec.up"), 5)
    lost = losses(stderr, public_tmp / "up.log")
    report(capsys, "constant-12mbit, 5 s as the unprivileged user", ratio, corr, mine, theirs, offset, f"\n    {lost}")
    assert_lost_as_the_link_dropped(lost)
    assert_loss_within(stderr, LOSS_BOUND["constant-12mbit"])
    assert_matches(ratio, corr, mine, theirs)
