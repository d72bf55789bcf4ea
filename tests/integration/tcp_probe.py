"""Bulk TCP both ways with a check of every byte, run with python3 inside tracemod shells.

  serve PORT CMD...            accept connections on TCP PORT (IPv4 or IPv6) while CMD runs; exit with CMD's
                               status. Each connection sends UP bytes, gets back their SHA-256 and DOWN bytes.
  transfer HOST PORT UP DOWN   send UP bytes to a `serve` at HOST:PORT and receive DOWN bytes; print
                               "up ok|corrupt down ok|corrupt MBIT_S" (the bytes are a seeded pseudo-random
                               stream each end can make again; MBIT_S: both directions over the whole time)
"""
import hashlib
import random
import socket
import struct
import subprocess
import sys
import threading
import time

CHUNK = 1 << 16


def stream(seed, n):
    """N pseudo-random bytes, the same at both ends, in chunks."""
    r = random.Random(seed)
    while n > 0:
        k = min(CHUNK, n)
        yield r.randbytes(k)
        n -= k


def read_exactly(conn, n, digest):
    while n > 0:
        data = conn.recv(min(CHUNK, n))
        if not data:
            raise ConnectionError(f"tcp_probe: the connection closed {n} bytes early")
        digest.update(data)
        n -= len(data)


def read_all(conn, n):
    data = b""
    while len(data) < n:
        more = conn.recv(n - len(data))
        if not more:
            raise ConnectionError("tcp_probe: the connection closed early")
        data += more
    return data


def handle(conn):
    with conn:
        up, down = struct.unpack("!QQ", read_all(conn, 16))
        digest = hashlib.sha256()
        read_exactly(conn, up, digest)
        conn.sendall(digest.digest())
        for chunk in stream(2, down):
            conn.sendall(chunk)


def serve(port, command):
    s = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
    s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("::", port))
    s.listen()

    def accept():
        while True:
            conn, _ = s.accept()
            threading.Thread(target=handle, args=(conn,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    return subprocess.run(command).returncode


def connect(host, port):
    for _ in range(50):  # the server may still be starting
        conn = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
        conn.settimeout(30)
        try:
            conn.connect((host, port))
            return conn
        except ConnectionRefusedError:
            conn.close()
            time.sleep(0.1)
    sys.exit(f"tcp_probe: nothing listens on {host}:{port}")


def transfer(host, port, up, down):
    start = time.monotonic()
    conn = connect(host, port)
    with conn:
        conn.sendall(struct.pack("!QQ", up, down))
        sender = threading.Thread(target=lambda: [conn.sendall(c) for c in stream(1, up)], daemon=True)
        sender.start()
        expected_up = hashlib.sha256()
        for chunk in stream(1, up):
            expected_up.update(chunk)
        got_up = read_all(conn, 32)
        got_down, expected_down = hashlib.sha256(), hashlib.sha256()
        read_exactly(conn, down, got_down)
        for chunk in stream(2, down):
            expected_down.update(chunk)
        sender.join()
    elapsed = time.monotonic() - start
    verdict = lambda ok: "ok" if ok else "corrupt"
    print(f"up {verdict(got_up == expected_up.digest())} down {verdict(got_down.digest() == expected_down.digest())} "
          f"{(up + down) * 8 / elapsed / 1e6:.0f}")
    return 0


if __name__ == "__main__":
    mode, args = sys.argv[1], sys.argv[2:]
    if mode == "serve":
        sys.exit(serve(int(args[0]), args[1:]))
    sys.exit(transfer(args[0], int(args[1]), int(args[2]), int(args[3])))
