"""One-way delay probe over UDP, run with python3 inside tracemod shells.

  serve PORT CMD...   answer each datagram on UDP PORT with the times it arrived and was answered, while CMD
                      runs; exit with CMD's status
  probe HOST PORT N   send N timed datagrams to HOST:PORT; print "uplink MIN MEDIAN downlink MIN MEDIAN"
                      (one-way delays in ms)

Both ends read CLOCK_MONOTONIC, which network namespaces share, so each direction is measured alone.
"""
import socket
import statistics
import struct
import subprocess
import sys
import threading
import time


def serve(port, command):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("0.0.0.0", port))

    def answer():
        while True:
            data, peer = s.recvfrom(64)
            arrived = time.monotonic_ns()
            s.sendto(data[:8] + struct.pack("!QQ", arrived, time.monotonic_ns()), peer)

    threading.Thread(target=answer, daemon=True).start()
    return subprocess.run(command).returncode


def probe(host, port, n):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(0.5)
    up, down = [], []
    deadline = time.monotonic() + 20
    while len(up) < n and time.monotonic() < deadline:
        sent = time.monotonic_ns()
        s.sendto(struct.pack("!Q", sent), (host, port))
        try:
            while True:  # skip late answers to earlier datagrams (the server may have started late)
                data = s.recv(64)
                back = time.monotonic_ns()
                echoed, arrived, answered = struct.unpack("!QQQ", data)
                if echoed == sent:
                    break
        except socket.timeout:
            continue
        up.append((arrived - sent) / 1e6)
        down.append((back - answered) / 1e6)
        time.sleep(0.01)
    if len(up) < n:
        sys.exit(f"udp_probe: only {len(up)} of {n} answers from {host}:{port}")
    print(f"uplink {min(up):.3f} {statistics.median(up):.3f} downlink {min(down):.3f} {statistics.median(down):.3f}")
    return 0


if __name__ == "__main__":
    mode, args = sys.argv[1], sys.argv[2:]
    if mode == "serve":
        sys.exit(serve(int(args[0]), args[1:]))
    sys.exit(probe(args[0], int(args[1]), int(args[2])))
