"""--pcap: the frames that crossed the link, read back with tcpdump; drops beside them; departure times.

Each capture is read with `tcpdump -r`, as a user would. Times are the ones the queue released the frames at:
with tm-link, exactly the departure times its link log writes (the capture's section header names the offset
from CLOCK_MONOTONIC, the log's clock).
"""
import os
import re
import shutil
import subprocess

import pytest

from conftest import PATH, TIMEOUT, TooSlow, measured, ping_cmd, sh, verbose_counters

TCPDUMP = shutil.which("tcpdump", path=PATH) or "tcpdump"


def tcpdump(path, *args):
    """The frames of a capture, one line each (epoch seconds with nanoseconds first)."""
    r = subprocess.run([TCPDUMP, "-r", str(path), "-nn", "-tt", "--nano", *args], capture_output=True, text=True,
                       timeout=TIMEOUT)
    assert r.returncode == 0, f"tcpdump cannot read {path}: {r.stderr}"
    return r.stdout.splitlines()


def epoch_ns(line):
    seconds, nanos = line.split()[0].split(".")
    return int(seconds) * 10**9 + int(nanos)


def monotonic_offset(path):
    """CLOCK_REALTIME - CLOCK_MONOTONIC as the capture's section header gives it."""
    with open(path, "rb") as f:
        m = re.search(rb"CLOCK_MONOTONIC ns \+ (-?\d+)", f.read())
    assert m, f"{path}: no clock offset in the section header"
    return int(m.group(1))


def ping_capture(who, tools, pcap):
    """5 pings through tm-delay (30 ms up, 10 ms down) captured into PCAP: (request, reply) capture times, ns."""
    r = who.run(tools.delay("--pcap", pcap, "--uplink-delay", 30, "--downlink-delay", 10,
                            cmd=ping_cmd(count=5, interval=0.1, quiet=False)))
    assert r.returncode == 0, r.stderr
    lines = tcpdump(pcap, "icmp")
    requests = [epoch_ns(l) for l in lines if "ICMP echo request" in l]
    replies = [epoch_ns(l) for l in lines if "ICMP echo reply" in l]
    assert len(requests) == 5 and len(replies) == 5, lines
    return list(zip(requests, replies))


def test_pings_cross_in_the_capture_at_their_departure_times(who, tools, public_tmp):
    pcap = public_tmp / "ping.pcapng"

    # A request leaves the uplink queue 30 ms after it entered the link; its reply enters the downlink a few
    # microseconds after the ferry hands the request on, and leaves 10 ms later, never sooner. (Stamped when
    # they entered the link instead, they would be 30 ms apart.)
    def check():
        for sent, answered in ping_capture(who, tools, pcap):
            gap = (answered - sent) / 1e6
            assert gap >= 10.0, f"a reply left {gap} ms after its request"
            if gap > 12:
                raise TooSlow(f"a reply left {gap} ms after its request")

    measured(check)
    st = os.stat(pcap)
    assert (st.st_uid, st.st_gid) == (who.uid, who.gid), "the capture belongs to whoever ran the shell"
    assert os.stat(public_tmp / "ping.drops.pcapng").st_uid == who.uid


def test_departures_are_the_link_logs(who, tools, public_tmp):
    pcap, log = public_tmp / "up.pcapng", public_tmp / "up.log"
    r = who.run(tools.shell("tm-link", "--uplink-rate", "12mbit", "--downlink-rate", "12mbit", "--uplink-log", log,
                            "--uplink-pcap", pcap, cmd=ping_cmd(count=5, interval=0.05)))
    assert r.returncode == 0, r.stderr
    offset = monotonic_offset(pcap)
    captured = sorted((epoch_ns(l) - offset) // 1000 for l in tcpdump(pcap))
    with open(log) as f:
        logged = sorted(round(float(line.split()[0]) * 1000) for line in f if " - " in line)
    assert len(captured) >= 5
    assert captured == logged, "capture times (us of CLOCK_MONOTONIC) differ from the log's departures"


def test_drops_are_recorded_beside(who, tools, public_tmp):
    pcap = public_tmp / "lossy.pcapng"
    r = who.run(tools.loss("-v", "--uplink-loss", 0.5, "--downlink-loss", 0, "--seed", 3, "--pcap", pcap,
                           cmd=ping_cmd(count=20, interval=0.01)))
    assert r.returncode in (0, 1), r.stderr
    up = verbose_counters(r.stderr)["uplink"]
    assert up.dropped > 0
    dropped = tcpdump(public_tmp / "lossy.drops.pcapng", "icmp")
    passed = tcpdump(pcap, "icmp[icmptype] == icmp-echo")
    assert len(dropped) == up.dropped and all("echo request" in l for l in dropped), dropped
    # ping keeps sending until 20 replies came (see ping_cmd): every request it sent is in one file or the other.
    sent = int(re.search(r"(\d+) packets transmitted", r.stdout).group(1))
    assert len(passed) == 20 and len(passed) + len(dropped) == sent


def test_gso_frames_are_written_as_wire_segments(root, tools, public_tmp):
    pcap = public_tmp / "tcp.pcapng"
    inner = tools.delay("-v", "--uplink-pcap", pcap, 0, cmd=sh('exec iperf3 -c "$TM_OUTER" -n 4M >/dev/null'))
    r = root.run(tools.delay("--isolated", 0, cmd=sh('iperf3 -s -1 -D && sleep 0.3 && exec "$@"', *inner)),
                 timeout=60)
    assert r.returncode == 0, r.stderr
    frames = tcpdump(pcap)
    assert len(frames) == verbose_counters(r.stderr)["uplink"].out, "one captured frame per wire packet sent"
    lengths = [int(m.group(1)) for m in (re.search(r"length (\d+)$", l) for l in frames) if m]
    assert sum(n == 1448 for n in lengths) >= 1000, "a bulk transfer crossed"
    assert max(lengths) <= 1448, "a super-frame was written whole instead of as the segments a wire carries"


def test_a_bad_capture_path_is_a_usage_error_before_anything_starts(who, tools, public_tmp):
    kept = public_tmp / "kept.pcapng"
    kept.write_text("keep")
    os.chmod(kept, 0o666)
    r = who.run(tools.delay("--uplink-pcap", kept, "--downlink-pcap", public_tmp / "no" / "x.pcapng", 0,
                            cmd=["true"]))
    assert r.returncode == 2
    assert f"--downlink-pcap {public_tmp}/no/x.pcapng: cannot open for writing" in r.stderr
    assert kept.read_text() == "keep" and sorted(os.listdir(public_tmp)) == ["kept.pcapng"]
    r = who.run(tools.delay("--pcap-snaplen", 64, 0, cmd=["true"]))
    assert r.returncode == 2 and "--pcap-snaplen needs --pcap" in r.stderr
