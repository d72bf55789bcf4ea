#!/usr/bin/env python3
"""Helpers of bench/link (run with python3; standard library only).

  huge-trace FILE N            write a trace of N opportunities in one millisecond (N x 12 Mbit/s), looping
  cpu-watch NAME OUT           until SIGTERM, sample the CPU time of processes named NAME; then write the
                               total CPU seconds they used to OUT
  fidelity TRACE LOG ARRIVALS BIN_MS
                               compare what arrived (ARRIVALS: the output of tests/integration/link_probe.py
                               recv, "SEQ BYTES NS" per datagram) per BIN_MS with the trace's capacity in the
                               same bins, aligned on the link log's base timestamp; print
                               "RATIO CORRELATION BINS" over the bins in which the sender was saturating
"""
import math
import os
import signal
import sys
import threading


def huge_trace(path, n):
    with open(path, "w") as f:
        f.write("1\n" * int(n))


def cpu_watch(name, out):
    ticks = {}
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    hz = os.sysconf("SC_CLK_TCK")
    while not stop.is_set():
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                with open(f"/proc/{pid}/stat") as f:
                    stat = f.read()
            except OSError:
                continue
            comm = stat[stat.index("(") + 1:stat.rindex(")")]
            if comm == name:
                fields = stat[stat.rindex(")") + 2:].split()
                ticks[pid] = int(fields[11]) + int(fields[12])  # utime + stime
        stop.wait(0.05)
    with open(out, "w") as f:
        f.write(f"{sum(ticks.values()) / hz:.3f}\n")


def trace_bins(path, bin_ms, nbins):
    times = [int(line) for line in open(path)]
    period = times[-1]
    bins = [0] * nbins
    loop = 0
    while loop * period < nbins * bin_ms:
        for t in times:
            k = (loop * period + t) // bin_ms
            if k >= nbins:
                break
            bins[k] += 1500
        loop += 1
    return bins


def correlation(a, b):
    ma, mb = sum(a) / len(a), sum(b) / len(b)
    cov = sum((x - ma) * (y - mb) for x, y in zip(a, b))
    va = math.sqrt(sum((x - ma) ** 2 for x in a))
    vb = math.sqrt(sum((y - mb) ** 2 for y in b))
    return cov / (va * vb) if va and vb else float("nan")


def fidelity(trace, log, arrivals, bin_ms):
    bin_ms = int(bin_ms)
    base = next(float(l.split(": ")[1]) for l in open(log) if l.startswith("# base timestamp: "))
    got = [tuple(map(int, l.split()))[:0:-1] for l in open(arrivals) if l.strip()]  # (ns, bytes)
    if not got:
        sys.exit("fidelity: nothing arrived")
    nbins = int((got[-1][0] / 1e6 - base) // bin_ms)
    delivered = [0] * nbins
    for t, n in got:
        k = int((t / 1e6 - base) // bin_ms)
        if 0 <= k < nbins:
            delivered[k] += n
    capacity = trace_bins(trace, bin_ms, nbins)
    first = int((got[0][0] / 1e6 - base) // bin_ms) + 2  # the sender needs a moment to fill the queue
    d, c = delivered[first:nbins - 1], capacity[first:nbins - 1]
    print(f"{sum(d) / sum(c):.4f} {correlation(d, c):.4f} {len(d)}")


if __name__ == "__main__":
    mode, args = sys.argv[1], sys.argv[2:]
    if mode == "huge-trace":
        huge_trace(*args)
    elif mode == "cpu-watch":
        cpu_watch(*args)
    elif mode == "fidelity":
        fidelity(*args)
    else:
        sys.exit(__doc__)
