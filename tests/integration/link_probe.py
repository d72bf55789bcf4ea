"""Saturating UDP probe for trace-driven links, run with python3 inside tracemod shells.

  recv PORT SECONDS HELLO CMD...
                        receive datagrams on UDP PORT while CMD runs (at most SECONDS); then print one line
                        per datagram: "SEQ SIZE T" (SIZE in IP bytes; T: CLOCK_MONOTONIC ns read just after it
                        was received, so never earlier than its arrival); exit with CMD's status. HELLO is "-"
                        or HOST:PORT of a serve-send to ask for data until some arrives.
  send HOST PORT PPS SECONDS SIZE
                        send SIZE-byte IP packets (UDP over IPv4) to HOST:PORT at PPS packets per second for
                        SECONDS, each carrying its sequence number
  serve-send PORT PPS SECONDS SIZE CMD...
                        run CMD; when a hello arrives on UDP PORT, send as `send` does to where it came from

Both ends read CLOCK_MONOTONIC, which network namespaces share, as the link log does.
"""
import socket
import struct
import subprocess
import sys
import threading
import time

HEADERS = 28  # IPv4 + UDP


def recv(port, seconds, hello, command):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
    s.bind(("0.0.0.0", port))
    got = []

    def loop():
        while True:
            data = s.recv(2048)
            got.append((struct.unpack("!Q", data[:8])[0], len(data) + HEADERS, time.monotonic_ns()))

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
    sys.stdout.write("".join(f"{seq} {size} {t}\n" for seq, size, t in list(got)))
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
