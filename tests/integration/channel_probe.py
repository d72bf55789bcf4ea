"""Numbered, timestamped datagrams and a checked TCP stream for the channel tests, run with python3 inside
tracemod shells (the source travels on the command line, see conftest.python_script).

  recv PORT CMD...      receive UDP datagrams on PORT (IPv4 and IPv6) while CMD runs, then print one line per
                        datagram, "up SEQ SENT RECEIVED SIZE", the receiving namespace's counters, "snmp NAME
                        DELTA", and when CMD ended, "exit T"; exit with CMD's status
  serve PORT COUNT SPACING SIZE CMD...
                        as recv, and from the first datagram on also send COUNT datagrams back to its sender
                        (the downlink), SPACING seconds apart
  send HOST PORT COUNT SPACING SIZE [TOS]
                        send COUNT datagrams of SIZE IP bytes to HOST:PORT, SPACING seconds apart (0: as fast as
                        the socket takes them), with the IPv4 TOS byte TOS (e.g. 2: ECN-capable, ECT(0)); what
                        comes back on the same socket is printed as "down ..." lines
  tcp-recv PORT CMD...  accept one TCP connection on PORT while CMD runs, read it to the end, check the bytes,
                        print "tcp BYTES intact|DAMAGED" and the counters
  tcp-send HOST PORT BYTES
                        send BYTES of a known pattern over TCP to HOST:PORT

Times are ns of CLOCK_MONOTONIC, which network namespaces share: SENT is read by the sender just before sendto,
RECEIVED is the receiving kernel's timestamp (SO_TIMESTAMPNS, moved from CLOCK_REALTIME), so neither side's
scheduling shows in a delay. The counters are per namespace: Udp/Udp6/Tcp InCsumErrors (datagrams and segments
the kernel discarded for a bad checksum) and IpExt InCEPkts (packets that arrived marked CE).
"""
import socket
import struct
import subprocess
import sys
import threading
import time

HEADERS = {socket.AF_INET: 28, socket.AF_INET6: 48}  # IP + UDP
SO_TIMESTAMPNS = 35
STAMP = struct.Struct("!QQ")  # sequence number, send time


def realtime_offset():
    """CLOCK_REALTIME minus CLOCK_MONOTONIC, in ns, as src/util/clock.cc reads it: the true offset lies in
    [r - b, r - a]; r - b of the tightest of a few reads puts a time stamp at the latest instant it can stand for,
    so a delay measured with it is never early. (A midpoint is off by half of whatever ran between the reads, a
    preemption or another thread holding the GIL: enough to show a datagram arriving before the link let it go.)"""
    best, offset = None, 0
    for _ in range(10):
        a = time.monotonic_ns()
        r = time.time_ns()
        b = time.monotonic_ns()
        if best is None or b - a < best:
            best, offset = b - a, r - b
    return offset


def counters():
    """The namespace's InCsumErrors (UDP, UDP-Lite excluded; UDPv6; TCP) and InCEPkts."""
    found = {}
    for path in ("/proc/net/snmp", "/proc/net/netstat"):
        with open(path) as f:
            lines = f.read().splitlines()
        for names, values in zip(lines[0::2], lines[1::2]):
            proto = names.split(":")[0]
            for name, value in zip(names.split()[1:], values.split()[1:]):
                found[f"{proto}.{name}"] = int(value)
    with open("/proc/net/snmp6") as f:
        for line in f:
            name, value = line.split()
            found[name] = int(value)
    keys = ("Udp.InCsumErrors", "Udp6InCsumErrors", "Tcp.InCsumErrors", "IpExt.InCEPkts")
    return {k: found.get(k, 0) for k in keys}


def print_counters(before):
    after = counters()
    sys.stdout.write("".join(f"snmp {k} {after[k] - before[k]}\n" for k in before))


def udp_socket(family, port=0):
    s = socket.socket(family, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
    s.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    if family == socket.AF_INET6:
        s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
    s.bind(("::" if family == socket.AF_INET6 else "0.0.0.0", port))
    return s


def receive(s, into, direction, first=None):
    """Records every datagram on S as (direction, seq, sent, received, size); calls FIRST(peer) once."""
    offset = realtime_offset()
    while True:
        data, ancillary, _, peer = s.recvmsg(2048, 64)
        received = time.monotonic_ns()
        for level, kind, value in ancillary:
            if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS:
                sec, nsec = struct.unpack("qq", value[:16])
                received = sec * 1000000000 + nsec - offset
        seq, sent = STAMP.unpack(data[:STAMP.size])
        family = socket.AF_INET if len(peer) == 2 or peer[0].startswith("::ffff:") else socket.AF_INET6
        into.append((direction, seq, sent, received, len(data) + HEADERS[family]))
        if first:
            first(peer)
            first = None


def send_stream(s, peer, count, spacing, size):
    family = socket.AF_INET6 if ":" in peer[0] and not peer[0].startswith("::ffff:") else socket.AF_INET
    padding = bytes(max(0, size - HEADERS[family] - STAMP.size))
    start = time.monotonic()
    for seq in range(count):
        if spacing:
            wait = start + seq * spacing - time.monotonic()
            if wait > 0:
                time.sleep(wait)
        while True:
            try:
                s.sendto(STAMP.pack(seq, time.monotonic_ns()) + padding, peer)
                break
            except BlockingIOError:
                time.sleep(0.0005)


def report(records):
    sys.stdout.write("".join(f"{d} {seq} {sent} {received} {size}\n" for d, seq, sent, received, size in records))


def run(command):
    """(CMD's status, when it ended)."""
    status = subprocess.run(command).returncode
    ended = time.monotonic_ns()
    time.sleep(0.3)  # the last datagrams still crossing
    return status, ended


def recv(port, command, reply=None):
    before = counters()
    s = udp_socket(socket.AF_INET6, port)
    records = []
    first = None
    if reply:
        count, spacing, size = reply
        def first(peer):
            threading.Thread(target=send_stream, args=(s, peer, count, spacing, size), daemon=True).start()
    threading.Thread(target=receive, args=(s, records, "up", first), daemon=True).start()
    status, ended = run(command)
    report(list(records))
    print_counters(before)
    print(f"exit {ended}")
    return status


def send(host, port, count, spacing, size, tos=0):
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    s = udp_socket(family)
    if tos:
        s.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, tos)
    records = []
    threading.Thread(target=receive, args=(s, records, "down"), daemon=True).start()
    send_stream(s, (host, port), count, spacing, size)
    time.sleep(0.5)  # what the other side still sends back
    report(list(records))
    return 0


PERIOD = bytes(i * 7 % 251 for i in range(251))
REPEATED = PERIOD * ((1 << 16) // 251 + 2)


def pattern(offset, n):
    """N bytes of a pattern with period 251 from OFFSET: a misplaced or damaged byte shows."""
    start = offset % 251
    return REPEATED[start:start + n] if n <= (1 << 16) else (PERIOD * (n // 251 + 2))[start:start + n]


def tcp_recv(port, command):
    before = counters()
    server = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
    server.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
    server.bind(("::", port))
    server.listen(1)
    result = []

    def serve():
        conn, _ = server.accept()
        total, intact = 0, True
        while True:
            data = conn.recv(1 << 16)
            if not data:
                break
            intact = intact and data == pattern(total, len(data))
            total += len(data)
        result.append(f"tcp {total} {'intact' if intact else 'DAMAGED'}\n")

    done = threading.Thread(target=serve, daemon=True)
    done.start()
    status = subprocess.run(command).returncode
    done.join(10)
    sys.stdout.write("".join(result))
    print_counters(before)
    return status


def tcp_send(host, port, total):
    s = socket.create_connection((host, port), timeout=30)
    chunk = 1 << 16
    for offset in range(0, total, chunk):
        s.sendall(pattern(offset, min(chunk, total - offset)))
    s.shutdown(socket.SHUT_WR)
    s.recv(1)  # until the receiver has read everything and closed
    return 0


if __name__ == "__main__":
    mode, args = sys.argv[1], sys.argv[2:]
    if mode == "recv":
        sys.exit(recv(int(args[0]), args[1:]))
    if mode == "serve":
        sys.exit(recv(int(args[0]), args[4:], (int(args[1]), float(args[2]), int(args[3]))))
    if mode == "send":
        sys.exit(send(args[0], int(args[1]), int(args[2]), float(args[3]), int(args[4]), *map(int, args[5:6])))
    if mode == "tcp-recv":
        sys.exit(tcp_recv(int(args[0]), args[1:]))
    sys.exit(tcp_send(args[0], int(args[1]), int(args[2])))
