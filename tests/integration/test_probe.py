"""tm-probe through real shells and outside them, unprivileged: ICMP (ping and raw sockets) and UDP echoes over
IPv4 and IPv6 with kernel time stamps; and the round trip of trace modulation: probes through tm-modulate with
a known schedule, distilled, give the schedule back, and a TCP benchmark through the original and through the
distilled schedule meets Noble et al.'s criterion."""
import os
import re
import signal
import statistics
import time

import pytest

from conftest import TooSlow, measured, python_script, sh, write_public

ECHO = re.compile(r"^(\d+) (\d+) ([012]) (\d+) ([\d.]+) ([\d.]+|-) (kernel|user)$")


def printed(who, tools, raw):
    """(header line, echoes as (seq, triplet, index, size, send ms, recv ms or None, clock)) of a raw record."""
    r = who.run(tools.tool("tm-probe", "print", raw))
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    echoes = []
    for line in lines[2:]:
        m = ECHO.match(line)
        assert m, f"not an echo line: {line!r}"
        seq, triplet, index, size, send, recv, clock = m.groups()
        echoes.append((int(seq), int(triplet), int(index), int(size), float(send),
                       None if recv == "-" else float(recv), clock))
    return lines[0], echoes


def assert_whole_triplets(echoes, rtt_low_ms, rtt_high_ms, small=64, large=1400):
    """Every triplet whole and answered, in order, sized S1 S2 S2, sent at kernel times, small round trips in
    [RTT_LOW, RTT_HIGH] ms (the upper bound a TooSlow)."""
    assert len(echoes) >= 9 and len(echoes) % 3 == 0, echoes
    for k, (seq, triplet, index, size, send, recv, clock) in enumerate(echoes):
        assert (seq, triplet, index, size) == (k, k // 3, k % 3, small if k % 3 == 0 else large), echoes[k]
        assert recv is not None, f"echo {seq} unanswered"
        assert clock == "kernel", f"echo {seq}: no kernel transmit time stamp"
        assert recv > send
    rtts = [recv - send for _, _, index, _, send, recv, _ in echoes if index == 0]
    assert min(rtts) >= rtt_low_ms, f"a round trip of {min(rtts):.3f} ms, below {rtt_low_ms}"
    if statistics.median(rtts) > rtt_high_ms:
        raise TooSlow(f"round trips {rtts}")


@pytest.mark.parametrize("target,method", [("TM_BASE", "auto"), ("TM_BASE6", "auto"), ("TM_BASE", "raw")])
def test_icmp_echoes_through_a_shell_with_kernel_time_stamps(who, tools, public_tmp, target, method):
    raw = os.path.join(public_tmp, "p.raw")

    def check():
        probe = sh(f'exec "$@" --method {method} --interval 0.1s --duration 1s -o {raw} "${target}"',
                   tools.path("tm-probe"))
        r = who.run(tools.delay(5, "--isolated", cmd=probe), timeout=30)
        assert r.returncode == 0, r.stderr
        header, echoes = printed(who, tools, raw)
        expected = "icmp-raw-socket" if method == "raw" else "icmp-"
        assert f"by {expected}" in header, header
        assert_whole_triplets(echoes, 10.0, 11.0)

    measured(check)


# Each transmit time stamp names its own echo. For 0.35 s a queueing layer on the command's interface drops every
# echo (a pfifo of limit 0), so sendto fails after the kernel has numbered the send and stamped it: keys counted
# by the kernel would from then on name no echo, or the wrong one. Keyed per send (SCM_TS_OPT_ID), every echo
# answered after the outage still has its own kernel send time, and its round trip is the link's.
def test_transmit_time_stamps_stay_with_their_echoes_after_failed_sends(who, tools, public_tmp):
    raw = os.path.join(public_tmp, "f.raw")
    script = (f'"$@" --interval 0.1s --duration 1.6s --timeout 0.5s -o {raw} "$TM_BASE" & p=$!; sleep 0.6; '
              'tc qdisc add dev tm0 root pfifo limit 0 && sleep 0.35 && tc qdisc del dev tm0 root && wait $p')

    def check():
        r = who.run(tools.delay(5, "--isolated", cmd=sh(script, tools.path("tm-probe"))), timeout=30)
        assert r.returncode == 0, r.stderr
        _, echoes = printed(who, tools, raw)
        lost = [e for e in echoes if e[5] is None]
        assert len(lost) >= 2, f"the outage lost only {len(lost)} echoes: nothing tested that"
        after = [e for e in echoes if e[0] > max(e[0] for e in lost)]
        assert len(after) >= 9 and all(e[5] is not None for e in after), after
        assert all(e[6] == "kernel" for e in after), f"echoes after the outage without a kernel send time: {after}"
        rtts = [recv - send for _, _, index, _, send, recv, _ in after if index == 0]
        assert min(rtts) >= 10.0, f"a round trip of {min(rtts):.3f} ms, below 10"
        if statistics.median(rtts) > 11.0:
            raise TooSlow(f"round trips {rtts}")

    measured(check)


def test_an_interrupted_probe_ends_its_record_cleanly(who, tools, public_tmp, spawn):
    raw = os.path.join(public_tmp, "int.raw")
    probe = sh(f'exec "$@" --interval 0.1s -o {raw} "$TM_BASE"', tools.path("tm-probe"))
    p = spawn(who, tools.delay(5, "--isolated", cmd=probe))
    time.sleep(1.5)
    p.send_signal(signal.SIGINT)  # the shell passes it on to tm-probe
    _, err = p.communicate(timeout=30)
    assert p.returncode == 0, err
    assert b"(interrupted)" in err, err
    header, echoes = printed(who, tools, raw)
    assert "no end" not in header, header
    assert_whole_triplets(echoes[:len(echoes) // 3 * 3], 10.0, 1000.0)


def test_udp_echoes_outside_any_shell_as_the_unprivileged_user(user, tools, public_tmp, spawn):
    from conftest import read_until
    server = spawn(user, tools.tool("tm-probe", "server", "--port", 9476))
    read_until(server, "answering UDP echoes on port 9476")
    for target in ("127.0.0.1", "::1"):
        raw = os.path.join(public_tmp, "u.raw")
        r = user.run(tools.tool("tm-probe", "--method", "udp", "--port", 9476, "--interval", "0.1s", "--duration",
                                "0.5s", "-o", raw, target))
        assert r.returncode == 0, r.stderr
        header, echoes = printed(user, tools, raw)
        assert "by udp" in header, header
        assert_whole_triplets(echoes, 0.0, 5.0)


def test_icmp_outside_any_shell_as_the_unprivileged_user(user, tools, public_tmp):
    # The host's net.ipv4.ping_group_range decides: a ping socket, or a refusal that says what to do.
    low, high = map(int, open("/proc/sys/net/ipv4/ping_group_range").read().split())
    raw = os.path.join(public_tmp, "i.raw")
    r = user.run(tools.tool("tm-probe", "--duration", "0.5s", "--interval", "0.1s", "-o", raw, "127.0.0.1"))
    if low <= user.gid <= high:
        assert r.returncode == 0, r.stderr
        assert "icmp-ping-socket" in printed(user, tools, raw)[0]
    else:
        assert r.returncode == 1, r.stderr
        assert "net.ipv4.ping_group_range" in r.stderr and "--method udp" in r.stderr, r.stderr
        assert len(r.stderr.strip().splitlines()) == 1, r.stderr


@pytest.mark.parametrize("args,message", [
    (["127.0.0.1"], "missing -o RAW"),
    (["-o", "/tmp/x.raw"], "missing TARGET"),
    (["--small", "20", "-o", "/tmp/x.raw", "127.0.0.1"], "invalid --small '20'"),
    (["--small", "1400", "--large", "64", "-o", "/tmp/x.raw", "127.0.0.1"], "--small must be smaller"),
    (["--method", "carrier-pigeon", "-o", "/tmp/x.raw", "127.0.0.1"], "invalid --method"),
    (["--interval", "1ms", "-o", "/tmp/x.raw", "127.0.0.1"],
     "invalid --interval '1ms': shorter than the smallest allowed, 10 ms"),
    (["server", "--port", "0"], "invalid --port '0': expected a port from 1 to 65535"),
    (["--port", "9", "-o", "/tmp/x.raw", "127.0.0.1"], "--port goes with --method udp"),
    (["distill", "/nonexistent.raw"], "/nonexistent.raw: cannot open"),
    (["distill", "/etc/hostname"], "/etc/hostname: "),
    (["print"], "missing RAW"),
])
def test_usage_errors_exit_2(root, tools, args, message):
    r = root.run(tools.tool("tm-probe", *args))
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert message in r.stderr.splitlines()[0], r.stderr


# ---------------------------------------------------------------------------------------------------------
# The round trip: the fewest states that change F, Vb, Vr and L at once, each lasting the 20 s the targets
# demand (the full case, more states, is in bench/modulate).

STATES = [  # seconds, F ms, 1/Vb Mbit/s, 1/Vr Mbit/s, L
    (20, 10.0, 4.0, 16.0, 0.01),
    (20, 25.0, 2.0, 8.0, 0.04),
]
# 10 triplets a second (the paper's 1 would take 10 minutes to pin L down): about 1150 echoes, so the mean L is
# known to 0.33 percentage points (binomial SD), and the 1-point bound is 3 SD; a triplet still ends before the
# next begins (the second state's pair is back within 70 ms).
INTERVAL = 0.1


def schedule_text(states):
    return "".join(f"{d}s delay={f}ms rate={b}mbit residual={r}mbit loss={l}\n" for d, f, b, r, l in states)


def distilled_windows(path):
    """(time 0 in ms of CLOCK_MONOTONIC, [(d ms, F ms, Vb us/B, Vr us/B, L)]) of a distilled schedule."""
    t0, rows = None, []
    for line in open(path):
        m = re.search(r"time 0 is the first echo, sent at ([\d.]+) ms", line)
        if m:
            t0 = float(m.group(1))
        if line.strip() and not line.startswith("#"):
            rows.append(tuple(map(float, line.split())))
    assert t0 is not None and rows, path
    return t0, rows


def recovered_per_state(states, base_ms, t0_ms, rows, window_s=5.0, margin_s=0.3):
    """Per state: the means of F, 1/Vb, 1/Vr over the windows that lie wholly inside it (their triplets'
    echoes included), and the mean L over all windows against the configured L at each window's centre."""
    period = sum(s[0] for s in states) * 1000.0
    bounds, t = [], 0.0
    for s in states:
        bounds.append((t, t + s[0] * 1000.0))
        t += s[0] * 1000.0
    inside = {i: [] for i in range(len(states))}
    measured_l, configured_l = [], []
    for k, (d, f, vb, vr, l) in enumerate(rows):
        centre = t0_ms + (k + 0.5) * d - base_ms
        lo, hi = centre - window_s * 500, centre + window_s * 500 + margin_s * 1000
        for i, (begin, end) in enumerate(bounds):
            if lo % period >= begin and lo // period == hi // period and hi % period <= end:
                inside[i].append((f, 8 / vb, 8 / vr))
        state = next(i for i, (begin, end) in enumerate(bounds) if begin <= centre % period < end)
        measured_l.append(l)
        configured_l.append(states[state][4])
    per_state = {i: tuple(statistics.mean(x[j] for x in v) for j in range(3)) for i, v in inside.items() if v}
    return per_state, statistics.mean(measured_l), statistics.mean(configured_l)


def round_trip_table(states, per_state, mean_l, configured_l):
    lines = ["state  F ms (recovered)  1/Vb Mbit/s  1/Vr Mbit/s"]
    for i, (d, f, b, r, l) in enumerate(states):
        got = per_state.get(i)
        lines.append(f"{i + 1}  {f:.3f} ({got[0]:.3f})  {b:.3f} ({got[1]:.3f})  {r:.3f} ({got[2]:.3f})" if got else
                     f"{i + 1}  no window wholly inside")
    lines.append(f"mean L {100 * configured_l:.2f}% (recovered {100 * mean_l:.2f}%)")
    return "\n".join(lines)


def probe_family(root, start, tools, sched, directory, count, seconds, meanwhile):
    """COUNT more distilled schedules of the first SECONDS of SCHED, each from its own probe through its own
    tm-modulate shell (all at once: they share nothing), as the paper distilled a trace family from several
    walks of one path; MEANWHILE() runs while they probe. START(argv) starts a process and returns its
    Popen."""
    def probe(i):
        raw = os.path.join(directory, f"family{i}.raw")
        cmd = sh(f'exec "$@" --interval {INTERVAL}s --duration {seconds}s -q -o {raw} "$TM_BASE"',
                 tools.path("tm-probe"))
        return raw, start(tools.shell("tm-modulate", "--isolated", "--seed", 100 + i, sched, cmd=cmd))

    running = [probe(i) for i in range(count)]
    meanwhile()
    family = []
    for i, (raw, p) in enumerate(running):
        _, err = p.communicate(timeout=seconds + 60)
        assert p.returncode == 0, err
        out = os.path.join(directory, f"family{i}.distilled")
        r = root.run(tools.tool("tm-probe", "distill", raw, "-o", out))
        assert r.returncode == 0, r.stderr
        family.append(out)
    return family


def benchmark(root, tools, original, distilled, nbytes=1_000_000, upload=False):
    """Seconds of 1 MB TCP transfers (downloads, or uploads), trial i through ORIGINAL and through DISTILLED[i],
    both seeded i, taking turns."""
    client = "tcp-push" if upload else "tcp-fetch"
    script = ('mod=$1; a=$2; shift 2; i=0; for b in $DISTILLED; do i=$((i + 1)); for s in "$a" "$b"; do '
              't=$("$mod" --seed $i "$s" -- sh -c \'exec "$@" "$TM_OUTER" 9500 ' + str(nbytes) + '\' sh "$@") '
              '|| exit 1; echo "$s $t"; done; done')
    inner = sh(script, tools.path("tm-modulate"), original, *python_script("modulate_helper.py", client))
    serve = python_script("modulate_helper.py", "tcp-sink" if upload else "tcp-serve", 9500, nbytes)
    r = root.run(tools.delay("--isolated", 0, cmd=[*serve, *inner]), env={"DISTILLED": " ".join(distilled)},
                 timeout=600)
    assert r.returncode == 0, r.stderr
    a, b = [], []
    for line in r.stdout.splitlines():
        path, seconds = line.rsplit(" ", 1)
        (a if path == original else b).append(float(seconds))
    return a, b


def criterion(a, b):
    """(met, verdict): Noble's criterion, the difference of the means below the sum of the standard deviations."""
    mean_a, mean_b, sd_a, sd_b = statistics.mean(a), statistics.mean(b), statistics.stdev(a), statistics.stdev(b)
    verdict = (f"original {mean_a:.3f} s (SD {sd_a:.3f}), distilled {mean_b:.3f} s (SD {sd_b:.3f}); "
               f"|difference| {abs(mean_a - mean_b):.3f} s, sum of SDs {sd_a + sd_b:.3f} s")
    return abs(mean_a - mean_b) < sd_a + sd_b, verdict


def test_probe_distill_replay_round_trip_and_the_benchmark_criterion(root, tools, public_tmp, spawn):
    sched = write_public(public_tmp, "known.sched", schedule_text(STATES))
    raw, log = os.path.join(public_tmp, "known.raw"), os.path.join(public_tmp, "known.log")
    duration = sum(s[0] for s in STATES)
    probe = sh(f'exec "$@" --interval {INTERVAL}s --duration {duration}s -q -o {raw} "$TM_BASE"',
               tools.path("tm-probe"))

    def probe_known_schedule():
        r = root.run(tools.shell("tm-modulate", "--isolated", "--seed", 5, "--log", log, sched, cmd=probe),
                     timeout=duration + 30)
        assert r.returncode == 0, r.stderr

    # For Noble's criterion below, each modulated trial runs over a distillation of its own, as in the paper:
    # this one and four more, of probes of the first state only (all that a 1 MB transfer crosses), taken while
    # this one runs (a probe costs the machine next to nothing).
    family = probe_family(root, lambda argv: spawn(root, argv), tools, sched, public_tmp, 4, 5,
                          meanwhile=probe_known_schedule)
    base = next(float(line.split(": ")[1]) for line in open(log) if line.startswith("# base timestamp: "))
    distilled = os.path.join(public_tmp, "known.distilled")
    r = root.run(tools.tool("tm-probe", "distill", raw, "-o", distilled))
    assert r.returncode == 0, r.stderr
    print(r.stdout)

    t0, rows = distilled_windows(distilled)
    assert len(rows) == duration, f"{len(rows)} windows for {duration} s of probes"
    per_state, mean_l, configured_l = recovered_per_state(STATES, base, t0, rows)
    table = round_trip_table(STATES, per_state, mean_l, configured_l)
    print(table)
    assert set(per_state) == set(range(len(STATES))), table
    for i, (d, f, b, res, l) in enumerate(STATES):
        got_f, got_b, got_r = per_state[i]
        assert abs(got_f - f) <= 1.0, f"state {i + 1}: F off by more than 1 ms\n{table}"
        assert abs(got_b - b) <= 0.1 * b, f"state {i + 1}: 1/Vb off by more than 10%\n{table}"
        assert abs(got_r - res) <= 0.1 * res, f"state {i + 1}: 1/Vr off by more than 10%\n{table}"
    assert abs(mean_l - configured_l) <= 0.01, f"mean L off by more than 1 percentage point\n{table}"

    # Noble's criterion: the difference of the means is smaller than the sum of the standard deviations.
    a, b = benchmark(root, tools, sched, [distilled, *family])
    met, verdict = criterion(a, b)
    verdict = f"1 MB TCP downloads: {verdict}; trials {a} {b}"
    print(verdict)
    assert len(a) == len(b) == 5, verdict
    assert met, verdict
