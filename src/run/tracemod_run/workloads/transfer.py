"""One TCP flow's two ends, shared by bulk and maxrate: a sender that writes N bytes or for T seconds while a
sampler thread reads its TCP_INFO (smoothed RTT, retransmissions), and a receiver that logs cumulative bytes
over time. Times are CLOCK_MONOTONIC seconds, the same clock in every network namespace of the machine."""
import socket
import threading
import time

from . import common

CHUNK = 1 << 16
MAX_POINTS = 2000  # per series: a long run keeps every other point and samples half as often


class Series:
    """(t, value) points at most one per interval; past MAX_POINTS, thinned to every other point and the
    interval doubled, so a slow hour-long transfer stays as small as a fast one."""

    def __init__(self, interval):
        self.interval, self.points, self.next = interval, [], 0.0

    def add(self, t, value, force=False):
        if t < self.next and not force:
            return
        self.points.append((t, value))
        self.next = t + self.interval
        if len(self.points) > MAX_POINTS:
            self.points = self.points[::2]
            self.interval *= 2


class Sender:
    def __init__(self, sock, nbytes=None, seconds=None, sample_ms=10, congestion=None):
        self.sock, self.nbytes, self.seconds, self.sample = sock, nbytes, seconds, sample_ms / 1000.0
        if congestion:
            try:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, congestion.encode())
            except OSError as e:
                raise common.RunError(f"congestion control '{congestion}': {e.strerror} (see "
                                      "/proc/sys/net/ipv4/tcp_available_congestion_control)") from None
        self.rtt = Series(self.sample)  # srtt ms
        self.sent = 0
        self.start = self.acked_at = None
        self.info = None
        self.finished = False
        self._done = threading.Event()

    def _sample(self):
        while not self._done.wait(self.sample):
            try:
                info = common.tcp_info(self.sock)
            except OSError:
                return
            if info["rtt_us"]:
                self.rtt.add(common.now(), info["rtt_us"] / 1000.0)

    def run(self):
        """Sends, then waits until every byte is acknowledged (the sender's completion)."""
        sampler = threading.Thread(target=self._sample, daemon=True)
        self.start = common.now()
        sampler.start()
        try:
            deadline = self.start + self.seconds if self.seconds else None
            data = bytes(CHUNK)
            while True:
                if self.nbytes is not None:
                    left = self.nbytes - self.sent
                    if left <= 0:
                        break
                    n = self.sock.send(data[: min(left, CHUNK)])
                else:
                    if common.now() >= deadline:
                        break
                    n = self.sock.send(data)
                self.sent += n
            self.sock.shutdown(socket.SHUT_WR)
            while True:  # acknowledged: nothing unsent, nothing in flight
                info = common.tcp_info(self.sock)
                if not info["unacked"] and not info["notsent_bytes"]:
                    break
                time.sleep(0.001)
            self.acked_at = common.now()
            self.info = common.tcp_info(self.sock)
        finally:
            self._done.set()
            sampler.join()
            self.finished = True
        return self

    def report(self):
        return {"role": "sender", "start": self.start, "acked_at": self.acked_at, "bytes": self.sent,
                "rtt": self.rtt.points, "info": self.info}


class Receiver:
    def __init__(self, sock, sample_ms=10):
        self.sock, self.sample = sock, sample_ms / 1000.0
        self.received = 0
        self.first_at = self.last_at = None
        self.progress = Series(self.sample)  # cumulative bytes, and the last byte's time
        self.info = None
        self.finished = False

    def run(self):
        try:
            self._receive()
        finally:
            self.finished = True
        return self

    def _receive(self):
        buf = bytearray(CHUNK)
        view = memoryview(buf)
        while True:
            n = self.sock.recv_into(view)
            t = common.now()
            if not n:
                break
            if self.first_at is None:
                self.first_at = t
            self.received += n
            self.last_at = t
            self.progress.add(t, self.received)
        if self.last_at is not None and (not self.progress.points or self.progress.points[-1][0] != self.last_at):
            self.progress.add(self.last_at, self.received, force=True)
        self.info = common.tcp_info(self.sock)

    def report(self):
        return {"role": "receiver", "first_at": self.first_at, "last_at": self.last_at, "bytes": self.received,
                "progress": self.progress.points, "info": self.info}


def run_threads(targets):
    """Runs each callable in a thread; re-raises the first exception."""
    errors = []

    def wrap(f):
        try:
            f()
        except Exception as e:  # noqa: BLE001 - reported by the caller
            errors.append(e)

    threads = [threading.Thread(target=wrap, args=(f,), daemon=True) for f in targets]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
