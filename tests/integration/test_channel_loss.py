"""tm-loss's channel models on real sockets: bursty loss (Gilbert), bit errors, duplication, link-layer retries and
corruption the receiving kernel detects. Every tolerance is stated in standard deviations of the estimate.
Most run once (as root or as the unprivileged user): each needs thousands of datagrams."""
import math
import re

import pytest

from channel import (assert_within, inversions, lost, mean, runs, tcp_run, udp_run)
from conftest import TooSlow, measured, python_script, sh

LINK_PORT = 9401


def link_probe_run(who, tools, loss_args, streams):
    """Numbered datagrams from link_probe.py through `tm-loss -v LOSS_ARGS`, one stream after another: STREAMS
    are (pps, seconds, size). Returns ({size: set of sequence numbers received}, stderr)."""
    probe = python_script("link_probe.py")
    senders = "; ".join(f'"$@" send "$TM_OUTER" {LINK_PORT} {pps} {secs} {size}' for pps, secs, size in streams)
    inner = tools.loss("-v", *loss_args, cmd=sh(senders, *probe))
    r = who.run(tools.delay("--isolated", 0, cmd=[*probe, "recv", str(LINK_PORT), "30", "-", *inner]), timeout=60)
    assert r.returncode == 0, r.stderr
    got = {}
    for line in r.stdout.splitlines():
        seq, size, _ = map(int, line.split())
        got.setdefault(size, set()).add(seq)
    return got, r.stderr


def dropped(stderr, direction="uplink"):
    return int(re.search(rf"^tm-loss: {direction}: \d+ packets in, \d+ out, (\d+) dropped", stderr, re.M).group(1))


# Gilbert: P = 0.1, R = 0.5. Over n = 40,000 datagrams the loss rate P/(P+R) = 1/6 has a relative SD of
# sqrt((1-pi)/(n pi) (1+l)/(1-l)) = 1.7% (l = 1-P-R, the chain's correlation), and the mean of the ~3,300 bursts
# (geometric, mean 1/R = 2) a relative SD of sqrt((1-R)/bursts) = 1.2%: 10% is 5.9 and 8.2 sigma.
def sent_enough(n, planned):
    """A loaded machine's sender may fall short of its rate: the tolerances assume nearly PLANNED datagrams."""
    if n < 0.975 * planned:
        raise TooSlow(f"only {n} of {planned} datagrams sent")


def missing_of(received):
    """(datagrams sent as far as the receiver can tell, the sequence numbers among them that never arrived)."""
    n = max(received) + 1
    return n, [s for s in range(n) if s not in received]


def assert_drops_explain_the_losses(stderr, missing):
    """Nothing is lost but what the model drops (a loss after the last datagram received goes unseen)."""
    assert 0 <= dropped(stderr) - missing <= 30, f"{dropped(stderr)} dropped, {missing} missing"


def test_gilbert_loss_rate_and_burst_length(user, tools):
    p, r = 0.1, 0.5

    def run():
        got, stderr = link_probe_run(user, tools, ("--seed", 11, "--uplink-loss", f"gilbert:p={p},r={r}"),
                                     [(20000, 2, 64)])
        sent_enough(max(got[64]) + 1, 40000)
        return got, stderr

    got, stderr = measured(run)
    n, missing = missing_of(got[64])
    assert_drops_explain_the_losses(stderr, len(missing))
    pi = p / (p + r)
    rate = len(missing) / n
    assert abs(rate - pi) <= 0.10 * pi, f"loss rate {rate:.4f}, configured {pi:.4f}"
    bursts = [len(b) for b in runs(missing)]
    assert abs(mean(bursts) - 1 / r) <= 0.10 / r, f"mean burst {mean(bursts):.3f}, configured {1 / r}"


# Bit errors: B = 1e-4 hits a 1400-byte packet with probability 1-(1-B)^11200 = 0.674 and a 64-byte one with
# 1-(1-B)^512 = 0.0499: a ratio of 13.5. With 60,000 small and 10,000 large datagrams, the ratio's relative SD is
# sqrt((1-p64)/(n64 p64) + (1-p1400)/(n1400 p1400)) = 1.9%: 10% is 5.2 sigma.
def test_ber_hits_big_packets_more_by_the_formula(root, tools):
    ber = 1e-4

    def run():
        got, stderr = link_probe_run(root, tools, ("--seed", 5, "--uplink-loss", f"ber:{ber}"),
                                     [(30000, 2, 64), (10000, 1, 1400)])
        for size, planned in ((64, 60000), (1400, 10000)):
            sent_enough(max(got[size]) + 1, planned)
        return got, stderr

    got, stderr = measured(run)
    rates, missing = {}, 0
    for size in (64, 1400):
        n, lost_here = missing_of(got[size])
        rates[size] = len(lost_here) / n
        missing += len(lost_here)
    assert_drops_explain_the_losses(stderr, missing)
    expected = {size: 1 - (1 - ber) ** (8 * size) for size in (64, 1400)}
    ratio, formula = rates[1400] / rates[64], expected[1400] / expected[64]
    assert abs(ratio - formula) <= 0.10 * formula, \
        f"loss of 1400-byte / 64-byte packets {rates[1400]:.4f}/{rates[64]:.4f} = {ratio:.2f}, formula {formula:.2f}"
    for size in (64, 1400):
        n = max(got[size]) + 1
        sigma = math.sqrt(expected[size] * (1 - expected[size]) / n)
        assert_within(rates[size], expected[size], sigma, 5, f"loss of {size}-byte packets")


# netem's four-state chain with p13 = 5%, p31 = 40%, p32 = 20%, p23 = 30%, p14 = 1%. Its stationary distribution
# (pi3 = p13/p31 pi1, pi2 = p32/p23 pi3, pi4 = p14 pi1) loses 0.135/1.2183 = 11.08% of the packets. A loss run
# starts from state 1 into 4 (length 1) or into 3, or from 2 into 3, and one in state 3 lasts a geometric
# 1/(p31+p32) = 1.667 packets: runs average (0.01 + 0.075 * 1.667) / 0.085 = 1.588 (variance 1.03). Over 40,000
# datagrams the loss rate's relative SD is 2.3% (from the chain's autocovariances summed) and the ~2,800 runs'
# mean has one of 1.2%: 10% is 4.3 and 8.3 sigma.
MARKOV4 = dict(p13=0.05, p31=0.4, p32=0.2, p23=0.3, p14=0.01)


def test_markov4_state_loss_rate_and_runs(user, tools):
    spec = "markov4:" + ",".join(f"{k}={v}" for k, v in MARKOV4.items())

    def run():
        got, stderr = link_probe_run(user, tools, ("--seed", 13, "--uplink-loss", spec), [(20000, 2, 64)])
        sent_enough(max(got[64]) + 1, 40000)
        return got, stderr

    got, stderr = measured(run)
    n, missing = missing_of(got[64])
    assert_drops_explain_the_losses(stderr, len(missing))
    m = MARKOV4
    pi1 = 1 / (1 + m["p14"] + m["p13"] / m["p31"] * (1 + m["p32"] / m["p23"]))
    loss = pi1 * (m["p14"] + m["p13"] / m["p31"])
    rate = len(missing) / n
    assert abs(rate - loss) <= 0.10 * loss, f"loss rate {rate:.4f}, configured {loss:.4f}"
    starts = {"4": m["p14"], "3": m["p13"] + m["p13"] / m["p31"] * m["p32"]}  # per packet in state 1
    mean_run = (starts["4"] + starts["3"] / (m["p31"] + m["p32"])) / (starts["4"] + starts["3"])
    got_runs = [len(b) for b in runs(missing)]
    assert abs(mean(got_runs) - mean_run) <= 0.10 * mean_run, \
        f"mean loss run {mean(got_runs):.3f} over {len(got_runs)}, configured {mean_run:.3f}"
    assert "uplink: loss markov4:p13=0.05,p31=0.4,p32=0.2,p23=0.3,p14=0.01 (mean loss 0.1108" in stderr, stderr


# Duplication draws from its own stream: the same seed loses the same datagrams with or without it, and about P
# of those delivered arrive twice (binomial, 5 sigma).
def test_duplicates_leave_the_losses_as_they_were(root, tools):
    n, dup = 5000, 0.1
    shell = [tools.path("tm-loss"), "-v", "--seed", 21, "--uplink-loss", 0.2]
    plain = udp_run(root, tools, shell, n, 0.0002)
    doubled = udp_run(root, tools, [*shell, "--uplink-duplicate", dup], n, 0.0002)
    assert lost(plain.up, n) == lost(doubled.up, n)
    seqs = [d.seq for d in doubled.up]
    copies = len(seqs) - len(set(seqs))
    assert len(set(d.seq for d in plain.up)) == len(plain.up), "duplicates without --uplink-duplicate"
    delivered = len(set(seqs))
    assert_within(copies, delivered * dup, math.sqrt(delivered * dup * (1 - dup)), 5, "duplicates")
    assert f"{copies} duplicates" in doubled.summary("uplink")


# ARQ: every attempt is lost with probability 0.4 and costs 1 ms; after 3 retries the datagram is given up
# (probability 0.4^4 = 2.6%). Datagrams 5 ms apart never wait for each other: each arrives k = 0, 1, 2 or 3 ms
# late with probability 0.6 * 0.4^k (binomial counts, 5 sigma). A busy machine can only make a release later,
# so k is read as whole milliseconds (allowing 0.95 ms of lateness); a median lateness beyond k of more than
# 0.2 ms is a timing miss, measured again. Then a burst 0.1 ms apart: a retried datagram holds back those behind
# it, and none ever overtakes another.
def test_arq_retries_add_their_delay_and_keep_order(user, tools):
    shell = [tools.path("tm-loss"), "-v", "--seed", 3, "--uplink-loss", 0.4,
             "--uplink-error-mode", "arq:delay=1ms,retries=3"]
    n = 600

    def spaced():
        run = udp_run(user, tools, shell, n, 0.005)
        assert inversions(run.up) == 0
        base = min(d.delay_ms for d in run.up)
        late = [d.delay_ms - base for d in run.up]
        retries = [math.floor(x + 0.05) for x in late]
        for k in range(4):
            p = 0.6 * 0.4 ** k
            assert_within(retries.count(k), n * p, math.sqrt(n * p * (1 - p)), 5, f"datagrams retried {k} times")
        given_up = len(lost(run.up, n))
        assert_within(given_up, n * 0.4 ** 4, math.sqrt(n * 0.4 ** 4), 5, "datagrams given up")
        assert run.counters()["uplink"].dropped == given_up
        beyond = sorted(x - k for x, k in zip(late, retries))
        if beyond[len(beyond) // 2] > 0.2:
            raise TooSlow(f"median lateness beyond the retries {beyond[len(beyond) // 2]:.3f} ms")

    measured(spaced)
    burst = udp_run(user, tools, shell, 1000, 0.0001)
    assert inversions(burst.up) == 0
    held = sum(1 for a, b in zip(burst.up, burst.up[1:]) if b.delay_ms > 0.9 and abs(b.received - a.received) < 2e5)
    assert held > 0, "no datagram waited behind a retried one"


def csum_errors(run, v6=False):
    return run.snmp["Udp6InCsumErrors" if v6 else "Udp.InCsumErrors"]


# Corrupt: a hit datagram is delivered with one bit flipped and its checksum made final, so the receiving kernel
# counts it in InCsumErrors and discards it; exactly the ones -v reports corrupt, none lost otherwise.
@pytest.mark.parametrize("v6", [False, True], ids=["ipv4", "ipv6"])
def test_corrupt_datagrams_are_discarded_by_the_receiving_kernel(root, tools, v6):
    n = 3000
    shell = [tools.path("tm-loss"), "-v", "--seed", 8, "--uplink-loss", 0.3, "--uplink-error-mode", "corrupt"]
    run = udp_run(root, tools, shell, n, 0.0002, size=400, target="TM_OUTER6" if v6 else "TM_OUTER")
    corrupted = int(re.search(r"(\d+) delivered corrupt", run.summary("uplink")).group(1))
    assert_within(corrupted, n * 0.3, math.sqrt(n * 0.21), 5, "corrupted datagrams")
    assert run.counters()["uplink"].dropped == 0
    assert csum_errors(run, v6) == corrupted
    assert len(run.up) == n - corrupted
    assert all(d.size == 400 for d in run.up)


# TCP through the same: its segments leave the sender's kernel with their checksums to be filled in (and in GSO
# super-frames), yet every corrupted one is counted by the receiving kernel, and TCP still delivers every byte.
def test_corrupt_tcp_segments_are_caught_and_retransmitted(root, tools):
    shell = [tools.path("tm-loss"), "-v", "--seed", 4, "--uplink-loss", 0.01, "--uplink-error-mode", "corrupt"]
    run = tcp_run(root, tools, shell, 4 << 20)
    assert "tcp 4194304 intact" in run.stdout, run.stdout
    corrupted = int(re.search(r"(\d+) delivered corrupt", run.summary("uplink")).group(1))
    assert corrupted > 10
    assert run.snmp["Tcp.InCsumErrors"] == corrupted


@pytest.mark.parametrize("args,needle", [
    (["--uplink-loss", "gilbert:p=0.1"], "gilbert needs r="),
    (["--uplink-loss", "gilbert:p=0.1,r=0.5,x=1"], "unknown key 'x' for gilbert"),
    (["--uplink-loss", "markov4:p13=0.7,p14=0.5"], "p13 + p14 is above 1"),
    (["--uplink-loss", "ber:2"], "invalid --uplink-loss (ber) '2'"),
    (["--uplink-loss", "pareto:1"], "unknown model 'pareto'"),
    (["uplink", "burst"], "invalid uplink loss rate 'burst'"),
    (["--uplink-loss", "0.1", "--uplink-error-mode", "retry"], "invalid --uplink-error-mode 'retry'"),
    (["--uplink-loss", "0.1", "--uplink-error-mode", "arq:delay=5"], "arq needs delay=MS and retries=N"),
    (["--uplink-loss", "0.1", "--downlink-duplicate", "2"], "invalid --downlink-duplicate '2'"),
    (["--uplink-loss", "gilbert:p=0.1,r=0"], "gilbert: r=0 with p above 0 means the first burst never ends"),
    (["--uplink-loss", "markov4:p13=0.2,p31=0"], "markov4: p31=0 with p13 above 0"),
    (["--uplink-error-mode", "corrupt"], "--uplink-error-mode needs a loss model for the uplink"),
    (["--downlink-error-mode", "arq:delay=5,retries=3", "uplink", "0.1"],
     "--downlink-error-mode needs a loss model for the downlink"),
    (["--downlink-duplicate", "0.1", "--downlink-error-mode", "corrupt"],
     "--downlink-error-mode needs a loss model for the downlink"),
])
def test_bad_models_exit_2_naming_them(root, tools, args, needle):
    r = root.run(tools.loss(*args, cmd=["true"]))
    assert r.returncode == 2 and needle in r.stderr.splitlines()[0], r.stderr  # one line says why
