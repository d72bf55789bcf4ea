"""tm-loss drops each packet independently at the configured rate, in each direction on its own; a seed makes
the drops reproducible.

The rates are measured on DATAGRAMS numbered UDP datagrams sent from inside tm-loss to an echo outside it:
a datagram that did not reach the echo was dropped on the uplink, an echo that did not come back on the
downlink. With n trials at rate p the drops are binomial, sigma = sqrt(n p (1 - p)); a band of 4 sigma
around n p (at n = 4000 and p = 0.2: 17.5% to 22.5%) fails a correct tm-loss with probability 6e-5 per check
(normal approximation, good at these n). It fails a direction that drops nothing, or the other direction's
rate, almost surely; a rate 0.05 off is 8 sigma away. (A fixed seed makes each run here repeat exactly; the
band is what any seed must meet.)

The -v counters also see packets that are not the probe's (its query and the answer, IPv6 multicast listener
reports, in numbers that vary with timing): they are checked exactly against tm-loss's --pcap capture of the
same run, the capture's numbered datagrams against what the probe saw, and the counters less the capture's
other frames across runs of one seed.
"""
import math
import re
import struct

import pytest

from conftest import TooSlow, measured, python_script, sh, verbose_counters

DATAGRAMS = 4000
UPLINK, DOWNLINK = 0.2, 0.1


def lossy_udp(who, tools, *loss_args, pcap=None):
    """DATAGRAMS datagrams through `tm-loss -v LOSS_ARGS` (and --pcap PCAP): (reached the echo, came back: one
    flag per datagram; the -v counters; stderr). A run in which a socket buffer overflowed (python fell behind
    on a loaded machine) counted drops that are not tm-loss's: it is taken again."""
    probe = python_script("udp_probe.py")
    capture = ("--pcap", pcap) if pcap else ()
    inner = tools.loss("-v", *capture, *loss_args,
                       cmd=sh(f'exec "$@" count "$TM_OUTER" 9300 {DATAGRAMS} 4000 100', *probe))

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


def pcapng_frames(path):
    """{interface name: [frame bytes (as captured)...]} of a pcapng file as tm-loss writes it (little-endian)."""
    with open(path, "rb") as f:
        data = f.read()
    names, frames, at = [], {}, 0
    while at < len(data):
        kind, length = struct.unpack_from("<II", data, at)
        body = data[at + 8:at + length - 4]
        if kind == 1:  # interface description: link type, snaplen, then options; if_name (2) names it
            opt, name = 8, None
            while opt + 4 <= len(body):
                code, size = struct.unpack_from("<HH", body, opt)
                if code == 2:
                    name = body[opt + 4:opt + 4 + size].decode()
                opt += 4 + (size + 3) // 4 * 4
            names.append(name)
            frames[name] = []
        elif kind == 6:  # enhanced packet: interface, time (8), captured length, original length, data
            iface, _, _, caplen = struct.unpack_from("<IIII", body, 0)
            frames[names[iface]].append(body[20:20 + caplen])
        at += length
    return frames


def numbered_datagram(frame, port, outward):
    """The number of a probe datagram (UDP to PORT if OUTWARD, else from it, payload b"D" + number) in an
    Ethernet FRAME, or None for any other frame."""
    ethertype = struct.unpack_from("!H", frame, 12)[0]
    if ethertype == 0x0800 and frame[23] == 17:
        udp = 14 + (frame[14] & 0x0F) * 4
    elif ethertype == 0x86DD and frame[20] == 17:
        udp = 14 + 40
    else:
        return None
    src, dst = struct.unpack_from("!HH", frame, udp)
    payload = frame[udp + 8:udp + 13]
    if (dst if outward else src) != port or payload[:1] != b"D":
        return None
    return struct.unpack("!I", payload[1:5])[0]


def assert_binomial(count, trials, rate, what):
    """COUNT out of TRIALS is within 4 standard deviations of RATE."""
    sigma = math.sqrt(trials * rate * (1 - rate))
    assert abs(count - trials * rate) <= 4 * sigma, \
        f"{what}: {count} of {trials} ({count / trials:.4f}), expected {rate} +- {4 * sigma / trials:.4f}"


def seeded(seed):
    return ("--uplink-loss", UPLINK, "--downlink-loss", DOWNLINK, "--seed", seed)


def captured(pcap):
    """(passed, dropped) of a --pcap capture: per direction, the frames as pcapng_frames gives them."""
    passed = pcapng_frames(pcap)
    drops_file = str(pcap).removesuffix(".pcapng") + ".drops.pcapng"
    return passed, {name.removesuffix("-drops"): frames for name, frames in pcapng_frames(drops_file).items()}


def datagram_counters(counters, passed, lost):
    """Per direction, the -v counters (in, out, dropped) less every frame the capture shows that was not one
    of the probe's numbered datagrams: the probe's query and the answers (their number depends on timing: a
    late answer brings another query) and link control (IPv6 multicast listener reports, whenever the kernel
    sends them). What is left counts the datagrams alone, and so repeats exactly with the seed."""
    out = {}
    for direction, c in counters.items():
        outward = direction == "uplink"
        others_out = sum(numbered_datagram(f, 9300, outward) is None for f in passed[direction])
        others_lost = sum(numbered_datagram(f, 9300, outward) is None for f in lost[direction])
        out[direction] = (c.packets_in - others_out - others_lost, c.out - others_out, c.dropped - others_lost)
    return out


def test_same_seed_drops_the_same_packets_and_another_seed_others(who, tools, public_tmp):
    runs = []
    for k, seed in enumerate((7, 7, 8)):
        pcap = public_tmp / f"run{k}.pcapng"
        reached, echoed, counters, _ = lossy_udp(who, tools, *seeded(seed), pcap=pcap)
        runs.append((reached, echoed, datagram_counters(counters, *captured(pcap))))
    first, again, other = runs
    for direction, (trials, dropped) in drops(*first[:2]).items():
        assert 0 < dropped < trials, f"{direction}: {dropped} of {trials} dropped"
        assert first[2][direction] == (trials, trials - dropped, dropped), f"{direction}: {first[2]}"
    assert first[:2] == again[:2], "with the same seed, other datagrams were dropped"
    assert first[2] == again[2], "with the same seed, tm-loss counted other drops"
    assert other[0] != first[0] and other[1] != first[1], "seed 8 dropped what seed 7 did"


def test_drop_rates_match_and_counters_add_up(who, tools, public_tmp):
    pcap = public_tmp / "loss.pcapng"
    reached, echoed, counters, stderr = lossy_udp(who, tools, *seeded(11), pcap=pcap)
    assert "tm-loss: seed 11" in stderr.splitlines()
    passed, lost = captured(pcap)
    # Which numbered datagram each direction dropped, as the probe saw it.
    seen = {"uplink": {i for i, r in enumerate(reached) if not r},
            "downlink": {i for i, (r, e) in enumerate(zip(reached, echoed)) if r and not e}}
    for direction, rate in (("uplink", UPLINK), ("downlink", DOWNLINK)):
        trials, dropped = drops(reached, echoed)[direction]
        assert_binomial(dropped, trials, rate, f"{direction} drops")
        c = counters[direction]
        # Every packet in left or was dropped, once: the counters and the capture tell the same, to the packet.
        assert (c.out, c.dropped, c.queued) == (len(passed[direction]), len(lost[direction]), 0), f"{direction}: {c}"
        assert c.packets_in == c.out + c.dropped, f"{direction}: {c}"
        # And the capture's drops among the probe's datagrams are exactly those the probe missed.
        outward = direction == "uplink"
        numbers = [numbered_datagram(f, 9300, outward) for f in lost[direction]]
        assert {n for n in numbers if n is not None} == seen[direction], direction
        assert datagram_counters(counters, passed, lost)[direction] == (trials, trials - dropped, dropped), direction


@pytest.mark.parametrize("direction", ["uplink", "downlink"])
def test_one_direction_only(who, tools, direction):
    reached, echoed, counters, stderr = lossy_udp(who, tools, direction, 0.3)
    assert any(line.startswith("tm-loss: seed ") for line in stderr.splitlines())
    other = "downlink" if direction == "uplink" else "uplink"
    measured = drops(reached, echoed)
    assert measured[other][1] == 0 and counters[other].dropped == 0, (measured, counters)
    assert_binomial(measured[direction][1], measured[direction][0], 0.3, f"{direction} drops")
