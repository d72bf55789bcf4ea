"""tm-loss drops each packet independently at the configured rate, in each direction on its own; a seed makes
the drops reproducible.

The rates are measured on DATAGRAMS numbered UDP datagrams sent from inside tm-loss to an echo outside it:
a datagram that did not reach the echo was dropped on the uplink, an echo that did not come back on the
downlink. With n trials at rate p the drops are binomial, sigma = sqrt(n p (1 - p)); a band of 4 sigma
around n p (at n = 4000 and p = 0.2: 17.5% to 22.5%) fails a correct tm-loss with probability 6e-5 per check
(normal approximation, good at these n). It fails a direction that drops nothing, or the other direction's
rate, almost surely; a rate 0.05 off is 8 sigma away. (A fixed seed makes each run here repeat exactly; the
band is what any seed must meet.)
"""
import math
import re

import pytest

from conftest import TooSlow, measured, python_script, sh, verbose_counters

DATAGRAMS = 4000
UPLINK, DOWNLINK = 0.2, 0.1


def lossy_udp(who, tools, *loss_args):
    """DATAGRAMS datagrams through `tm-loss -v LOSS_ARGS`: (reached the echo, came back: one flag per datagram;
    the -v counters; stderr). A run in which a socket buffer overflowed (python fell behind on a loaded
    machine) counted drops that are not tm-loss's: it is taken again."""
    probe = python_script("udp_probe.py")
    inner = tools.loss("-v", *loss_args, cmd=sh(f'exec "$@" count "$TM_OUTER" 9300 {DATAGRAMS} 4000 100', *probe))

    def run():
        r = who.run(tools.delay("--isolated", 0, cmd=[*probe, "echo", "9300", *inner]), timeout=60)
        assert r.returncode == 0, r.stderr
        m = re.fullmatch(r"reached ([01]+) echoed ([01]+) overflow (\d+) corrupt (\d+)\n", r.stdout)
        assert m, f"unexpected probe output: {r.stdout!r}"
        if m.group(3) != "0":
            raise TooSlow(f"the probe's sockets dropped {m.group(3)} datagrams on a full buffer")
        assert m.group(4) == "0", f"{m.group(4)} datagrams came back altered"
        reached, echoed = ([c == "1" for c in m.group(g)] for g in (1, 2))
        assert not any(e and not r for r, e in zip(reached, echoed)), "an echo of a datagram that never reached it"
        return reached, echoed, verbose_counters(r.stderr), r.stderr

    return measured(run)


def drops(reached, echoed):
    """{direction: (trials, drops)} counted on the datagrams."""
    return {"uplink": (len(reached), reached.count(False)),
            "downlink": (reached.count(True), reached.count(True) - echoed.count(True))}


def assert_binomial(count, trials, rate, what):
    """COUNT out of TRIALS is within 4 standard deviations of RATE."""
    sigma = math.sqrt(trials * rate * (1 - rate))
    assert abs(count - trials * rate) <= 4 * sigma, \
        f"{what}: {count} of {trials} ({count / trials:.4f}), expected {rate} +- {4 * sigma / trials:.4f}"


def seeded(seed):
    return ("--uplink-loss", UPLINK, "--downlink-loss", DOWNLINK, "--seed", seed)


def test_same_seed_drops_the_same_packets_and_another_seed_others(who, tools):
    first = lossy_udp(who, tools, *seeded(7))
    again = lossy_udp(who, tools, *seeded(7))
    for direction, (trials, dropped) in drops(*first[:2]).items():
        assert 0 < dropped < trials, f"{direction}: {dropped} of {trials} dropped"
    assert first[:2] == again[:2], "with the same seed, other datagrams were dropped"
    assert first[2] == again[2]
    other = lossy_udp(who, tools, *seeded(8))
    assert other[0] != first[0] and other[1] != first[1], "seed 8 dropped what seed 7 did"


def test_drop_rates_match_and_counters_add_up(who, tools):
    reached, echoed, counters, stderr = lossy_udp(who, tools, *seeded(11))
    assert "tm-loss: seed 11" in stderr.splitlines()
    for direction, rate in (("uplink", UPLINK), ("downlink", DOWNLINK)):
        trials, dropped = drops(reached, echoed)[direction]
        assert_binomial(dropped, trials, rate, f"{direction} drops")
        c = counters[direction]
        # The counters also see the query and its answers, which are lost like any datagram.
        assert c.packets_in == c.out + c.dropped and c.queued == 0, f"{direction}: {c}"
        assert trials <= c.packets_in <= trials + 100 and dropped <= c.dropped <= dropped + 100, f"{direction}: {c}"


@pytest.mark.parametrize("direction", ["uplink", "downlink"])
def test_one_direction_only(who, tools, direction):
    reached, echoed, counters, stderr = lossy_udp(who, tools, direction, 0.3)
    assert any(line.startswith("tm-loss: seed ") for line in stderr.splitlines())
    other = "downlink" if direction == "uplink" else "uplink"
    measured = drops(reached, echoed)
    assert measured[other][1] == 0 and counters[other].dropped == 0, (measured, counters)
    assert_binomial(measured[direction][1], measured[direction][0], 0.3, f"{direction} drops")
