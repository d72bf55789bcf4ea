"""Traffic for the tm-modulate and tm-probe tests, run with python3 inside and outside tracemod shells.

  udp-sink PORT SECONDS CMD...     receive UDP datagrams on PORT while CMD runs (at most SECONDS), then print
                                   "SEQ SIZE RX" per datagram (SIZE: IP bytes over IPv4; RX: the kernel's receive
                                   time stamp on CLOCK_MONOTONIC, ns); exit with CMD's status
  udp-plan HOST PORT PLAN          send datagrams as PLAN says: "T:SIZE,T:SIZE,..." (T: seconds from the start,
                                   SIZE: IP bytes), each carrying its index as sequence number
  udp-stream HOST PORT COUNT SIZE INTERVAL
                                   send COUNT datagrams of SIZE IP bytes, INTERVAL seconds apart
  duplex-outer PORT PPS SECONDS SIZE DELAY CMD...
                                   receive on UDP PORT; DELAY seconds after the first datagram, send SIZE-byte
                                   datagrams back to its sender at PPS until SECONDS after it; run CMD; print
                                   "up SEQ SIZE RX" per datagram received
  duplex-inner HOST PORT PPS SECONDS SIZE
                                   send SIZE-byte datagrams to HOST:PORT at PPS for SECONDS, and print
                                   "down SEQ SIZE RX" per datagram received on the same socket
  tcp-serve PORT NBYTES CMD...     answer each TCP connection on PORT with NBYTES, while CMD runs
  tcp-fetch HOST PORT NBYTES       fetch NBYTES; print the seconds from connect to the last byte
  tcp-sink PORT NBYTES CMD...      read NBYTES from each TCP connection on PORT and answer one byte, while CMD runs
  tcp-push HOST PORT NBYTES        send NBYTES; print the seconds from connect to the sink's answer

Network namespaces share CLOCK_MONOTONIC, so times taken inside and outside compare.
"""
import random
import socket
import struct
import subprocess
import sys
import threading
import time

IPV4_UDP = 28
SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)


def timestamped_socket(port=None):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
    s.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    if port is not None:
        s.bind(("0.0.0.0", port))
    return s


def receive(s):
    """(payload, sender, kernel receive time on CLOCK_MONOTONIC in ns)."""
    data, ancillary, _, sender = s.recvmsg(65536, 256)
    offset = time.clock_gettime_ns(time.CLOCK_REALTIME) - time.monotonic_ns()
    rx = time.monotonic_ns()
    for level, kind, value in ancillary:
        if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS:
            sec, nsec = struct.unpack("qq", value[:16])
            rx = sec * 1_000_000_000 + nsec - offset
    return data, sender, rx


def collect(s, on_first=None):
    """Receives on S in a thread; returns the list it fills with (seq, IP size, rx). ON_FIRST(sender) is called
    once, for the first datagram."""
    got = []

    def loop():
        while True:
            data, sender, rx = receive(s)
            got.append((struct.unpack("!Q", data[:8])[0], len(data) + IPV4_UDP, rx))
            if on_first and len(got) == 1:
                on_first(sender)

    threading.Thread(target=loop, daemon=True).start()
    return got


def datagram(seq, size):
    return struct.pack("!Q", seq) + bytes(max(0, size - IPV4_UDP - 8))


def run(command, seconds):
    try:
        return subprocess.run(command, timeout=seconds).returncode
    except subprocess.TimeoutExpired:
        return 124


def udp_sink(port, seconds, command):
    got = collect(timestamped_socket(port))
    status = run(command, seconds)
    time.sleep(0.3)  # the last departures still crossing
    sys.stdout.write("".join(f"{seq} {size} {rx}\n" for seq, size, rx in list(got)))
    return status


def udp_plan(host, port, plan):
    return send_plan(host, port, [(float(t), int(size)) for t, size in (e.split(":") for e in plan.split(","))])


def send_plan(host, port, entries):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    start = time.monotonic()
    for seq, (t, size) in enumerate(entries):
        delay = start + t - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        s.sendto(datagram(seq, size), (host, port))
    time.sleep(0.5)
    return 0


def paced(s, peer, pps, until, size):
    """Sends at PPS on average, at the times of a Poisson process: periodic senders lock in phase with a
    drop-tail queue, which then shares itself out at random (Floyd and Jacobson's phase effect)."""
    rng = random.Random(peer[1] ^ port_of(s))
    next_send, seq = time.monotonic(), 0
    while time.monotonic() < until:
        while next_send <= time.monotonic():
            try:
                s.sendto(datagram(seq, size), peer)
            except OSError:  # a full queue: the link drops, the sender goes on
                pass
            seq += 1
            next_send += rng.expovariate(pps)
        time.sleep(0.0005)


def port_of(s):
    try:
        return s.getsockname()[1]
    except OSError:
        return 0


def duplex_outer(port, pps, seconds, size, delay, command):
    s = timestamped_socket(port)

    def send_back(peer, first):
        time.sleep(delay)
        paced(s, peer, pps, first + seconds, size)

    def start(peer):
        threading.Thread(target=send_back, args=(peer, time.monotonic()), daemon=True).start()

    got = collect(s, start)
    status = run(command, seconds + 30)
    sys.stdout.write("".join(f"up {seq} {n} {rx}\n" for seq, n, rx in list(got)))
    return status


def duplex_inner(host, port, pps, seconds, size):
    s = timestamped_socket()
    got = collect(s)
    paced(s, (host, port), pps, time.monotonic() + seconds, size)
    time.sleep(0.5)
    sys.stdout.write("".join(f"down {seq} {n} {rx}\n" for seq, n, rx in list(got)))
    return 0


def tcp_server(port, answer, command):
    """Runs ANSWER(connection) for each TCP connection on PORT while COMMAND runs; returns its status."""
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("0.0.0.0", port))
    server.listen(8)

    def loop():
        while True:
            c, _ = server.accept()
            threading.Thread(target=answer, args=(c,), daemon=True).start()

    threading.Thread(target=loop, daemon=True).start()
    return run(command, 600)


def tcp_serve(port, nbytes, command):
    block = bytes(65536)

    def answer(c):
        with c:
            left = nbytes
            while left > 0:
                left -= c.send(block[:min(left, len(block))])

    return tcp_server(port, answer, command)


def tcp_sink(port, nbytes, command):
    def answer(c):
        with c:
            got = 0
            while got < nbytes:
                chunk = c.recv(1 << 16)
                if not chunk:
                    return
                got += len(chunk)
            c.sendall(b"k")

    return tcp_server(port, answer, command)


def tcp_push(host, port, nbytes):
    start = time.monotonic()
    c = socket.create_connection((host, port), timeout=60)
    c.sendall(bytes(nbytes))
    if c.recv(1) != b"k":
        sys.exit("tcp-push: the sink did not confirm")
    print(f"{time.monotonic() - start:.6f}")
    c.close()
    return 0


def tcp_fetch(host, port, nbytes):
    start = time.monotonic()
    c = socket.create_connection((host, port), timeout=60)
    got = 0
    while got < nbytes:
        chunk = c.recv(1 << 16)
        if not chunk:
            break
        got += len(chunk)
    elapsed = time.monotonic() - start
    c.close()
    if got != nbytes:
        sys.exit(f"tcp-fetch: {got} of {nbytes} bytes")
    print(f"{elapsed:.6f}")
    return 0


if __name__ == "__main__":
    mode, a = sys.argv[1], sys.argv[2:]
    if mode == "udp-sink":
        sys.exit(udp_sink(int(a[0]), float(a[1]), a[2:]))
    if mode == "udp-plan":
        sys.exit(udp_plan(a[0], int(a[1]), a[2]))
    if mode == "udp-stream":
        sys.exit(send_plan(a[0], int(a[1]), [(i * float(a[4]), int(a[3])) for i in range(int(a[2]))]))
    if mode == "duplex-outer":
        sys.exit(duplex_outer(int(a[0]), float(a[1]), float(a[2]), int(a[3]), float(a[4]), a[5:]))
    if mode == "duplex-inner":
        sys.exit(duplex_inner(a[0], int(a[1]), float(a[2]), float(a[3]), int(a[4])))
    if mode == "tcp-serve":
        sys.exit(tcp_serve(int(a[0]), int(a[1]), a[2:]))
    if mode == "tcp-sink":
        sys.exit(tcp_sink(int(a[0]), int(a[1]), a[2:]))
    if mode == "tcp-push":
        sys.exit(tcp_push(a[0], int(a[1]), int(a[2])))
    if mode == "tcp-fetch":
        sys.exit(tcp_fetch(a[0], int(a[1]), int(a[2])))
    sys.exit(f"unknown mode {mode}")
