"""Fusion: a shell whose command is another tracemod shell runs that shell's queues in its own ferry
(docs/ARCHITECTURE.md §2). What the user sees stays: each level's process, prompt, depth, exit status, -v
counters, logs and tm-top page; the packets meet the same queues in the same order; only the middle links,
namespaces and ferries are gone. What cannot fuse does not, and TM_NO_FUSE=1 or --no-fuse turn it off."""
import json
import os
import re
import signal

import pytest

from conftest import TIMEOUT, assert_ping_rtt, ping_cmd, read_until, sh, verbose_counters
from test_cleanup import assert_nothing_left, clock_ticks_now, private_tmp, start_and_survey  # noqa: F401

# From inside the command: the tracemod processes its pid namespace holds besides its init (pid 1): each fused
# level's, and whether each shares the command's network namespace; the depth, prompt and interfaces.
LOOK = r"""
for p in /proc/[0-9]*; do
  [ $p != /proc/1 ] || continue
  case "$(cat $p/comm 2>/dev/null)" in tm-*)
    [ "$(readlink $p/ns/net)" = "$(readlink /proc/self/ns/net)" ] && same=same || same=other
    echo "proc $(cat $p/comm) $same";;
  esac
done
echo "depth $TM_DEPTH"; echo "prompt $TM_PROMPT"; echo "fused ${TM_FUSED:-none}"
ip -o link | sed 's/^[0-9]*: \([^:@]*\).*/link \1/'
exit 7
"""


FUSE = {"TM_NO_FUSE": "0"}  # fused, even in a run of the suite with TM_NO_FUSE=1


def stack(tools, *first, cmd):
    """tm-delay FIRST -- tm-loss uplink 0 -- tm-delay 1 -- CMD: three levels, each directly the next's command."""
    return tools.delay(*first, cmd=tools.loss("-v", "uplink", 0, cmd=tools.delay("-v", 1, cmd=cmd)))


def looked(r):
    procs = re.findall(r"^proc (\S+) (\S+)$", r.stdout, re.M)
    links = re.findall(r"^link (\S+)$", r.stdout, re.M)
    return procs, links, dict(re.findall(r"^(depth|prompt|fused) (.*)$", r.stdout, re.M))


def test_a_stack_of_shells_runs_in_one_ferry_and_shows_every_level(who, tools):
    r = who.run(stack(tools, "-v", 1, cmd=sh(LOOK)), env=FUSE)
    assert r.returncode == 7, r.stderr  # the command's status, through every level
    procs, links, facts = looked(r)
    # The two fused levels' processes, in the command's network namespace.
    assert procs == [("tm-loss", "same"), ("tm-delay", "same")], r.stdout
    assert sorted(links) == ["lo", "tm0"], r.stdout
    assert facts == {"depth": "3", "prompt": "[delay 1] [loss up=0 down=0] [delay 1] ", "fused": "none"}, r.stdout
    assert "tm-delay: tm-loss (level 2) is fused: its queues run in this shell's ferry" in r.stderr, r.stderr
    assert "tm-delay: tm-delay (level 3) is fused" in r.stderr, r.stderr
    assert "tm-loss: fused into tm-delay above it" in r.stderr, r.stderr
    # -v's counters of each level, said as each level's own: three levels, each both ways.
    counters = re.findall(r"^(tm-\w+): (uplink|downlink): (\d+) packets in", r.stderr, re.M)
    assert [c[:2] for c in counters] == [("tm-delay", "uplink"), ("tm-delay", "downlink"), ("tm-loss", "uplink"),
                                         ("tm-loss", "downlink"), ("tm-delay", "uplink"),
                                         ("tm-delay", "downlink")], r.stderr


@pytest.mark.parametrize("off", ["TM_NO_FUSE=1", "--no-fuse"])
def test_fusion_turned_off_gives_each_level_its_own_link(who, tools, off):
    env = {"TM_NO_FUSE": "1"} if off.startswith("TM_") else FUSE
    first = ("-v", "--no-fuse", 1) if off == "--no-fuse" else ("-v", 1)
    r = who.run(stack(tools, *first, cmd=sh(LOOK)), env=env)
    assert r.returncode == 7, r.stderr
    procs, links, facts = looked(r)
    assert facts["depth"] == "3" and facts["prompt"] == "[delay 1] [loss up=0 down=0] [delay 1] ", r.stdout
    assert "tm-delay: tm-loss (level 2) is fused" not in r.stderr, r.stderr
    if env is not FUSE:  # no level fused: the command's pid namespace holds the innermost shell's init alone
        assert procs == [] and "is fused" not in r.stderr, r.stdout + r.stderr
    else:  # only the outermost keeps its link: tm-loss (the init here) still fuses the tm-delay under it
        assert procs == [("tm-delay", "same")], r.stdout
        assert "tm-loss: tm-delay (level 3) is fused" in r.stderr, r.stderr
    assert sorted(links) == ["lo", "tm0"], r.stdout
    assert len(re.findall(r"^tm-\w+: (?:up|down)link: \d+ packets in", r.stderr, re.M)) == 6, r.stderr


@pytest.mark.parametrize("inner", [
    ["--pcap", "{tmp}/c.pcapng"],  # the capture point is its own link
    ["--outside", "sleep 60", "--outside-wait", "0"],  # its far side needs the namespace between
    ["--meter"],  # a live line of its own
])
def test_what_cannot_fuse_does_not(who, tools, public_tmp, inner):
    args = [a.replace("{tmp}", str(public_tmp)) for a in inner]
    r = who.run(tools.delay("-v", 0, cmd=tools.loss(*args, "uplink", 0, cmd=sh(LOOK))), env=FUSE)
    assert r.returncode == 7, r.stderr
    procs, _, facts = looked(r)
    assert procs == [] and facts["depth"] == "2", r.stdout
    assert "is fused" not in r.stderr, r.stderr


def test_a_script_between_two_shells_is_not_fused(who, tools):
    r = who.run(tools.delay("-v", 0, cmd=sh('"$@"', *tools.loss("uplink", 0, cmd=sh(LOOK)))), env=FUSE)
    assert r.returncode == 7 and "is fused" not in r.stderr, r.stderr
    assert looked(r)[0] == [], r.stdout


def test_a_bad_inner_command_line_is_said_by_the_inner_shell(who, tools):
    r = who.run(tools.delay(0, cmd=tools.shell("tm-link", "--uplink-rate", "fast", "--downlink-rate", "1mbit",
                                               cmd=["true"])), env=FUSE)
    assert r.returncode == 2, r.stderr
    assert re.search(r"^tm-link: .*fast", r.stderr, re.M) and "tm-delay: tm-link" not in r.stderr, r.stderr


def test_three_fused_delays_of_10_ms_make_60_ms_exactly(who, tools):
    # Each level's departure is the next one's arrival, with no hop between: never below the sum.
    # 100 ms apart: ping waits for every reply before the next (with an RTT over the interval it sends more).
    argv = tools.delay(10, cmd=tools.delay(10, cmd=tools.delay(10, cmd=ping_cmd(count=20, interval=0.1))))
    assert_ping_rtt(who, argv, 60.0, 62.0, env=FUSE)


PINGS = 'exec ping -n -c 40 -i 0.02 -s 1000 -W 1 "$TM_BASE"'


def link_events(path):
    """The link log's arrivals, departures (with their delays) and drops of the 1028-byte pings: the frames the
    namespaces themselves send (neighbour discovery) differ with the plumbing, the workload's must not."""
    events = []
    for line in open(path):
        f = line.split()
        if not line.startswith("#") and f[1] in "+-d" and f[2] == "1028":
            events.append((f[1], float(f[0]), float(f[3]) if f[1] == "-" else 0.0))
    return events


def crossings(up, down, seqs):
    """Each answered ping's time (ms) from its request leaving the link to its reply reaching the link: the levels
    above it (5 ms each way) and the host's answer. The pings' own times are ping's (its interval drifts, by
    ms over the run on a busy machine), not the plumbing's: this, and the link's own delays, are."""
    departures = [t for kind, t, _ in up if kind == "-"]
    arrivals = [t for kind, t, _ in down if kind == "+"]
    assert len(departures) == 40 and len(arrivals) == len(seqs), (len(departures), len(arrivals), seqs)
    return [arrival - departures[seq - 1] for arrival, seq in zip(arrivals, seqs)]


def test_a_fused_stack_logs_what_the_unfused_stack_logs(who, tools, public_tmp):
    # A seeded loss above a logged link: the same pings are lost, and the link logs the same arrivals and
    # departures, its delays within one opportunity (0.12 ms at 100 Mbit/s) and the hops' microseconds, and
    # each reply comes back the same 10 ms after its request left (within the hops' and the host's jitter).
    runs = {}
    for mode in ("fused", "unfused"):
        up, down = public_tmp / f"{mode}.up", public_tmp / f"{mode}.down"
        argv = tools.delay(5, cmd=tools.loss("--seed", 7, "downlink", 0.3, cmd=tools.shell(
            "tm-link", "--seed", 3, "--uplink-rate", "100mbit", "--downlink-rate", "100mbit", "--uplink-log", up,
            "--downlink-log", down, cmd=sh(PINGS))))
        r = who.run(argv, env={"TM_NO_FUSE": "1"} if mode == "unfused" else FUSE)
        assert r.returncode in (0, 1), r.stderr  # 1: some pings lost, as they must be
        runs[mode] = (sorted(map(int, re.findall(r"icmp_seq=(\d+)", r.stdout))), link_events(up),
                      link_events(down))
    (seqs, *logs), (seqs_unfused, *logs_unfused) = runs["fused"], runs["unfused"]
    assert seqs == seqs_unfused and 0 < len(seqs) < 40, (seqs, seqs_unfused)
    for fused, unfused in zip(logs, logs_unfused):
        assert [e[0] for e in fused] == [e[0] for e in unfused] and fused, (fused, unfused)
        for (kind, t, delay), (_, u, delay_unfused) in zip(fused, unfused):
            assert abs(delay - delay_unfused) < 0.3, f"a delay of {delay} ms fused, {delay_unfused} unfused"
    for seq, fused, unfused in zip(seqs, crossings(*logs, seqs), crossings(*logs_unfused, seqs)):
        assert fused >= 10.0 and unfused >= 10.0 and abs(fused - unfused) < 2.0, \
            f"ping {seq} back at the link {fused:.3f} ms after it left fused, {unfused:.3f} unfused"


def test_tm_top_sees_each_fused_level_as_its_shell(who, tools, spawn):
    top = tools.tool("tm-top", "--json", "--once")
    argv = tools.delay(0, cmd=tools.loss("uplink", 0, cmd=tools.shell(
        "tm-link", "--uplink-rate", "10mbit", "--downlink-rate", "10mbit", cmd=sh("echo ready; exec sleep 30"))))
    shell = spawn(who, argv, env=FUSE)
    try:
        read_until(shell, "ready")
        r = who.run(top, env=FUSE)
        assert r.returncode == 0, r.stderr
        shells = [(s["tool"], s["depth"], s["level"]) for s in json.loads(r.stdout)["shells"]]
        assert shells == [("tm-delay", 0, 0), ("tm-loss", 1, 1), ("tm-link", 2, 2)], r.stdout
        link = [s for s in json.loads(r.stdout)["shells"] if s["tool"] == "tm-link"][0]
        assert link["uplink"]["offered_bps"] is not None, link  # its own queue: a link with a rate
    finally:
        shell.kill()
        shell.wait(TIMEOUT)


def test_sigkill_of_a_fused_level_leaves_nothing(who, root, tools, spawn, private_tmp):  # noqa: F811
    argv = ["env", "TM_NO_FUSE=0", *stack(tools, 0, cmd=sh("echo ready; sleep 1000 & exec sleep 1000"))]
    shell, processes, namespace_ids, before = start_and_survey(who, argv, spawn, private_tmp, root)
    middle = [p for p in processes if open(f"/proc/{p}/comm").read().strip() == "tm-loss"]
    assert len(middle) == 1, processes
    killed_at = clock_ticks_now()
    os.kill(middle[0], signal.SIGKILL)
    assert shell.wait(TIMEOUT) == 128 + signal.SIGKILL  # what its command (the fused level) ended with
    assert_nothing_left(processes, namespace_ids, killed_at, before, private_tmp[0])


def test_verbose_counters_of_a_fused_link_count_its_own_queue(who, tools):
    # 50% loss above a link: the link's counters are its own, not the loss's.
    r = who.run(tools.loss("--seed", 1, "downlink", 0.5, cmd=tools.shell(
        "tm-link", "-v", "--uplink-rate", "10mbit", "--downlink-rate", "10mbit",
        cmd=ping_cmd(count=20, interval=0.02, quiet=True))), env=FUSE)
    counters = verbose_counters(r.stderr)
    assert counters["uplink"].packets_in >= 20 and counters["uplink"].dropped == 0, r.stderr
    assert counters["downlink"].packets_in < counters["uplink"].packets_in, r.stderr  # the loss above it dropped


def test_a_stale_tm_fused_is_refused_in_one_line(who, tools):
    # Set by hand (or left over): the shell would otherwise make no link of its own.
    r = who.run(tools.delay(0, cmd=["true"]), env={"TM_FUSED": "3\x1f[delay 0]"})
    assert r.returncode == 1, r.stderr
    assert r.stderr.strip().splitlines()[-1].startswith("tm-delay: TM_FUSED in the environment was not set"), r.stderr


@pytest.mark.parametrize("levels,unfused_every", [(32, 0), (32, 4), (40, 0)])
def test_nesting_stays_unlimited_fused_or_mixed(who, tools, levels, unfused_every):
    # Mixed: every fourth level has --no-fuse (a link of its own, its command not fused either). Fused levels
    # make no pid namespace, so a fused stack may be deeper than the kernel's 32 nested ones.
    cmd = sh('echo "depth $TM_DEPTH"; exec ping -n -q -c 1 -W 5 "$TM_BASE" >/dev/null')
    for i in range(levels):
        cmd = tools.delay(*(["--no-fuse"] if unfused_every and i % unfused_every == 0 else []), 0, cmd=cmd)
    r = who.run(cmd, env=FUSE, timeout=60)
    assert r.returncode == 0 and r.stdout == f"depth {levels}\n", r.stdout + r.stderr
