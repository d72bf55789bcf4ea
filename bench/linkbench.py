#!/usr/bin/env python3
"""Helpers of bench/link (run with python3; standard library only).

  huge-trace FILE N            write a trace of N opportunities in one millisecond (N x 12 Mbit/s), looping
  cpu-watch NAME OUT           until SIGTERM, sample the CPU time of processes named NAME; then write the
                               total CPU seconds they used to OUT
  blast HOST PORT MBIT SECS    send 1500-byte IP packets (UDP/IPv4) at MBIT Mbit/s for SECS seconds
  sink PORT SECS OUT CMD...    receive UDP on PORT while CMD runs (at most SECS); write "NS BYTES" per
                               datagram (CLOCK_MONOTONIC, IP bytes) to OUT; exit with CMD's status
  fidelity TRACE LOG ARRIVALS BIN_MS
                               compare what arrived (ARRIVALS from sink) per BIN_MS with the trace's capacity
                               in the same bins, aligned on the link log's base timestamp; print
                               "RATIO CORRELATION BINS" over the bins in which the sender was saturating
"""
import math
import os
import signal
import socket
import subprocess
import sys
import threading
import time

HEADERS = 28


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


def blast(host, port, mbit, secs):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    payload = bytes(1500 - HEADERS)
    pps = mbit * 1e6 / 8 / 1500
    start = time.monotonic()
    sent = 0
    while (now := time.monotonic()) - start < secs:
        due = int((now - start) * pps) + 1
        while sent < due:
            try:
                s.sendto(payload, (host, int(port)))
            except OSError:
                pass
            sent += 1
        time.sleep(0.0005)


def sink(port, secs, out, command):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16 << 20)
    s.bind(("0.0.0.0", int(port)))
    got = []

    def loop():
        while True:
            n = len(s.recv(2048))
            got.append((time.monotonic_ns(), n + HEADERS))

    threading.Thread(target=loop, daemon=True).start()
    try:
        status = subprocess.run(command, timeout=float(secs)).returncode
    except subprocess.TimeoutExpired:
        status = 124
    time.sleep(0.2)
    with open(out, "w") as f:
        f.write("".join(f"{t} {n}\n" for t, n in list(got)))
    return status


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
    got = [tuple(map(int, l.split())) for l in open(arrivals) if l.strip()]
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
    elif mode == "blast":
        blast(args[0], args[1], float(args[2]), float(args[3]))
    elif mode == "sink":
        sys.exit(sink(args[0], args[1], args[2], args[3:]))
    elif mode == "fidelity":
        fidelity(*args)
    else:
        sys.exit(__doc__)
