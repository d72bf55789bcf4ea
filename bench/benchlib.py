#!/usr/bin/env python3
"""Number crunching and formatting for the tracemod benchmarks (called by lib.sh; stdlib only).

Percentiles are nearest-rank: pN is the smallest sample with at least N% of the samples at or below it,
so every figure printed is a value that was actually measured.
"""

import argparse
import json
import math
import os
import re
import select
import socket
import struct
import subprocess
import sys
import time

SO_TIMESTAMPNS = 35  # Linux (asm-generic); not exported by Python's socket module
ICMP_ECHO_REPLY, ICMP_ECHO_REQUEST = 0, 8


def percentile(sorted_values, p):
    rank = max(1, math.ceil(p / 100 * len(sorted_values)))
    return sorted_values[rank - 1]


def cmd_iperf(args):
    """Gbit/s the receiver got, from an iperf3 -J report."""
    with open(args.file) as f:
        text = f.read()
    try:
        report = json.loads(text)
    except json.JSONDecodeError:
        sys.exit(f"benchlib: {args.file}: not an iperf3 JSON report: {text[:200]!r}")
    if "error" in report:
        sys.exit(f"benchlib: iperf3: {report['error']}")
    print(f"{report['end']['sum_received']['bits_per_second'] / 1e9:.2f}")


def cmd_pps(args):
    """From an iperf3 -u -J report of LEN-byte datagrams: offered kpps, received kpps, % lost, datagrams sent."""
    with open(args.file) as f:
        text = f.read()
    try:
        end = json.loads(text)["end"]
        sent, got = end["sum_sent"], end["sum_received"]
    except (json.JSONDecodeError, KeyError):
        sys.exit(f"benchlib: {args.file}: not an iperf3 UDP report: {text[:200]!r}")
    received = got["bytes"] / args.len
    print(f"{sent['packets'] / sent['seconds'] / 1000:.1f} {received / got['seconds'] / 1000:.1f} "
          f"{100 * (1 - received / sent['packets']) if sent['packets'] else 0:.2f} {sent['packets']}")


def process_environ(pid):
    with open(f"/proc/{pid}/environ", "rb") as f:
        return f.read().split(b"\0")


def cmd_shell_cpu(args):
    """Until SIGTERM, samples every 50 ms the CPU time (user + system) of the processes named NAME whose
    environment holds TMB_TAG=TAG and a TM_DEPTH (so: this run's nested shells, not the outermost, and no
    one else's); then writes their total CPU seconds to OUT."""
    import signal
    import threading
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    hz = os.sysconf("SC_CLK_TCK")
    tag = f"TMB_TAG={args.tag}".encode()
    ticks, ours = {}, {}
    while not stop.is_set():
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                with open(f"/proc/{pid}/stat") as f:
                    stat = f.read()
                if stat[stat.index("(") + 1:stat.rindex(")")] != args.name:
                    continue
                if pid not in ours:
                    env = process_environ(pid)
                    ours[pid] = tag in env and any(v.startswith(b"TM_DEPTH=") for v in env)
            except (OSError, ValueError):
                continue
            if ours[pid]:
                fields = stat[stat.rindex(")") + 2:].split()
                ticks[pid] = int(fields[11]) + int(fields[12])  # utime + stime
        stop.wait(0.05)
    with open(args.out, "w") as f:
        f.write(f"{sum(ticks.values()) / hz:.3f}\n")


def checksum(data):
    if len(data) % 2:
        data += b"\0"
    total = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def echo_request(ident, seq):
    payload = bytes(range(56))  # ping's default size: 64 bytes of ICMP
    header = struct.pack("!BBHHH", ICMP_ECHO_REQUEST, 0, 0, ident, seq)
    return struct.pack("!BBHHH", ICMP_ECHO_REQUEST, 0, checksum(header + payload), ident, seq) + payload


def read_replies(sock, ident, sent, rtts):
    """Reads the echo replies waiting on SOCK, recording their RTTs in ms by sequence number."""
    while True:
        try:
            data, ancillary, _, _ = sock.recvmsg(2048, 64, socket.MSG_DONTWAIT)
        except BlockingIOError:
            return
        arrived = None
        for level, kind, value in ancillary:
            if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS:
                sec, nsec = struct.unpack("@ll", value[:16])
                arrived = sec * 10**9 + nsec
        if arrived is None:
            arrived = time.time_ns()
        icmp = data[(data[0] & 0x0F) * 4 :]  # a raw socket hands over the IP header too
        if len(icmp) < 8:
            continue
        kind, _, _, rid, seq = struct.unpack("!BBHHH", icmp[:8])
        if kind == ICMP_ECHO_REPLY and rid == ident and seq in sent and seq not in rtts:
            rtts[seq] = (arrived - sent[seq]) / 1e6


def cmd_pinger(args):
    """Pings HOST like `ping -c COUNT -i INTERVAL`, printing each RTT to the microsecond (iputils ping prints
    times of 10 ms and more to 0.1 ms only). Arrival times are the kernel's receive timestamps, as in ping."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
    sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    ident = os.getpid() & 0xFFFF
    sent, rtts = {}, {}
    start = time.monotonic()
    for seq in range(args.count):
        while True:  # read replies until this packet's slot comes
            wait = start + seq * args.interval - time.monotonic()
            if wait <= 0:
                break
            if select.select([sock], [], [], wait)[0]:
                read_replies(sock, ident, sent, rtts)
        packet = echo_request(ident, seq)  # built before the clock is read: only the send is timed
        sent[seq] = time.time_ns()
        sock.sendto(packet, (args.host, 0))
    deadline = time.monotonic() + args.wait
    while len(rtts) < len(sent) and time.monotonic() < deadline:
        if select.select([sock], [], [], max(0, deadline - time.monotonic()))[0]:
            read_replies(sock, ident, sent, rtts)
    for seq in sorted(rtts):
        print(f"64 bytes from {args.host}: icmp_seq={seq} time={rtts[seq]:.3f} ms")
    print(f"{len(sent)} packets transmitted, {len(rtts)} received")


def cmd_ping(args):
    """min p50 p99 max (ms) of the per-packet times in a pinger (or ping) output, then replies and requests."""
    times, sent = [], None
    with open(args.file) as f:
        for line in f:
            m = re.search(r"time=([0-9.]+) ms", line)
            if m:
                times.append(float(m.group(1)))
            m = re.match(r"(\d+) packets transmitted", line)
            if m:
                sent = int(m.group(1))
    if not times:
        sys.exit(f"benchlib: {args.file}: no replies")
    times.sort()
    stats = [times[0], percentile(times, 50), percentile(times, 99), times[-1]]
    print(" ".join(f"{t:.3f}" for t in stats), len(times), sent if sent is not None else "?")


def cmd_dist(args):
    """median p90 (in ms) of durations in microseconds, one per line on stdin, then their count."""
    values = sorted(float(v) / 1000 for v in sys.stdin.read().split())
    if not values:
        sys.exit("benchlib: no durations")
    print(f"{percentile(values, 50):.1f} {percentile(values, 90):.1f} {len(values)}")


def cmd_ratio(args):
    """A / B, e.g. 0.53x."""
    print(f"{args.a / args.b:.2f}x" if args.b else "n/a")


def cmd_percent(args):
    """A as a percentage of B."""
    print(f"{100 * args.a / args.b:.0f}%" if args.b else "n/a")


def cmd_median(args):
    """The median of the values (nearest rank: one of them), as written (2 decimals)."""
    print(f"{percentile(sorted(float(v) for v in args.values), 50):.2f}")


def cmd_paired(args):
    """Paired runs A1 B1 A2 B2 ...: each A as a percentage of its B, as "MEDIAN% (median of N pairs, MIN-MAX%)",
    the median by nearest rank. A machine's load changes between runs; the runs of a pair are taken back to back,
    and the median of their ratios is what a single unlucky pair cannot move. A pair whose B measured nothing
    has no ratio: it is not counted, and said."""
    values = [float(v) for v in args.values]
    if len(values) % 2 or not values:
        sys.exit("benchlib: paired: give A B pairs")
    pairs = list(zip(values[::2], values[1::2]))
    ratios = sorted(100 * a / b for a, b in pairs if b)
    void = len(pairs) - len(ratios)
    said = f"{void} of {len(pairs)} pairs void: their reference measured 0"
    if not ratios:
        print(f"n/a ({said})")
    elif len(ratios) == 1 and not void:
        print(f"{ratios[0]:.0f}%")
    else:
        print(f"{percentile(ratios, 50):.0f}% (median of {len(ratios)} pairs, {ratios[0]:.0f}-{ratios[-1]:.0f}%"
              f"{'; ' + said if void else ''})")


def cmd_excess(args):
    """A - B - C, signed, in ms: what an emulated delay adds beyond the delay itself and the raw link."""
    print(f"{args.a - args.b - args.c:+.3f} ms")


def cmd_mib(args):
    """kB (as in /proc/PID/status) as MiB."""
    print(f"{args.a / 1024:.1f} MiB")


def cmd_far_sender(args):
    """A TCP sender on [::]:PORT (IPv4 too) for SECONDS to its first client; prints its own TCP's smoothed and
    minimum RTT on that connection in ms (TCP_INFO's tcpi_rtt and tcpi_min_rtt, at offsets 68 and 148)."""
    s = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
    s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("::", int(args.port)))
    s.listen(1)
    s.settimeout(30)
    c, _ = s.accept()
    c.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, b"cubic")
    end, chunk = time.monotonic() + args.seconds, b"x" * 65536
    while time.monotonic() < end:
        c.send(chunk)
    info = c.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 256)
    rtt, min_rtt = struct.unpack_from("I", info, 68)[0], struct.unpack_from("I", info, 148)[0]
    print(f"{rtt / 1000:.3f} {min_rtt / 1000:.3f}", flush=True)


def cmd_far_receiver(args):
    """Reads from HOST:PORT until the sender closes; HOST may name an environment variable (TM_BASE)."""
    host = os.environ.get(args.host, args.host)
    for _ in range(100):  # the sender may not listen yet
        try:
            c = socket.create_connection((host, int(args.port)), timeout=30)
            break
        except ConnectionRefusedError:
            time.sleep(0.05)
    else:
        sys.exit(f"benchlib: no sender at {host}:{int(args.port)}")
    while c.recv(1 << 20):
        pass


def cmd_table(args):
    """The summary table, in Markdown, from the tab-separated rows lib.sh's emit appends."""
    print(markdown_table(["figure", "tracemod", "raw veth", "ratio", "target"], rows_of(args.file)))


def markdown_table(header, rows):
    widths = [max(len(r[i]) for r in [header] + rows) for i in range(len(header))]

    def fmt(r):
        return "| " + " | ".join(c.ljust(w) for c, w in zip(r, widths)) + " |"

    return "\n".join([fmt(header), "|" + "|".join("-" * (w + 2) for w in widths) + "|"] + [fmt(r) for r in rows])


# bench/run writes its table into bench/README.md, and the HEADLINE rows of it into README.md, between these
# lines; nothing between them is written by hand, so a table cannot outlive the code it measured unnoticed.
BEGIN = "<!-- written by bench/run: do not edit by hand -->"
END = "<!-- end of bench/run's table -->"
HEADLINE = ["TCP up, tm-delay 0", "TCP down, tm-delay 0", "TCP up, 3 nested tm-delay 0",
            "TCP up to a host server, tm-delay 0 (kernel path)", "far sender's srtt / min RTT, tm-delay 50, kernel",
            "ping RTT p99, tm-delay 10", "start-up median, default (root: kernel path)",
            "shell VmRSS, peak sampled under iperf3", "TCP up, tm-link 120 Gbit/s trace", "UDP 64 B flood, tm-delay 0"]
# The Mahimahi rows bench/mahimahi measures in the same run (Mahimahi built from source, MAHIMAHI_BINDIR), by the
# headline figure each stands beside.
MAHIMAHI = {"TCP up, tm-delay 0": "Mahimahi TCP up, mm-delay 0", "TCP down, tm-delay 0": "Mahimahi TCP down, mm-delay 0",
            "TCP up, 3 nested tm-delay 0": "Mahimahi TCP up, 3 nested mm-delay 0",
            "start-up median, default (root: kernel path)": "Mahimahi start-up median, mm-delay 0",
            "TCP up, tm-link 120 Gbit/s trace": "Mahimahi TCP up, mm-link 120 Gbit/s trace",
            "UDP 64 B flood, tm-delay 0": "Mahimahi UDP 64 B flood, mm-delay 0"}


def mahimahi_cell(by_figure, figure):
    """Mahimahi's figure beside FIGURE, with its ratio to the raw veth of its own measurement; "FAILED" where
    bench/mahimahi failed before measuring it, "not run" where the run measured no Mahimahi at all."""
    failed = next((r for r in by_figure if r.startswith("mahimahi: FAILED")), None)
    row = by_figure.get(MAHIMAHI.get(figure, ""))
    if row is None and failed and figure in MAHIMAHI:
        return failed.replace("mahimahi: ", "bench/mahimahi ")
    if not failed and not any(r.startswith("Mahimahi ") for r in by_figure):
        return "not run (no MAHIMAHI_BINDIR)"
    if row is None:
        return "-"
    return f"{row[1]} ({row[3]})" if row[3] else row[1]


def rows_of(path):
    with open(path) as f:
        return [(line.rstrip("\n").split("\t") + [""] * 5)[:5] for line in f if line.strip()]


def replace_between_markers(path, text):
    with open(path, encoding="utf-8") as f:
        old = f.read()
    if BEGIN not in old or END not in old:
        sys.exit(f"benchlib: {path} has no {BEGIN} ... {END} to write the table between")
    new = old[:old.index(BEGIN) + len(BEGIN)] + "\n" + text + "\n" + old[old.index(END):]
    with open(path, "w", encoding="utf-8") as f:
        f.write(new)


def cmd_publish(args):
    """Writes the run's table into bench/README.md and its headline rows into README.md (TOP: the tree)."""
    rows = rows_of(args.file)
    where = f"Measured by `sudo bench/run` on {args.machine}."
    replace_between_markers(os.path.join(args.top, "bench", "README.md"),
                            where + "\n\n" + markdown_table(["figure", "tracemod", "raw veth", "ratio", "target"], rows))
    by_figure = {}
    for r in rows:
        by_figure.setdefault(r[0], r)  # a name a later benchmark repeats (channel's own TCP runs): the first
    headline = [[f, by_figure[f][1], by_figure[f][2], by_figure[f][3], mahimahi_cell(by_figure, f)]
                for f in HEADLINE if f in by_figure]
    replace_between_markers(os.path.join(args.top, "README.md"), where + "\n\n" + markdown_table(
        ["figure", "tracemod", "raw veth, same run", "ratio", "Mahimahi, same run (its ratio to raw veth)"], headline))
    missing = [f for f in HEADLINE if f not in by_figure]
    if missing:
        print(f"benchlib: no figure for headline rows {missing}: README.md shows the others", file=sys.stderr)


def same_code(top, measured, rev):
    """Whether the tree at REV differs from MEASURED only in the published tables (the commit that lands a
    table is the one after the commit it measured)."""
    if measured.endswith("-dirty") or rev.endswith("-dirty"):
        return False
    try:
        r = subprocess.run(["git", "-C", top, "diff", "--quiet", measured, "HEAD", "--", ".",
                            ":(exclude)README.md", ":(exclude)bench/README.md"], capture_output=True)
    except OSError:  # no git: a tree from a tarball cannot say, so the note is printed
        return False
    return r.returncode == 0


def cmd_stale(args):
    """One line when bench/README.md's table was measured on other code than this tree's (REV: git describe)."""
    with open(args.file, encoding="utf-8") as f:
        text = f.read()
    m = re.search(re.escape(BEGIN) + r"\s*Measured by `sudo bench/run` on tracemod (\S+),", text)
    measured = m.group(1) if m else None
    top = os.path.dirname(os.path.dirname(os.path.abspath(args.file)))
    if measured and (measured == args.rev or same_code(top, measured, args.rev)):
        return
    print(f"note: {args.file}'s table was measured on {measured or 'nothing (no table)'}, this tree is {args.rev}; "
          f"a full run rewrites it (and README.md's headline rows)")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    for name, func, params in [
        ("iperf", cmd_iperf, ["file"]),
        ("pps", cmd_pps, ["file", "len"]),
        ("shell-cpu", cmd_shell_cpu, ["name", "tag", "out"]),
        ("pinger", cmd_pinger, ["host", "count", "interval"]),
        ("ping", cmd_ping, ["file"]),
        ("dist", cmd_dist, []),
        ("ratio", cmd_ratio, ["a", "b"]),
        ("percent", cmd_percent, ["a", "b"]),
        ("excess", cmd_excess, ["a", "b", "c"]),
        ("median", cmd_median, ["values"]),
        ("paired", cmd_paired, ["values"]),
        ("mib", cmd_mib, ["a"]),
        ("table", cmd_table, ["file"]),
        ("publish", cmd_publish, ["file", "machine", "top"]),
        ("stale", cmd_stale, ["file", "rev"]),
        ("far-sender", cmd_far_sender, ["port", "seconds"]),
        ("far-receiver", cmd_far_receiver, ["host", "port"]),
    ]:
        p = sub.add_parser(name, help=func.__doc__)
        for param in params:
            if param == "values":
                p.add_argument(param, nargs="+")
                continue
            p.add_argument(param, type={"file": str, "host": str, "count": int, "port": int, "len": int, "name": str,
                                        "tag": str, "out": str, "machine": str, "top": str,
                                        "rev": str}.get(param, float))
        if func is cmd_pinger:
            p.add_argument("--wait", type=float, default=2, help="seconds to wait for the last replies")
        p.set_defaults(func=func)
    args = parser.parse_args()
    args.func(args)


if __name__ == "__main__":
    main()
