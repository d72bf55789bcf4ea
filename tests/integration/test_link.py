"""tm-link: trace-driven capacity per direction, Mahimahi's trace and log formats, exact departure times."""
import os
import re
import time

import pytest

from conftest import assert_ping_rtt, ping_cmd, python_script, sh, verbose_counters

SATURATE_PPS = 2000  # twice what 12 Mbit/s carries in 1500-byte packets
SEND_SECONDS = 6
LOG_LINE = re.compile(r"^(\d+\.\d{3}) (?:# 1500|\+ (\d+)|- (\d+) (\d+\.\d{3})|d (\d+) (\d+))$")


def write_trace(directory, name, text):
    path = os.path.join(directory, name)
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, 0o644)
    return path


def received(stdout):
    """(seq, ip size, monotonic ns) per datagram the probe received."""
    return [tuple(map(int, line.split())) for line in stdout.splitlines() if line.strip()]


def steady_rate_mbit(packets, skip_s=1.0, window_s=4.0):
    """IP-level Mbit/s over WINDOW_S seconds starting SKIP_S after the first arrival (the queue is full by then)."""
    t0 = packets[0][2] + int(skip_s * 1e9)
    inside = [size for _, size, t in packets if t0 <= t < t0 + int(window_s * 1e9)]
    return sum(inside) * 8 / window_s / 1e6


def uplink_run(who, tools, link_args, log=None, seconds=SEND_SECONDS):
    """A saturating UDP sender inside tm-link, its receiver outside; returns (datagrams, result)."""
    probe = python_script("link_probe.py")
    sender = sh(f'exec "$@" send "$TM_OUTER" 9100 {SATURATE_PPS} {seconds} 1500', *probe)
    extra = [f"--uplink-log={log}"] if log else []
    inner = tools.shell("tm-link", *link_args, "--uplink-queue=droptail", "--uplink-queue-args=packets=200",
                        *extra, cmd=sender)
    r = who.run(tools.delay("--isolated", 0, cmd=[*probe, "recv", "9100", "30", "-", *inner]), timeout=60)
    assert r.returncode == 0, r.stderr
    return received(r.stdout), r


def downlink_run(who, tools, link_args):
    """The sender outside, the receiver inside tm-link; returns the datagrams received."""
    probe = python_script("link_probe.py")
    receiver = sh(f'exec "$@" recv 9100 30 "$TM_OUTER:9101" sleep {SEND_SECONDS + 2}', *probe)
    inner = tools.shell("tm-link", *link_args, "--downlink-queue=droptail", "--downlink-queue-args=packets=200",
                        cmd=receiver)
    serve = ["serve-send", "9101", str(SATURATE_PPS), str(SEND_SECONDS), "1500"]
    r = who.run(tools.delay("--isolated", 0, cmd=[*probe, *serve, *inner]), timeout=60)
    assert r.returncode == 0, r.stderr
    return received(r.stdout)


def test_saturated_uplink_through_a_12_mbit_trace_delivers_12_mbit(who, tools, public_tmp):
    trace = write_trace(public_tmp, "12mbit.trace", "1\n")  # one opportunity per ms, looping: 12 Mbit/s
    packets, _ = uplink_run(who, tools, [trace, trace])
    rate = steady_rate_mbit(packets)
    assert abs(rate - 12.0) <= 0.06, f"delivered {rate:.3f} Mbit/s at the IP level, expected 12 within 0.5%"


def test_saturated_downlink_at_a_constant_rate_delivers_it(root, tools):
    packets = downlink_run(root, tools, ["--uplink-rate", "12mbit", "--downlink-rate", "12mbit"])
    rate = steady_rate_mbit(packets)
    assert abs(rate - 12.0) <= 0.06, f"delivered {rate:.3f} Mbit/s at the IP level, expected 12 within 0.5%"


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


def test_no_packet_departs_before_its_opportunity_and_the_log_parses(root, tools, public_tmp):
    # Opportunities at 1, 2, 2, 5 ms of a 5 ms period: uneven on purpose.
    trace = write_trace(public_tmp, "uneven.trace", "1\n2\n2\n5\n")
    log = os.path.join(public_tmp, "up.log")
    packets, r = uplink_run(root, tools, [trace, trace, "--seed", "5"], log=log)
    header, lines = parse_log(log)
    assert "# base timestamp: " in "\n".join(header)
    assert any(h.startswith("# command line: ") and "tm-link" in h for h in header), header
    assert any(h.startswith("# seed: 5") for h in header), header
    assert any(h.startswith("# queue: droptail") for h in header), header
    base = float(next(h for h in header if h.startswith("# base timestamp: ")).split(": ")[1])

    # Every opportunity lies on the trace's schedule: base + 5 ms * k + {1, 2, 2, 5}.
    opportunities = [float(f[0]) for f in lines if f[1] == "#"]
    assert opportunities, "no opportunities logged"
    for t in opportunities:
        offset = round((t - base) % 5.0, 3) % 5.0
        assert offset in (0.0, 1.0, 2.0), f"opportunity at {t} is {offset} ms into a 5 ms period"

    # Departures happen at opportunities, and each datagram arrived no earlier than its logged departure.
    departures = [f for f in lines if f[1] == "-"]
    opportunity_set = set(f[0] for f in lines if f[1] == "#")
    assert all(f[0] in opportunity_set for f in departures)
    ours = [(float(f[0]), int(f[2])) for f in departures if int(f[2]) == 1500]
    assert len(packets) == len(ours), f"{len(packets)} datagrams received, {len(ours)} departures logged"
    seqs = [seq for seq, _, _ in packets]
    assert seqs == sorted(seqs), "datagrams were reordered"
    early = [(t / 1e6, d) for (_, _, t), (d, _) in zip(packets, ours) if t / 1e6 < d]
    assert not early, f"received before their departure (ms): {early[:5]}"

    # Conservation: every arrival departed, was dropped, or was still queued at exit.
    arrivals = sum(1 for f in lines if f[1] == "+")
    dropped = sum(int(f[2]) for f in lines if f[1] == "d")
    assert dropped > 0, "a 2x overload of a droptail queue must drop"
    assert arrivals - len(departures) - dropped in range(0, 201)


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


def test_real_lte_traces_carry_traffic_both_ways(root, tools, public_tmp):
    from conftest import SHARED_TRACES
    up = os.path.join(SHARED_TRACES, "Verizon-LTE-short.up")
    down = os.path.join(SHARED_TRACES, "Verizon-LTE-short.down")
    script = 'exec ping -n -q -c 5 -i 0.2 "$TM_BASE"'
    r = root.run(tools.shell("tm-link", up, down, "-v", cmd=sh(script)), timeout=60)
    assert r.returncode == 0, r.stderr
    counters = verbose_counters(r.stderr)
    assert counters["uplink"].out >= 5 and counters["downlink"].out >= 5, counters


def test_ping_crosses_tm_link_both_ways_v4_and_v6(who, tools):
    for target in ("TM_BASE", "TM_BASE6"):
        cmd = tools.shell("tm-link", "--uplink-rate", "100mbit", "--downlink-rate", "100mbit",
                          cmd=ping_cmd(count=5, target=target))
        assert_ping_rtt(who, tools.delay(5, cmd=cmd), 10.0, 13.0)


def test_once_stops_the_command_at_the_end_of_the_trace(who, tools, public_tmp):
    trace = write_trace(public_tmp, "short.trace", "1\n" * 10 + "500\n")
    start = time.monotonic()
    r = who.run(tools.shell("tm-link", "--once", trace, trace, cmd=["sleep", "20"]), timeout=30)
    elapsed = time.monotonic() - start
    assert "trace has ended (--once)" in r.stderr, r.stderr
    assert r.returncode == 128 + 15, (r.returncode, r.stderr)
    assert elapsed < 5, f"took {elapsed:.1f} s"


BAD_TRACES = {
    "empty-line": ("1\n\n2\n", ":2:"),
    "crlf": ("1\r\n2\r\n", ":1:"),
    "decreasing": ("1\n5\n3\n", ":3:"),
    "junk": ("1\nabc\n", ":2:"),
    "overflow": ("1\n99999999999999999999\n", ":2:"),
    "empty-file": ("", "empty"),
    "last-zero": ("0\n0\n", ":2:"),
}


@pytest.mark.parametrize("case", sorted(BAD_TRACES))
def test_bad_trace_exits_2_naming_file_and_line(root, tools, public_tmp, case):
    text, where = BAD_TRACES[case]
    bad = write_trace(public_tmp, f"{case}.trace", text)
    good = write_trace(public_tmp, "good.trace", "1\n")
    r = root.run(tools.shell("tm-link", good, bad, cmd=["true"]))
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
])
def test_bad_options_exit_2_naming_them(root, tools, args, needle):
    r = root.run(tools.shell("tm-link", *args, cmd=["true"]))
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert needle in r.stderr.splitlines()[0], r.stderr


def tcp_queueing_delays(root, tools, public_tmp, queue, args):
    """Queueing delays (ms) of the uplink's departures during the last 3 s of a 5 s iperf3 upload through a
    12 Mbit/s tm-link with the given queue, and the packets it dropped."""
    log = os.path.join(public_tmp, f"{queue}.log")
    link = tools.shell("tm-link", "--uplink-rate", "12mbit", "--downlink-rate", "12mbit", f"--uplink-queue={queue}",
                       f"--uplink-queue-args={args}", f"--uplink-log={log}",
                       cmd=sh('exec iperf3 -C cubic -c "$TM_OUTER" -t 5 >/dev/null'))
    r = root.run(tools.delay("--isolated", 0, cmd=sh('iperf3 -s -1 -D && sleep 0.5 && exec "$@"', *link)), timeout=60)
    assert r.returncode == 0, r.stderr
    _, lines = parse_log(log)
    end = max(float(f[0]) for f in lines)
    delays = sorted(float(f[3]) for f in lines if f[1] == "-" and float(f[0]) > end - 3000)
    dropped = sum(int(f[2]) for f in lines if f[1] == "d")
    return delays, dropped


def test_codel_keeps_tcp_queueing_delay_near_target_where_droptail_does_not(root, tools, public_tmp):
    codel, codel_drops = tcp_queueing_delays(root, tools, public_tmp, "codel", "target=5,interval=100,packets=1000")
    tail, _ = tcp_queueing_delays(root, tools, public_tmp, "droptail", "packets=1000")
    p95 = lambda d: d[int(0.95 * (len(d) - 1))]
    assert codel and tail, "no departures logged"
    assert codel_drops > 0, "CoDel never dropped under a saturating TCP flow"
    assert p95(codel) < 40, f"CoDel: p95 queueing delay {p95(codel)} ms"
    assert p95(tail) > 150, f"drop-tail with 1000 packets: p95 queueing delay only {p95(tail)} ms"
