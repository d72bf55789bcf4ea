"""Helpers of the channel tests (test_channel_*.py): run numbered datagrams through a shell and read what arrived.

The receiver runs in the command namespace of an isolated outer `tm-delay 0`; the shell under test runs inside
it with the sender (and, for the downlink, the receiver of what the outer side sends back), so only the shell
under test lies between them, and the receiving namespace's counters are the receiver's own.
"""
import math
import re
from dataclasses import dataclass, field
from typing import Dict, List

from conftest import python_script, sh, verbose_counters

PORT = 9400


@dataclass
class Datagram:
    seq: int
    sent: int  # ns, CLOCK_MONOTONIC, sender
    received: int  # ns, CLOCK_MONOTONIC, receiving kernel
    size: int  # IP bytes

    @property
    def delay_ms(self) -> float:
        return (self.received - self.sent) / 1e6


@dataclass
class Run:
    up: List[Datagram] = field(default_factory=list)  # in arrival order
    down: List[Datagram] = field(default_factory=list)
    snmp: Dict[str, int] = field(default_factory=dict)  # the receiving namespace's counter deltas
    exited: int = 0  # ns, CLOCK_MONOTONIC: when the shell under test ended (udp_run)
    stdout: str = ""
    stderr: str = ""

    def counters(self):
        return verbose_counters(self.stderr)

    def summary(self, direction: str) -> str:
        """The line -v prints after a direction's counters (the queue's own account)."""
        found = re.findall(rf"^tm-\w+: {direction}: (?!\d+ packets in)(.*)$", self.stderr, re.M)
        assert found, f"no {direction} summary in: {self.stderr!r}"
        return found[-1]


def parse(stdout: str) -> Run:
    run = Run(stdout=stdout)
    for line in stdout.splitlines():
        words = line.split()
        if words and words[0] in ("up", "down"):
            getattr(run, words[0]).append(Datagram(*map(int, words[1:5])))
        elif words and words[0] == "snmp":
            run.snmp[words[1]] = int(words[2])
        elif words and words[0] == "exit":
            run.exited = int(words[1])
    return run


def udp_run(who, tools, shell, count, spacing, size=100, target="TM_OUTER", down=None, timeout=60, before="",
            tos=0, status=0) -> Run:
    """COUNT datagrams of SIZE IP bytes SPACING s apart through SHELL (the argv of the shell under test, up to
    its `--`) to $TARGET, with the IPv4 TOS byte TOS, and, with DOWN = (count, spacing), a stream back toward the
    sender. BEFORE is shell code run first inside. The shell must exit with STATUS."""
    probe = python_script("channel_probe.py")
    inner = [*shell, "--", *sh(f'{before}exec "$@" send "${target}" {PORT} {count} {spacing} {size} {tos}', *probe)]
    outer = [*probe, "recv", PORT, *inner] if down is None else [*probe, "serve", PORT, *down, size, *inner]
    r = who.run(tools.delay("--isolated", 0, cmd=list(map(str, outer))), timeout=timeout)
    assert r.returncode == status, (r.returncode, r.stderr)
    run = parse(r.stdout)
    run.stderr = r.stderr
    return run


def tcp_run(who, tools, shell, nbytes, before="", timeout=60) -> Run:
    """NBYTES over TCP from inside SHELL to its outside; BEFORE is shell code run first inside."""
    probe = python_script("channel_probe.py")
    inner = [*shell, "--", *sh(f'{before}exec "$@" tcp-send "$TM_OUTER" {PORT} {nbytes}', *probe)]
    r = who.run(tools.delay("--isolated", 0, cmd=list(map(str, [*probe, "tcp-recv", PORT, *inner]))),
                timeout=timeout)
    assert r.returncode == 0, r.stderr
    run = parse(r.stdout)
    run.stderr = r.stderr
    return run


def public_file(directory, name: str, text: str):
    """NAME in DIRECTORY (a public_tmp) holding TEXT, readable by the unprivileged user too."""
    path = directory / name
    path.write_text(text)
    path.chmod(0o644)
    return path


def lost(datagrams: List[Datagram], count: int) -> List[int]:
    """The sequence numbers of 0..COUNT-1 that never arrived."""
    seen = {d.seq for d in datagrams}
    return [s for s in range(count) if s not in seen]


def runs(sequence: List[int]) -> List[List[int]]:
    """Maximal runs of consecutive numbers in a sorted SEQUENCE."""
    out = []
    for s in sequence:
        if out and out[-1][-1] == s - 1:
            out[-1].append(s)
        else:
            out.append([s])
    return out


def inversions(datagrams: List[Datagram]) -> int:
    """How many datagrams arrived after one sent later."""
    return sum(b.seq < a.seq for a, b in zip(datagrams, datagrams[1:]))


def mean(xs) -> float:
    xs = list(xs)
    return sum(xs) / len(xs)


def stdev(xs) -> float:
    xs = list(xs)
    m = mean(xs)
    return math.sqrt(sum((x - m) ** 2 for x in xs) / len(xs))


def assert_within(measured: float, expected: float, sigma: float, k: float, what: str):
    """MEASURED is within K SIGMA of EXPECTED (the message says both)."""
    assert abs(measured - expected) <= k * sigma, \
        f"{what}: measured {measured:.6g}, configured {expected:.6g}, allowed {k} sigma = {k * sigma:.3g}"
