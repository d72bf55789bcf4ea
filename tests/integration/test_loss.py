"""tm-loss drops each packet independently at the configured rate; a seed makes the drops reproducible."""
import math

import pytest

from conftest import ping_cmd, ping_stats, verbose_counters

PINGS = 300
UPLINK, DOWNLINK = 0.2, 0.1


def lossy_ping(who, tools, *loss_args):
    """300 pings at 5 ms intervals through `tm-loss -v LOSS_ARGS`: (ping stats, -v counters, stderr)."""
    r = who.run(tools.loss("-v", *loss_args, cmd=ping_cmd(count=PINGS, interval=0.005, quiet=False)))
    assert r.returncode in (0, 1), r.stderr  # ping exits 1 when replies are missing
    return ping_stats(r.stdout), verbose_counters(r.stderr), r.stderr


def seeded(seed):
    return ("--uplink-loss", UPLINK, "--downlink-loss", DOWNLINK, "--seed", seed)


def assert_binomial(count, trials, rate, what):
    """COUNT out of TRIALS is within 5 standard deviations of RATE."""
    sigma = math.sqrt(trials * rate * (1 - rate))
    assert abs(count - trials * rate) <= 5 * sigma + 1, f"{what}: {count} of {trials}, expected rate {rate}"


def test_same_seed_drops_the_same_packets(who, tools):
    first, first_counters, _ = lossy_ping(who, tools, *seeded(7))
    again, again_counters, _ = lossy_ping(who, tools, *seeded(7))
    differing = sorted(first.seqs ^ again.seqs)
    assert not differing, f"with the same seed, these pings were answered in one run only: {differing}"
    assert first_counters == again_counters


def test_another_seed_drops_other_packets(root, tools):
    seven, _, _ = lossy_ping(root, tools, *seeded(7))
    eight, _, _ = lossy_ping(root, tools, *seeded(8))
    assert seven.seqs != eight.seqs


def test_drop_rates_match_and_counters_add_up(who, tools):
    stats, counters, stderr = lossy_ping(who, tools, *seeded(11))
    assert "tm-loss: seed 11" in stderr.splitlines()
    for direction, rate in (("uplink", UPLINK), ("downlink", DOWNLINK)):
        c = counters[direction]
        assert c.packets_in == c.out + c.dropped and c.queued == 0, f"{direction}: {c}"
        assert_binomial(c.dropped, c.packets_in, rate, f"{direction} drops")
    assert_binomial(stats.received, stats.sent, (1 - UPLINK) * (1 - DOWNLINK), "ping replies")
    assert stats.received == len(stats.seqs)


@pytest.mark.parametrize("direction", ["uplink", "downlink"])
def test_one_direction_only(who, tools, direction):
    _, counters, stderr = lossy_ping(who, tools, direction, 0.3)
    assert any(line.startswith("tm-loss: seed ") for line in stderr.splitlines())
    other = "downlink" if direction == "uplink" else "uplink"
    assert counters[other].dropped == 0, counters
    assert_binomial(counters[direction].dropped, counters[direction].packets_in, 0.3, f"{direction} drops")
