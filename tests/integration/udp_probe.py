"""One-way delay probe over UDP, run with python3 inside tracemod shells.

  serve PORT CMD...   answer each datagram on UDP PORT with the times it arrived and was answered, while CMD
                      runs; exit with CMD's status
  probe HOST PORT N   send N timed datagrams to HOST:PORT; print "uplink MIN MEDIAN downlink MIN MEDIAN"
                      (one-way delays in ms)
  echo PORT CMD...    echo each numbered datagram on UDP PORT (IPv4 or IPv6) and answer queries with the
                      numbers that reached it, while CMD runs; exit with CMD's status
  count HOST PORT N PPS SIZE [GSO]
                      send N numbered SIZE-byte datagrams (UDP payload) to an `echo` at HOST:PORT at PPS a
                      second (GSO of them at a time as one UDP_SEGMENT super-datagram, if given), then ask
                      it which arrived; print "reached BITS echoed BITS overflow K corrupt C": BITS has a 0
                      or 1 per datagram (reached the echo; its echo came back), K counts datagrams either
                      socket dropped on a full buffer (then the counts do not measure the path), C echoes
                      whose bytes differ from what was sent

Both ends read CLOCK_MONOTONIC, which network namespaces share, so each direction is measured alone. The
query of `count` goes after the last datagram and its answer after the last echo: on a path that keeps order
(every tracemod queue is a FIFO), every echo that was not lost has arrived when the answer does.
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


SO_RXQ_OVFL = 40  # Linux: each datagram carries the count of datagrams its socket dropped on a full buffer


def counted_socket(family):
    s = socket.socket(family, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)  # as much as net.core.rmem_max allows
    s.setsockopt(socket.SOL_SOCKET, SO_RXQ_OVFL, 1)
    return s


def receive(s):
    """(datagram, sender, datagrams the socket has dropped so far)."""
    data, ancillary, _, peer = s.recvmsg(65536, socket.CMSG_SPACE(4))
    dropped = [struct.unpack("I", v[:4])[0] for level, kind, v in ancillary
               if (level, kind) == (socket.SOL_SOCKET, SO_RXQ_OVFL)]
    return data, peer, dropped[0] if dropped else 0


def bits(flags):
    return "".join("1" if f else "0" for f in flags)


def packed(flags):
    """One bit per flag, so that an answer about thousands of datagrams fits in one unfragmented datagram."""
    return bytes(sum(flags[i + j] << j for j in range(min(8, len(flags) - i))) for i in range(0, len(flags), 8))


def unpacked(data, n):
    return [(data[i // 8] >> (i % 8)) & 1 if i // 8 < len(data) else 0 for i in range(n)]


def echo(port, command):
    s = counted_socket(socket.AF_INET6)
    s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
    s.bind(("::", port))
    reached = bytearray()

    def answer():
        while True:
            data, peer, dropped = receive(s)
            if data[:1] == b"D":
                seq = struct.unpack("!I", data[1:5])[0]
                reached.extend(bytes(seq + 1 - len(reached)) if seq >= len(reached) else b"")
                reached[seq] = 1
                s.sendto(data, peer)
            elif data[:1] == b"Q":
                s.sendto(b"R" + struct.pack("!I", dropped) + packed(reached), peer)

    threading.Thread(target=answer, daemon=True).start()
    return subprocess.run(command).returncode


UDP_SEGMENT = 103  # Linux: the kernel (or the NIC) cuts one send into datagrams of this size


def numbered(seq, size):
    return (b"D" + struct.pack("!I", seq) * (size // 4 + 2))[:max(size, 5)]


def count(host, port, n, pps, size, gso=1):
    s = counted_socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    if gso > 1:
        s.setsockopt(socket.IPPROTO_UDP, UDP_SEGMENT, max(size, 5))
    echoed, answers, dropped, corrupt = bytearray(n), [], [0], [0]

    def listen():
        while True:
            data, _, dropped[0] = receive(s)
            if data[:1] == b"D":
                seq = struct.unpack("!I", data[1:5])[0]
                if data == numbered(seq, size):
                    echoed[seq] = 1
                else:
                    corrupt[0] += 1
            elif data[:1] == b"R":
                answers.append(data)

    threading.Thread(target=listen, daemon=True).start()
    start, seq = time.monotonic(), 0
    while seq < n:
        due = min(n, int((time.monotonic() - start) * pps) + 1)
        while seq < due:
            k = min(gso, n - seq)
            s.sendto(b"".join(numbered(seq + i, size) for i in range(k)), (host, port))
            seq += k
        time.sleep(0.002)
    if gso > 1:
        s.setsockopt(socket.IPPROTO_UDP, UDP_SEGMENT, 0)
    for _ in range(100):  # the query or its answer may be lost too
        s.sendto(b"Q", (host, port))
        deadline = time.monotonic() + 0.2
        while not answers and time.monotonic() < deadline:
            time.sleep(0.005)
        if answers:
            break
    if not answers:
        sys.exit(f"udp_probe: no answer from the echo at {host}:{port}")
    theirs = answers[0]
    reached = unpacked(theirs[5:], n)
    print(f"reached {bits(reached)} echoed {bits(echoed)} overflow {struct.unpack('!I', theirs[1:5])[0] + dropped[0]} "
          f"corrupt {corrupt[0]}")
    return 0


if __name__ == "__main__":
    mode, args = sys.argv[1], sys.argv[2:]
    if mode == "serve":
        sys.exit(serve(int(args[0]), args[1:]))
    if mode == "echo":
        sys.exit(echo(int(args[0]), args[1:]))
    if mode == "count":
        sys.exit(count(args[0], int(args[1]), int(args[2]), float(args[3]), int(args[4]), *map(int, args[5:6])))
    sys.exit(probe(args[0], int(args[1]), int(args[2])))
