"""A timed UDP stream for the fault tests, run with python3 inside tracemod shells.

  recv PORT CMD...                 receive datagrams on UDP PORT while CMD runs; then print one line per datagram,
                                   "SEQ SENT RECEIVED" (CLOCK_REALTIME ns: when it was sent, and when the
                                   receiver's kernel got it, SO_TIMESTAMPNS, so a late reader does not move it);
                                   exit with CMD's status
  send HOST PORT PPS SECONDS SIZE  send SIZE-byte IP packets (UDP over IPv4) to HOST:PORT at PPS a second for
                                   SECONDS, each carrying its sequence number and the time it was sent; print
                                   "sent N"

SENT and RECEIVED are both CLOCK_REALTIME, the clock SO_TIMESTAMPNS stamps with: no offset to estimate.
"""
import select
import socket
import struct
import subprocess
import sys
import threading
import time

HEADERS = 28  # IPv4 + UDP
SO_TIMESTAMPNS = 35  # Linux (asm-generic/socket.h)


def recv(port, command):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
    s.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    s.bind(("0.0.0.0", port))
    got = []

    def loop():
        while True:
            data, ancillary, _, _ = s.recvmsg(2048, socket.CMSG_SPACE(16))
            seq, sent = struct.unpack("!QQ", data[:16])
            stamp = [v for level, kind, v in ancillary if (level, kind) == (socket.SOL_SOCKET, SO_TIMESTAMPNS)]
            sec, nsec = struct.unpack("qq", stamp[0][:16])
            got.append((seq, sent, sec * 10**9 + nsec))

    threading.Thread(target=loop, daemon=True).start()
    status = subprocess.run(command).returncode
    time.sleep(0.3)  # the last departures still crossing
    while select.select([s], [], [], 0.05)[0]:
        time.sleep(0.05)
    sys.stdout.write("".join(f"{seq} {sent} {t}\n" for seq, sent, t in list(got)))
    return status


def send(host, port, pps, seconds, size):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    padding = bytes(size - HEADERS - 16)
    start = time.monotonic()
    seq = 0
    while time.monotonic() - start < seconds:
        while seq < int((time.monotonic() - start) * pps) + 1:
            s.sendto(struct.pack("!QQ", seq, time.time_ns()) + padding, (host, port))
            seq += 1
        time.sleep(0.001)
    print(f"sent {seq}", flush=True)
    return 0


if __name__ == "__main__":
    mode, args = sys.argv[1], sys.argv[2:]
    if mode == "recv":
        sys.exit(recv(int(args[0]), args[1:]))
    sys.exit(send(args[0], int(args[1]), float(args[2]), float(args[3]), int(args[4])))
