"""Acceptance test of tm-record (issue 4): inside `tm-link T T` with a droptail queue, record the uplink for 30 s
with feedback over a Unix socket (off the measured path), and compare the recorded trace with T.

How the comparison is made. The recording's time 0 is its first arrival, which comes an unknown moment after
tm-link's own time 0 (the shell, the server and the client start in between). The test therefore slides T over
the recording, 1 ms at a time within T's first 10 s, and keeps the offset whose per-second opportunity counts
differ least from the recording's (sum of absolute differences). With that offset:
  - total: the recording's lines against T's opportunities in [offset, offset + 30 s): within 2%;
  - shape: Pearson correlation of the 30 per-second counts: at least 0.98. A constant trace has the same count
    every second (give or take one, by rounding), so a correlation is undefined or meaningless there: each
    second must then be within 2% of T instead.
Root only, but for one 5 s recording as the unprivileged user. Each case takes 30 s plus start-up; the
figures are printed whether the case passes or not."""
import bisect
import math
import os
import re
import shutil

import pytest

from conftest import SHARED_TRACES, sh

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


def record(who, tools, tmp, trace, *, loss=None, competing=False, duration=DURATION):
    """Records the uplink of `tm-link TRACE TRACE` (droptail 1000 packets) as WHO; returns the tools' stderr."""
    fb, out, tcp = tmp / "fb", tmp / "rec", tmp / "tcp"
    client = sh('exec "$@" "$REC_SERVER"', tools.path("tm-record"), "client", "--token", TOKEN, "--feedback", fb,
                "--duration", duration, "-q", "-o", tmp / "client")
    if loss is not None:
        client = tools.loss("--seed", 1, "uplink", loss, cmd=client)
    inside = sh('export REC_SERVER="$TM_OUTER"; ' +
                (f'python3 -c "$1" "$TM_OUTER" {duration + 5} & ' if competing else "") +
                'shift; exec "$@"', TCP_SOURCE, *client)
    link = tools.shell("tm-link", trace, trace, *QUEUE, cmd=inside)
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


def assert_matches(ratio, corr, mine, theirs):
    assert abs(ratio - 1) <= 0.02, f"total opportunities off by {100 * (ratio - 1):.2f}%"
    if math.isnan(corr):  # constant trace: every second on its own
        worst = max(abs(x - y) / y for x, y in zip(mine, theirs))
        assert worst <= 0.02, f"a second off by {100 * worst:.1f}%"
    else:
        assert corr >= 0.98


CASES = {
    "constant-12mbit": lambda: constant_trace(12, 1),
    "step-5-20-2mbit": lambda: step_trace([(5, 10), (20, 10), (2, 10)]),
    "Verizon-LTE-short.up": None,
}


@pytest.mark.parametrize("name", list(CASES))
def test_record_acceptance_trace_matches_the_link(root, tools, public_tmp, capsys, name):
    if CASES[name] is None:
        trace = public_tmp / name
        shutil.copy(os.path.join(SHARED_TRACES, name), trace)
        os.chmod(trace, 0o644)
    else:
        trace = write_trace(public_tmp / f"{name}.trace", CASES[name]())
    stderr = record(root, tools, public_tmp, trace)
    ratio, corr, mine, theirs, offset = compare(read_trace(trace), read_trace(public_tmp / "rec.up"))
    report(capsys, name, ratio, corr, mine, theirs, offset, f", loss {loss_of(stderr):.2f}%")
    assert_matches(ratio, corr, mine, theirs)
    assert loss_of(stderr) < 0.1


def test_record_acceptance_with_one_percent_loss(root, tools, public_tmp, capsys):
    trace = write_trace(public_tmp / "c12.trace", constant_trace(12, 1))
    stderr = record(root, tools, public_tmp, trace, loss=0.01)
    ratio, corr, mine, theirs, offset = compare(read_trace(trace), read_trace(public_tmp / "rec.up"))
    loss = loss_of(stderr)
    report(capsys, "constant-12mbit + tm-loss uplink 0.01", ratio, corr, mine, theirs, offset, f", loss {loss:.2f}%")
    assert 0.7 <= loss <= 1.3
    assert_matches(ratio, corr, mine, theirs)


def test_record_acceptance_with_a_competing_tcp_flow(root, tools, public_tmp, capsys):
    trace = write_trace(public_tmp / "c12.trace", constant_trace(12, 1))
    stderr = record(root, tools, public_tmp, trace, competing=True)
    ratio, corr, mine, theirs, offset = compare(read_trace(trace), read_trace(public_tmp / "rec.up"))
    with open(public_tmp / "tcp") as f:
        tcp_bytes, tcp_seconds = (float(x) for x in f.read().split())
    # TCP's share: its bytes as MSS-sized packets against the link's opportunities over its own run time.
    tcp_share = tcp_bytes / 1448 / (1000 * tcp_seconds) if tcp_seconds else 0
    report(capsys, "constant-12mbit + competing TCP", ratio, corr, mine, theirs, offset,
           f"\n    the recorder's share of the link: {100 * ratio:.1f}%; TCP's: about {100 * tcp_share:.1f}% "
           f"({tcp_bytes / 1e6:.1f} MB in {tcp_seconds:.1f} s); recorder loss {loss_of(stderr):.2f}%; the recorder "
           f"{'warned' if 'other traffic shares the link' in stderr else 'did not warn'} of other traffic")
    assert 0 < ratio <= 1.02


def test_record_acceptance_briefly_as_the_unprivileged_user(user, tools, public_tmp, capsys):
    trace = write_trace(public_tmp / "c12.trace", constant_trace(12, 1))
    record(user, tools, public_tmp, trace, duration=5)
    ratio, corr, mine, theirs, offset = compare(read_trace(trace), read_trace(public_tmp / "rec.up"), 5)
    report(capsys, "constant-12mbit, 5 s as the unprivileged user", ratio, corr, mine, theirs, offset)
    assert_matches(ratio, corr, mine, theirs)
