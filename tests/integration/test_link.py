"""tm-link: trace-driven capacity per direction, Mahimahi's trace and log formats, exact departure times.

Rates are counted on the link's own log, whose times are the trace's schedule to the microsecond: the
datagrams a receiver got are matched, in order, with the log's departures (every queue is a FIFO), so a
window holds exactly the departures the trace allowed, whatever stalls the machine had; the receiver's
kernel timestamps (SO_TIMESTAMPNS) then show that none arrived before its departure.
"""
import os
import re
import time
from dataclasses import dataclass

import pytest

from conftest import TRACES, TooSlow, assert_ping_rtt, measured, ping_cmd, python_script, sh, verbose_counters

SATURATE_PPS = 2000  # twice what 12 Mbit/s carries in 1500-byte packets
SEND_SECONDS = 3.5  # 1 s to fill the queue, then a 2 s window, then margin
LOG_LINE = re.compile(r"^(\d+\.\d{3}) (?:# 1500|\+ (\d+)|- (\d+) (\d+\.\d{3})|d (\d+) (\d+))$")


def write_trace(directory, name, text):
    path = os.path.join(directory, name)
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, 0o644)
    return path


def received(stdout):
    """(seq, ip size, kernel receive time in monotonic ns) per datagram the probe received, in arrival order."""
    return [tuple(map(int, line.split())) for line in stdout.splitlines() if line.strip()]


def uplink_run(who, tools, link_args, log, seconds=SEND_SECONDS, pps=SATURATE_PPS):
    """A saturating UDP sender inside `tm-link -v LINK_ARGS` (its uplink logged to LOG), its receiver outside;
    returns (datagrams, result)."""
    probe = python_script("link_probe.py")
    sender = sh(f'exec "$@" send "$TM_OUTER" 9100 {pps} {seconds} 1500', *probe)
    inner = tools.shell("tm-link", "-v", *link_args, f"--uplink-log={log}", cmd=sender)
    r = who.run(tools.delay("--isolated", 0, cmd=[*probe, "recv", "9100", "30", "-", *inner]), timeout=60)
    assert r.returncode == 0, r.stderr
    assert_probe_kept_up(r.stderr)
    return received(r.stdout), r


def parse_log(path):
    header, lines = [], []
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if line.startswith("#"):
                header.append(line)
                continue
            m = LOG_LINE.match(line)
            assert m, f"{path}:{n}: not in the link-log grammar: {line!r}"
            lines.append(line.split())
    return header, lines


def us(ms_text):
    """A log time ("12345.678" ms) in whole microseconds."""
    return round(float(ms_text) * 1000)


def base_us(header):
    return us(next(h for h in header if h.startswith("# base timestamp: ")).split(": ")[1])


@dataclass
class Opportunity:
    t: int        # us
    waiting: int  # packets queued just before it
    left: int     # packets that departed at it


def opportunities(lines):
    """Every logged opportunity, with the queue it found and what it carried (the log is in time order, an
    opportunity's departures right after it)."""
    found, queued = [], 0
    for f in lines:
        if f[1] == "#":
            found.append(Opportunity(us(f[0]), queued, 0))
        elif f[1] == "+":
            queued += 1
        elif f[1] == "d":
            queued -= int(f[2])
        else:
            assert found and found[-1].t == us(f[0]), f"a departure at {f[0]} ms, not at an opportunity"
            found[-1].left += 1
            queued -= 1
    return found


def saturated(lines, start_us, end_us):
    """The opportunities in [START, END) us, each of which must have carried a packet. One that found packets
    waiting and carried none is the link's fault; one that found the queue empty means the sender (python, on
    a loaded machine) fell behind, and the measurement is taken again."""
    window = [o for o in opportunities(lines) if start_us <= o.t < end_us]
    wasted = [o for o in window if o.waiting and not o.left]
    assert not wasted, f"opportunities unused while packets waited: {wasted[:5]}"
    idle = [o for o in window if not o.waiting]
    if idle:
        raise TooSlow(f"the sender let the queue run empty at {len(idle)} opportunities, e.g. {idle[:3]}")
    return window


def departed_bytes(lines, start_us, end_us):
    """IP bytes that departed in [START, END) us. A saturated link spends each opportunity's 1500 bytes, some of
    them on the packet that leaves at the next one: over a window it carries 1500 per opportunity to within
    one packet (exactly one datagram per opportunity, but for the kernel's few small packets)."""
    return sum(int(f[2]) for f in lines if f[1] == "-" and start_us <= us(f[0]) < end_us)


def assert_probe_kept_up(stderr):
    """A receiver whose socket overflowed lost datagrams the link delivered: that run measured the machine."""
    if "link_probe: the receiving socket dropped" in stderr:
        raise TooSlow(next(line for line in stderr.splitlines() if line.startswith("link_probe: ")))


def matched(packets, lines, size=1500):
    """[(kernel receive time, logged departure time)] in us for each datagram received, matched in order with
    the log's departures of SIZE bytes. Departures left over must be later than the last datagram received:
    they left after the receiver stopped. No datagram arrives before its departure."""
    departures = [us(f[0]) for f in lines if f[1] == "-" and int(f[2]) == size]
    seqs = [seq for seq, _, _ in packets]
    assert seqs == sorted(seqs), "datagrams were reordered"
    assert len(packets) <= len(departures), f"{len(packets)} datagrams received, {len(departures)} departed"
    pairs = [(t / 1000, d) for (_, _, t), d in zip(packets, departures)]
    unreceived = departures[len(packets):]
    assert not unreceived or not pairs or unreceived[0] > pairs[-1][0], \
        f"{len(unreceived)} departed datagrams never arrived, the first at {unreceived[0]} us"
    early = [(t, d) for t, d in pairs if t < d]
    assert not early, f"received before their departure (kernel time, departure, us): {early[:5]}"
    return pairs


def assert_timely(pairs):
    """Half the datagrams reach the receiver within 1 ms of their departure (the ferry hands them over on
    its next turn; only a loaded machine makes that later)."""
    late = sorted(t - d for t, d in pairs)
    if late and late[len(late) // 2] > 1000:
        raise TooSlow(f"median delivery {late[len(late) // 2]} us after the departure")


def version(tools, who):
    r = who.run([tools.path("tm-link"), "--version"])
    return r.stdout.split()[-1]


def check_verbose_report(stderr, direction, lines, queue, pairs):
    """tm-link -v's report of DIRECTION: counters as the log counts them, the queue as configured, lateness
    quantiles in order and (each datagram reaching the receiver after the ferry handed it over) no later than
    the receiver saw them."""
    c = verbose_counters(stderr)[direction]
    arrivals = sum(1 for f in lines if f[1] == "+")
    departures = sum(1 for f in lines if f[1] == "-")
    drops = sum(int(f[2]) for f in lines if f[1] == "d")
    assert (c.packets_in, c.out, c.dropped, c.queued) == (arrivals, departures, drops, arrivals - departures - drops)
    m = re.search(rf"^tm-link: {direction}: (.*); departures late by p50 (\d+) us, p99 (\d+) us, max (\d+) us$",
                  stderr, re.M)
    assert m and m.group(1) == queue, stderr
    p50, p99, most = map(int, m.groups()[1:])
    # The report's rank is ceil(0.99 n) over every departure, the kernel's few small packets too: allow for ten.
    seen = sorted(t - d for t, d in pairs)
    assert p50 <= p99 <= most and p99 <= seen[min(len(seen) - 1, -(-99 * len(seen) // 100) - 1 + 10)], \
        (m.group(0), seen[-5:])


def test_uneven_trace_saturated_departs_on_schedule_and_logs_it(who, tools, public_tmp):
    # Opportunities at 1, 2, 2, 5 ms of a 5 ms period (9.6 Mbit/s): uneven on purpose.
    trace = write_trace(public_tmp, "uneven.trace", "1\n2\n2\n5\n")
    log = os.path.join(public_tmp, "up.log")

    def check():
        packets, r = uplink_run(who, tools, [trace, trace, "--seed", "5", "--uplink-queue=droptail",
                                             "--uplink-queue-args=packets=200"], log)
        header, lines = parse_log(log)
        pairs = matched(packets, lines)
        base = base_us(header)
        window = saturated(lines, base + 1_000_000, base + 3_000_000)
        assert_timely(pairs)
        return r, header, lines, base, window, pairs

    r, header, lines, base, window, pairs = measured(check)
    assert f"# version: tracemod {version(tools, who)}" in header, header
    assert any(h.startswith("# command line: ") and "tm-link" in h for h in header), header
    assert "# seed: 5" in header and "# queue: droptail packets=200" in header, header
    assert "tm-link: seed 5" in r.stderr.splitlines()
    check_verbose_report(r.stderr, "uplink", lines, "droptail packets=200", pairs)

    # Every opportunity lies on the trace's schedule: base + 5 ms * k + {1, 2, 2, 5} ms.
    offsets = sorted({(o.t - base) % 5000 for o in opportunities(lines)})
    assert offsets == [0, 1000, 2000], f"opportunities at {offsets} us into a 5 ms period"
    # Saturated, the 2 s window holds its 1600 opportunities, and carried 1600 packets' worth: 9.6 Mbit/s.
    assert len(window) == 1600
    assert abs(departed_bytes(lines, base + 1_000_000, base + 3_000_000) - 1500 * 1600) < 1500

    # Conservation: every arrival departed, was dropped, or was still queued at exit.
    arrivals = sum(1 for f in lines if f[1] == "+")
    departures = sum(1 for f in lines if f[1] == "-")
    dropped = sum(int(f[2]) for f in lines if f[1] == "d")
    assert dropped > 0, "a 2x overload of a droptail queue must drop"
    assert arrivals - departures - dropped in range(0, 201)


def test_saturated_downlink_at_a_constant_rate_through_drop_head(root, tools, public_tmp):
    """ConstantRate (no trace) at 12 Mbit/s toward the command, its queue dropping from the head."""
    log = os.path.join(public_tmp, "down.log")
    probe = python_script("link_probe.py")
    receiver = sh(f'exec "$@" recv 9100 30 "$TM_OUTER:9101" sleep {SEND_SECONDS + 1.5}', *probe)
    inner = tools.shell("tm-link", "--uplink-rate", "12mbit", "--downlink-rate", "12mbit", "--downlink-queue=drophead",
                        "--downlink-queue-args=packets=200", f"--downlink-log={log}", cmd=receiver)
    serve = ["serve-send", "9101", str(SATURATE_PPS), str(SEND_SECONDS), "1500"]

    def check():
        r = root.run(tools.delay("--isolated", 0, cmd=[*probe, *serve, *inner]), timeout=60)
        assert r.returncode == 0, r.stderr
        assert_probe_kept_up(r.stderr)
        header, lines = parse_log(log)
        packets = received(r.stdout)
        pairs = matched(packets, lines)
        base = base_us(header)
        window = saturated(lines, base + 1_000_000, base + 3_000_000)
        assert_timely(pairs)
        return packets, lines, base, window, pairs

    packets, lines, base, window, pairs = measured(check)
    # 1500 bytes at 12 Mbit/s: an opportunity every ms, 2000 in the 2 s window, carrying 2000 packets' worth.
    assert len(window) == 2000 and all(b.t - a.t == 1000 for a, b in zip(window, window[1:]))
    assert abs(departed_bytes(lines, base + 1_000_000, base + 3_000_000) - 1500 * 2000) < 1500
    assert len(pairs) == sum(1 for f in lines if f[1] == "-" and f[2] == "1500"), "departed datagrams never arrived"
    # Drop-head keeps the newest: once the sender stopped, the 200 it sent last all arrived, the very last
    # among them (drop-tail would have dropped every other one of them on arrival).
    sent = sum(1 for f in lines if f[1] == "+" and f[2] == "1500")
    tail = [seq for seq, _, _ in packets[-200:]]
    assert tail == list(range(sent - 200, sent)), f"{sent} sent; the last 200 received: {tail[:5]}...{tail[-5:]}"
    assert sum(int(f[2]) for f in lines if f[1] == "d") > 1000


def test_mahimahi_log_format_satisfies_mahimahis_own_reader(root, tools, public_tmp):
    # What mm-throughput-graph accepts: integer times and sizes, events + # - only, a base timestamp, and
    # departures whose delay is neither negative nor earlier than the base.
    log = os.path.join(public_tmp, "mm.log")
    uplink_run(root, tools, ["--uplink-rate", "12mbit", "--downlink-rate", "12mbit", "--log-format=mahimahi"], log=log,
               seconds=2)
    base = None
    events = 0
    with open(log) as f:
        for n, line in enumerate(f, 1):
            if line.startswith("#"):
                m = re.match(r"^# base timestamp: (\d+)$", line.rstrip("\n"))
                base = int(m.group(1)) if m else base
                continue
            fields = line.split()
            assert base is not None, f"{log}:{n}: an event before the base timestamp"
            assert fields[0].isdigit() and fields[2].isdigit() and fields[1] in "+#-", f"{log}:{n}: {line!r}"
            if fields[1] == "-":
                assert len(fields) == 4 and fields[3].isdigit(), f"{log}:{n}: {line!r}"
                assert int(fields[0]) - base - int(fields[3]) >= 0, f"{log}:{n}: {line!r}"
            events += 1
    assert events > 1000



def test_the_log_can_be_read_while_the_link_runs(who, tools, public_tmp):
    # A few pings, then the command reads the link's log itself, 1.5 s later and before the shell ends: every
    # line is there, not held until a megabyte has gathered or the shell exits (a SIGKILL would lose it).
    log = os.path.join(public_tmp, "live.log")
    read = 'ping -c 3 -i 0.2 -q "$TM_BASE" >/dev/null && sleep 1.5 && grep -c " - " "$1"'
    r = who.run(tools.shell("tm-link", "--uplink-rate", "10mbit", "--downlink-rate", "10mbit",
                            f"--uplink-log={log}", cmd=sh(read, log)))
    assert r.returncode == 0, r.stderr
    assert int(r.stdout) >= 3, f"{r.stdout.strip()} departures in the log while the link ran"

def trace_opportunities(path, base, end):
    """The times (us) at which a trace played from BASE offers an opportunity, up to END."""
    with open(path) as f:
        times = [int(line) * 1000 for line in f]
    found, loop = [], 0
    while base + loop * times[-1] <= end:
        found += [base + loop * times[-1] + t for t in times if base + loop * times[-1] + t <= end]
        loop += 1
    return found


def test_saturated_link_follows_a_real_lte_trace_both_ways(root, tools, public_tmp):
    # The first seconds of ATT-LTE-driving-2016: uplink 9.6, 0, 0, 12.3, 14.1, 11.5, 0.2 Mbit/s per 500 ms
    # (outages included), downlink 29.5 down to 8.8. Each is saturated above its peak (18 and 31 Mbit/s)
    # for 4.5 s; from 1 s to 4 s every opportunity of the trace must carry a datagram, and only those.
    up, down = (os.path.join(TRACES, f"ATT-LTE-driving-2016.{d}") for d in ("up", "down"))
    logs = {d: os.path.join(public_tmp, f"{d}.log") for d in ("uplink", "downlink")}
    arrivals_inside = os.path.join(public_tmp, "downlink.arrivals")
    probe = python_script("link_probe.py")
    both = sh(f'exec "$@" recv 9102 30 "$TM_OUTER:9101" sh -c \'"$@" send "$TM_OUTER" 9100 1500 4.5 1500; sleep 1\' sh '
              f'"$@" >{arrivals_inside}', *probe)
    link = tools.shell("tm-link", "-v", up, down, "--uplink-queue=droptail", "--uplink-queue-args=packets=300",
                       "--downlink-queue=droptail", "--downlink-queue-args=packets=300", f"--uplink-log={logs['uplink']}",
                       f"--downlink-log={logs['downlink']}", cmd=both)
    outside = [*probe, "recv", "9100", "30", "-", *probe, "serve-send", "9101", "2600", "4.5", "1500", *link]

    def check():
        r = root.run(tools.delay("--isolated", 0, cmd=outside), timeout=60)
        assert r.returncode == 0, r.stderr
        assert_probe_kept_up(r.stderr)
        with open(arrivals_inside) as f:
            packets = {"uplink": received(r.stdout), "downlink": received(f.read())}
        results = {}
        for direction, trace in (("uplink", up), ("downlink", down)):
            header, lines = parse_log(logs[direction])
            base = base_us(header)
            pairs = matched(packets[direction], lines)
            saturated(lines, base + 1_000_000, base + 4_000_000)
            assert_timely(pairs)
            results[direction] = (trace, lines, base, pairs)
        return r, results

    r, results = measured(check)
    for direction, (trace, lines, base, pairs) in results.items():
        logged = [o.t for o in opportunities(lines)]
        assert logged == trace_opportunities(trace, base, logged[-1]), f"{direction}: opportunities off the trace"
        for start in range(1000, 4000, 500):
            low, high = base + start * 1000, base + (start + 500) * 1000
            offered = sum(1 for t in trace_opportunities(trace, base, high - 1) if t >= low)
            delivered = sum(1 for _, d in pairs if low <= d < high)  # datagrams received, by departure time
            small = departed_bytes(lines, low, high) - 1500 * sum(1 for f in lines if f[1] == "-" and f[2] == "1500"
                                                                  and low <= us(f[0]) < high)
            assert abs(1500 * delivered + small - 1500 * offered) < 1500, \
                f"{direction}, {start} ms: {delivered} datagrams (and {small} bytes of others), {offered} opportunities"
        c = verbose_counters(r.stderr)[direction]
        assert c.out == sum(1 for f in lines if f[1] == "-"), (direction, c)


def test_ping_crosses_tm_link_both_ways_v4_and_v6(who, tools, public_tmp):
    # One opportunity every 20 ms each way, at the same instants: a request waits w (0 < w <= 20 ms) for the
    # next uplink one, its reply arrives just after that instant and waits a whole period for the next
    # downlink one. Every RTT is 20 + w: within (20, 40] ms, plus the ferries' microseconds.
    trace = write_trace(public_tmp, "20ms.trace", "20\n")
    for target in ("TM_BASE", "TM_BASE6"):
        cmd = tools.shell("tm-link", trace, trace, cmd=ping_cmd(count=5, interval=0.1, target=target))
        assert_ping_rtt(who, cmd, 20.0, 41.0)


def test_once_stops_the_command_at_the_end_of_the_trace(who, tools, public_tmp):
    trace = write_trace(public_tmp, "short.trace", "1\n" * 10 + "1000\n")  # ends at 1 s
    start = time.monotonic()
    r = who.run(tools.shell("tm-link", "--once", trace, trace, cmd=["sleep", "20"]), timeout=30)
    elapsed = time.monotonic() - start
    assert "trace has ended (--once)" in r.stderr, r.stderr
    assert r.returncode == 128 + 15, (r.returncode, r.stderr)
    # The trace starts before the command does, so the run cannot end before the trace has played.
    assert 1.0 <= elapsed < 5, f"took {elapsed:.2f} s for a trace of 1 s"


BAD_TRACES = {
    "empty-line": ("1\n\n2\n", ":2:"),
    "crlf": ("1\r\n2\r\n", ":1:"),
    "decreasing": ("1\n5\n3\n", ":3:"),
    "junk": ("1\nabc\n", ":2:"),
    "junk-far-in": ("1\n" * 200000 + "abc\n", ":200001:"),
    "overflow": ("1\n99999999999999999999\n", ":2:"),
    "empty-file": ("", "empty"),
    "last-zero": ("0\n0\n", ":2:"),
}


@pytest.mark.parametrize("case", sorted(BAD_TRACES))
def test_bad_trace_is_refused_before_anything_starts(root, tools, public_tmp, case):
    text, where = BAD_TRACES[case]
    bad = write_trace(public_tmp, f"{case}.trace", text)
    good = write_trace(public_tmp, "good.trace", "1\n")
    started = public_tmp / "started"
    r = root.run(tools.shell("tm-link", good, bad, cmd=["touch", started]))
    assert not started.exists(), "the command ran although its link could not be made"
    assert r.returncode == 2, (r.returncode, r.stderr)
    first = r.stderr.splitlines()[0]
    assert first.startswith(f"tm-link: {bad}") and where in first, first


def test_missing_trace_exits_2(root, tools, public_tmp):
    missing = os.path.join(public_tmp, "nope.trace")
    r = root.run(tools.shell("tm-link", missing, missing, cmd=["true"]))
    assert r.returncode == 2 and missing in r.stderr.splitlines()[0], r.stderr


@pytest.mark.parametrize("args,needle", [
    (["--uplink-rate", "12mbit"], "downlink"),
    (["--uplink-rate", "12 furlongs", "--downlink-rate", "1mbit"], "--uplink-rate"),
    (["--uplink-rate", "1mbit", "--downlink-rate", "1mbit", "--uplink-queue", "fifo"], "--uplink-queue"),
    (["--uplink-rate", "1mbit", "--downlink-rate", "1mbit", "--downlink-queue", "droptail",
      "--downlink-queue-args", "pakets=10"], "pakets"),
    (["--uplink-rate", "1mbit", "--downlink-rate", "1mbit", "--once"], "--once"),
    (["--uplink-rate", "1mbit", "--downlink-rate", "1mbit", "--downlink-queue", "codel",
      "--downlink-queue-args", "target=5 ms,interval=100,packets=10"], "--downlink-queue-args (codel target=) '5 ms'"),
    (["--uplink-rate", "1mbit", "--downlink-rate", "1mbit", "--downlink-queue", "droptail",
      "--downlink-queue-args", "bytes=10pkts"], "--downlink-queue-args (droptail bytes=) '10pkts'"),
])
def test_bad_options_exit_2_naming_them(root, tools, args, needle):
    r = root.run(tools.shell("tm-link", *args, cmd=["true"]))
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert needle in r.stderr.splitlines()[0], r.stderr


def tcp_through(root, tools, public_tmp, queue, args):
    """The log lines of a 5 s iperf3 upload (cubic) through a 12 Mbit/s tm-link with the given uplink queue."""
    log = os.path.join(public_tmp, f"{queue}.log")
    link = tools.shell("tm-link", "--uplink-rate", "12mbit", "--downlink-rate", "12mbit", f"--uplink-queue={queue}",
                       f"--uplink-queue-args={args}", f"--uplink-log={log}",
                       cmd=sh('exec iperf3 -C cubic -c "$TM_OUTER" -t 5 >/dev/null'))
    r = root.run(tools.delay("--isolated", 0, cmd=sh('iperf3 -s -1 -D && sleep 0.5 && exec "$@"', *link)), timeout=60)
    assert r.returncode == 0, r.stderr
    return parse_log(log)[1]


# A TCP flow fills any buffer it is given: through 1000 packets of drop-tail its queueing delay reaches
# hundreds of ms. An AQM in front of the same 1000-packet limit must keep it near its target by dropping
# early, while the link stays busy. Measured here: CoDel (target 5 ms) p50 9 ms, p95 12 ms; PIE (reference
# 15 ms) p50 15.5 ms, p95 25-28 ms; the link 99.9% busy. The bounds allow about twice that.
AQMS = {"codel": ("target=5,interval=100,packets=1000", None, 25),
        "pie": ("qdelay_ref=15,max_burst=150,packets=1000", (7.5, 30), 50)}


@pytest.mark.parametrize("queue", AQMS)
def test_aqm_keeps_tcp_queueing_delay_near_its_target_and_the_link_busy(root, tools, public_tmp, queue):
    args, median_range, p95_bound = AQMS[queue]
    lines = tcp_through(root, tools, public_tmp, queue, args)
    end = max(us(f[0]) for f in lines)
    last = [f for f in lines if us(f[0]) > end - 3_000_000]  # the last 3 s: past slow start
    delays = sorted(float(f[3]) for f in last if f[1] == "-")
    assert delays, "no departures logged"
    p50, p95 = delays[len(delays) // 2], delays[int(0.95 * (len(delays) - 1))]
    assert p95 < p95_bound, f"{queue}: p95 queueing delay {p95} ms"
    if median_range:
        assert median_range[0] <= p50 <= median_range[1], f"{queue}: median queueing delay {p50} ms"
    assert sum(int(f[2]) for f in lines if f[1] == "d") > 0, f"{queue} never dropped under a saturating TCP flow"
    sent = sum(int(f[2]) for f in last if f[1] == "-")
    capacity = 1500 * sum(1 for f in last if f[1] == "#")
    assert sent >= 0.95 * capacity, f"{queue}: the link carried {sent} of the {capacity} bytes it offered"


# Queue arguments read as every other value: times as tm-delay's (bare milliseconds as Mahimahi's, or a unit),
# limits as tm-onoff's and tm-modulate's (bare as Mahimahi's, or a unit of the key's kind). Old and new
# spellings of the same queue describe it alike in the log header.
@pytest.mark.parametrize("queue,args,described", [
    ("codel", "target=5,interval=100,packets=1000", "codel target=5 interval=100 packets=1000"),
    ("codel", "target=5ms,interval=0.1s,packets=1000pkts", "codel target=5 interval=100 packets=1000"),
    ("pie", "qdelay_ref=15000us,max_burst=150,bytes=150kB", "pie qdelay_ref=15 max_burst=150 bytes=150000"),
    ("droptail", "packets=100", "droptail packets=100"),
    ("droptail", "packets=100PKTS,bytes=64KiB", "droptail packets=100 bytes=65536"),
    ("red", "bytes=150kB,min=30kB,max=90000", "red bytes=150000 min=30000 max=90000"),
])
def test_queue_arguments_take_the_shared_grammar(root, tools, public_tmp, queue, args, described):
    log = os.path.join(public_tmp, "up.log")
    r = root.run(tools.shell("tm-link", "--uplink-rate", "12mbit", "--downlink-rate", "12mbit",
                             f"--uplink-queue={queue}", f"--uplink-queue-args={args}", f"--uplink-log={log}",
                             cmd=["true"]))
    assert r.returncode == 0, r.stderr
    header, _ = parse_log(log)
    assert any(h.startswith(f"# queue: {described}") for h in header), header
