"""Saturating UDP probe for trace-driven links, run with python3 inside tracemod shells.

  recv PORT SECONDS HELLO CMD...
                        receive datagrams on UDP PORT while CMD runs (at most SECONDS); then print one line
                        per datagram: "SEQ SIZE T" (SIZE in IP bytes; T: when the kernel received it, its
                        SO_TIMESTAMPNS moved onto CLOCK_MONOTONIC ns, so a late reader does not delay it);
                        exit with CMD's status. HELLO is "-" or HOST:PORT of a serve-send to ask for data
                        until some arrives. Datagrams the socket dropped (a full buffer) are counted on
                        standard error.
  send HOST PORT PPS SECONDS SIZE
                        send SIZE-byte IP packets (UDP over IPv4) to HOST:PORT at PPS packets per second for
                        SECONDS, each carrying its sequence number
  serve-send PORT PPS SECONDS SIZE CMD...
                        run CMD; when a hello arrives on UDP PORT, send as `send` does to where it came from

Times are CLOCK_MONOTONIC, which network namespaces share, as the link log's are.
"""
import select
import socket
import struct
import subprocess
import sys
import threading
import time

HEADERS = 28  # IPv4 + UDP
SO_TIMESTAMPNS = 35  # Linux (asm-generic/socket.h); the socket module does not name them
SO_RXQ_OVFL = 40  # each datagram carries how many its socket dropped on a full buffer


def monotonic_minus_realtime():
    """CLOCK_MONOTONIC - CLOCK_REALTIME in ns (constant but for clock steps), from the monotonic read that came
    closest between two realtime reads: a read preempted in between would be off by half the preemption."""
    best = None
    for _ in range(200):
        before = time.time_ns()
        mono = time.monotonic_ns()
        after = time.time_ns()
        if best is None or after - before < best[0]:
            best = (after - before, mono - (before + after) // 2)
    return best[1]


def received_at(ancillary, offset):
    """The kernel's receive time (SO_TIMESTAMPNS, CLOCK_REALTIME) of a datagram, in CLOCK_MONOTONIC ns."""
    for level, kind, value in ancillary:
        if (level, kind) == (socket.SOL_SOCKET, SO_TIMESTAMPNS):
            sec, nsec = struct.unpack("qq", value[:16])
            return sec * 1_000_000_000 + nsec + offset
    raise RuntimeError("link_probe: a datagram without its kernel timestamp")


def recv(port, seconds, hello, command):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
    s.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    s.setsockopt(socket.SOL_SOCKET, SO_RXQ_OVFL, 1)
    s.bind(("0.0.0.0", port))
    got, overflow = [], [0]
    offset = monotonic_minus_realtime()

    def loop():
        while True:
            data, ancillary, _, _ = s.recvmsg(2048, socket.CMSG_SPACE(16) + socket.CMSG_SPACE(4))
            got.append((struct.unpack("!Q", data[:8])[0], len(data) + HEADERS, received_at(ancillary, offset)))
            overflow[0] = max([overflow[0]] + [struct.unpack("I", v[:4])[0] for level, kind, v in ancillary
                                               if (level, kind) == (socket.SOL_SOCKET, SO_RXQ_OVFL)])

    def greet(host, hello_port):
        while not got:
            s.sendto(b"hello", (host, int(hello_port)))
            time.sleep(0.1)

    threading.Thread(target=loop, daemon=True).start()
    if hello != "-":
        threading.Thread(target=greet, args=hello.rsplit(":", 1), daemon=True).start()
    try:
        status = subprocess.run(command, timeout=seconds).returncode
    except subprocess.TimeoutExpired:
        status = 124
    time.sleep(0.2)  # the last departures still crossing
    drained = 0
    for _ in range(500):  # a reader that fell behind (a loaded machine) catches up before we print
        drained = 0 if select.select([s], [], [], 0)[0] else drained + 1
        if drained == 3:
            break
        time.sleep(0.01)
    sys.stdout.write("".join(f"{seq} {size} {t}\n" for seq, size, t in list(got)))
    if overflow[0]:
        sys.stderr.write(f"link_probe: the receiving socket dropped {overflow[0]} datagrams (its buffer was full)\n")
    return status


def send(host, port, pps, seconds, size, s=None):
    s = s or socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    payload = bytes(size - HEADERS - 8)
    start = time.monotonic()
    seq = 0
    while True:
        now = time.monotonic()
        if now - start >= seconds:
            return 0
        due = int((now - start) * pps) + 1
        while seq < due:
            try:
                s.sendto(struct.pack("!Q", seq) + payload, (host, port))
            except OSError:  # ENOBUFS from a full queue: the link drops, we go on
                pass
            seq += 1
        time.sleep(0.002)


def serve_send(port, pps, seconds, size, command):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("0.0.0.0", port))

    def on_hello():
        _, (host, peer_port) = s.recvfrom(64)
        send(host, peer_port, pps, seconds, size, s)

    threading.Thread(target=on_hello, daemon=True).start()
    return subprocess.run(command).returncode


if __name__ == "__main__":
    mode, args = sys.argv[1], sys.argv[2:]
    if mode == "recv":
        sys.exit(recv(int(args[0]), float(args[1]), args[2], args[3:]))
    if mode == "serve-send":
        sys.exit(serve_send(int(args[0]), float(args[1]), float(args[2]), int(args[3]), args[4:]))
    sys.exit(send(args[0], int(args[1]), float(args[2]), float(args[3]), int(args[4])))
