"""web: IPB's model of HTTP traffic (Mah et al.; Mah, INFOCOM '97), generated on real TCP connections.

Sessions (users) arrive as a Poisson process (mean gap session_interval s) for `seconds`; each retrieves a
geometric number of pages (mean pages_mean), pausing a think time between pages (exponential with median
think_median s; the paper gives the median); a page is a geometric number of files (mean files_mean). Requests
are bimodal: log-normal modes around request_small (250 B) and request_large (1 KB), the large one with
probability request_large_fraction (IPB: ~70% and ~15% of requests). Replies are Pareto, capped at reply_cap,
with alpha and the scale solved so that the capped distribution has median reply_median (1.7 KB) and mean
reply_mean (9 KB). As IPB, a page's first request is sent alone and the rest, once its reply is in, at once.
`connection` chooses what carries them: one connection per session (IPB's keep-alive, pipelined), one per page,
or one per file (a page's later files on parallel connections). After `seconds` no page starts; pages in flight
finish within drain_seconds or count as unfinished. Per-file time: request sent to the reply's last byte;
per-page time: first request sent to the last byte of the page.

Every random draw of a session comes from its own generator, seeded from the run's seed and the session's
number, so the sizes and counts do not depend on timing. Requests carry an 8-byte header (request and reply
sizes), so a request is at least 8 bytes; a header of two zeros, sent on a connection of its own after the last
page, is the client's goodbye: it tells a --once server that its client is done."""
import math
import random
import struct
import threading
import time

from . import common
from .. import values
from ..errors import ConfigError
from .registry import Param

DEFAULT_PORT = 5303
HEADLINE = ("file_ms_p50", "file_ms_p90", "page_ms_p50", "page_ms_p90")
HEADER = struct.Struct("!II")
PARAMS = {
    "seconds": Param((float,), 60.0, low=0.01, high=86400, help="how long sessions arrive", read=values.seconds),
    "session_interval": Param((float,), 15.0, low=0.001, high=86400, help="mean seconds between session arrivals",
                  read=values.seconds),
    "pages_mean": Param((float,), 4.0, low=1, high=1000, help="mean pages per session (geometric)"),
    "files_mean": Param((float,), 3.0, low=1, high=1000, help="mean files per page (geometric)"),
    "think_median": Param((float,), 15.0, low=0, high=86400, help="median think time between pages, s",
                  read=values.seconds),
    "request_small": Param((float,), 250.0, low=8, high=1 << 24, help="the small requests' mode, bytes",
                  read=values.byte_count),
    "request_large": Param((float,), 1024.0, low=8, high=1 << 24, help="the large requests' mode, bytes",
                  read=values.byte_count),
    "request_large_fraction": Param((float,), 0.15 / 0.85, low=0, high=1, help="share of large requests",
                  read=values.parse_probability),
    "request_spread": Param((float,), 0.1, low=0, high=2, help="sigma of each log-normal request mode"),
    "reply_median": Param((float,), 1700.0, low=1, high=1 << 40, help="median reply, bytes", read=values.byte_count),
    "reply_mean": Param((float,), 9000.0, low=1, high=1 << 40, help="mean reply (after the cap), bytes",
                  read=values.byte_count),
    "reply_cap": Param((float,), 1e6, low=1, high=1 << 40, help="largest reply, bytes", read=values.byte_count),
    "connection": Param((str,), "session", choices=("session", "page", "file"), help="what one connection carries"),
    "drain_seconds": Param((float,), 30.0, low=0, high=86400, help="time allowed for pages in flight at the end",
                  read=values.seconds),
    "port": Param((int,), None, low=1, high=65535, help="the server's port", read=values.port),
}


def check(params):
    Model(params)  # solves the reply distribution, or says why it cannot


def duration(params):
    return params["seconds"] + 2.0


TIMES = ("file_ms", "page_ms")  # per file and per page: samples, and metrics of each STAT
STATS = ("p50", "p90", "p99", "mean")
SAMPLES = (*TIMES, "request_bytes", "reply_bytes", "files_per_page")


def outputs(params):
    """(metric names, sample names) of run_client (registry.outputs)."""
    return {"sessions", "pages", "files", "unfinished_files"} | {f"{t}_{s}" for t in TIMES for s in STATS}, set(SAMPLES)


# ---------------------------------------------------------------------------------------------------------
# The model


def _pareto_capped_mean(alpha, xm, cap):
    if abs(alpha - 1) < 1e-9:
        return xm * (1 + math.log(cap / xm))
    return xm + xm * (1 - (xm / cap) ** (alpha - 1)) / (alpha - 1)


def solve_pareto(median, mean, cap):
    """(alpha, xm) of a Pareto whose values capped at CAP have MEDIAN and MEAN."""
    if not median < mean < cap:
        raise ConfigError(f"[workload] the reply distribution needs reply_median < reply_mean < reply_cap "
                          f"(got {median:g}, {mean:g}, {cap:g})", ("workload", "reply_mean"))

    def mean_of(alpha):
        return _pareto_capped_mean(alpha, median / 2 ** (1 / alpha), cap)

    lo, hi = math.log(0.01), math.log(100.0)  # mean_of falls from ~cap to ~median as alpha grows
    if not mean_of(math.exp(hi)) < mean < mean_of(math.exp(lo)):
        raise ConfigError(f"[workload] no Pareto distribution capped at {cap:g} has median {median:g} and "
                          f"mean {mean:g}", ("workload", "reply_mean"))
    for _ in range(200):
        mid = (lo + hi) / 2
        if mean_of(math.exp(mid)) > mean:
            lo = mid
        else:
            hi = mid
    alpha = math.exp((lo + hi) / 2)
    return alpha, median / 2 ** (1 / alpha)


def _phi(z):
    return 0.5 * math.erfc(-z / math.sqrt(2))


class Model:
    """IPB's distributions, with their CDFs (for the tests)."""

    def __init__(self, params):
        self.p = params
        self.alpha, self.xm = solve_pareto(params["reply_median"], params["reply_mean"], params["reply_cap"])
        self.cap = int(round(params["reply_cap"]))

    # Draws
    def session_gap(self, rng):
        return rng.expovariate(1.0 / self.p["session_interval"])

    @staticmethod
    def _geometric(rng, mean):
        if mean <= 1:
            return 1
        q = 1 - 1 / mean  # P(N > k) = q^k
        return 1 + int(math.log(1.0 - rng.random()) / math.log(q))

    def pages(self, rng):
        return self._geometric(rng, self.p["pages_mean"])

    def files(self, rng):
        return self._geometric(rng, self.p["files_mean"])

    def think(self, rng):
        m = self.p["think_median"]
        return rng.expovariate(math.log(2) / m) if m > 0 else 0.0

    def request(self, rng):
        mode = self.p["request_large"] if rng.random() < self.p["request_large_fraction"] else self.p["request_small"]
        x = mode * math.exp(self.p["request_spread"] * rng.gauss(0, 1))
        return max(HEADER.size, int(round(x)))

    def reply(self, rng):
        x = self.xm * (1.0 - rng.random()) ** (-1 / self.alpha)
        return max(1, min(self.cap, int(round(x))))

    # CDFs: P(X <= x) and, for integer-valued draws, P(X < x)
    @staticmethod
    def geometric_cdf(mean, k):
        if k < 1:
            return 0.0
        return 1.0 - (1 - 1 / mean) ** math.floor(k) if mean > 1 else 1.0

    def request_continuous_cdf(self, x):
        if x <= 0:
            return 0.0
        f, s = self.p["request_large_fraction"], self.p["request_spread"]

        def mode_cdf(m):
            return (1.0 if x >= m else 0.0) if s == 0 else _phi(math.log(x / m) / s)

        return (1 - f) * mode_cdf(self.p["request_small"]) + f * mode_cdf(self.p["request_large"])

    def request_cdf(self, k):  # of the rounded draw, for k >= HEADER.size (the clamp is below any mode)
        return self.request_continuous_cdf(math.floor(k) + 0.5)

    def request_cdf_left(self, k):
        return self.request_continuous_cdf(math.ceil(k) - 0.5)

    def _pareto_cdf(self, x):
        return 0.0 if x < self.xm else 1.0 - (self.xm / x) ** self.alpha

    def reply_cdf(self, k):
        return 1.0 if k >= self.cap else self._pareto_cdf(math.floor(k) + 0.5)

    def reply_cdf_left(self, k):
        return 1.0 if k > self.cap else self._pareto_cdf(math.ceil(k) - 0.5)

    def think_cdf(self, t):
        m = self.p["think_median"]
        return 0.0 if t < 0 else 1.0 - 2 ** (-t / m)

    def gap_cdf(self, t):
        return 0.0 if t < 0 else 1.0 - math.exp(-t / self.p["session_interval"])


# ---------------------------------------------------------------------------------------------------------
# Server: per connection, read a request's header and body, send the reply it asks for, in order.


def handle(sock):
    sock.setsockopt(common.socket.IPPROTO_TCP, common.socket.TCP_NODELAY, 1)  # replies leave as they are written
    reader = sock.makefile("rb")
    while True:
        head = reader.read(HEADER.size)
        if len(head) < HEADER.size:
            return
        qlen, rlen = HEADER.unpack(head)
        if qlen < HEADER.size:  # not a request: the goodbye, or a client that does not speak this protocol
            return (qlen, rlen) == (0, 0)
        rest = qlen - HEADER.size
        if rest and len(reader.read(rest)) < rest:
            return
        common.send_count(sock, rlen)


def serve(params, port, host=None, ready_file=None, once=False):
    common.serve(handle, port, host, ready_file, once)


# ---------------------------------------------------------------------------------------------------------
# Client


class Recorder:
    def __init__(self):
        self.lock = threading.Lock()
        self.file_ms, self.page_ms, self.requests, self.replies, self.files_per_page = [], [], [], [], []
        self.sessions = self.pages = self.unfinished = 0


def _request(sock, q, r):
    sock.sendall(HEADER.pack(q, r) + bytes(q - HEADER.size))


def _read_reply(sock, r):
    if not common.recv_exact(sock, r):
        raise common.RunError("the web server closed a connection before a reply was complete")
    return common.now()


def _page_on(sock, files):
    """IPB's pipelining on one connection: the first request alone, then the rest at once. Returns
    (page start, [(file start, file end)...])."""
    start = common.now()
    _request(sock, *files[0])
    times = [(start, _read_reply(sock, files[0][1]))]
    if len(files) > 1:
        sent = common.now()
        sock.sendall(b"".join(HEADER.pack(q, r) + bytes(q - HEADER.size) for q, r in files[1:]))
        times += [(sent, _read_reply(sock, r)) for _, r in files[1:]]
    return start, times


def _page_per_file(host, port, files):
    start = common.now()
    first, _ = common.connect(host, port, nodelay=True)
    try:
        _request(first, *files[0])
        times = [(start, _read_reply(first, files[0][1]))]
    finally:
        first.close()
    rest = [None] * (len(files) - 1)

    def fetch(i, q, r):
        t = common.now()
        s, _ = common.connect(host, port, nodelay=True)
        try:
            _request(s, q, r)
            rest[i] = (t, _read_reply(s, r))
        finally:
            s.close()

    from .transfer import run_threads

    run_threads([lambda i=i, q=q, r=r: fetch(i, q, r) for i, (q, r) in enumerate(files[1:])])
    return start, times + rest


def _session(model, params, host, port, seed, number, end_at, rec):
    rng = random.Random(f"{seed}/session/{number}")
    pages = model.pages(rng)
    sock = None
    try:
        for i in range(pages):
            if i:
                time.sleep(model.think(rng))
            if common.now() >= end_at:
                return
            files = [(model.request(rng), model.reply(rng)) for _ in range(model.files(rng))]
            with rec.lock:
                rec.unfinished += len(files)
            if params["connection"] == "file":
                start, times = _page_per_file(host, port, files)
            else:
                if sock is None or params["connection"] == "page":
                    if sock:
                        sock.close()
                    sock, _ = common.connect(host, port, nodelay=True)
                start, times = _page_on(sock, files)
            with rec.lock:
                rec.unfinished -= len(files)
                rec.pages += 1
                rec.files_per_page.append(len(files))
                rec.requests += [q for q, _ in files]
                rec.replies += [r for _, r in files]
                rec.file_ms += [(b - a) * 1000 for a, b in times]
                rec.page_ms.append((max(b for _, b in times) - start) * 1000)
    finally:
        if sock:
            sock.close()


def goodbye(host, port):
    """Tells the server the client is done (after every measurement: it costs a connection set-up)."""
    sock, _ = common.connect(host, port)
    try:
        sock.sendall(HEADER.pack(0, 0))
    finally:
        sock.close()


def run_client(params, host, port, seed):
    from .. import stats

    model = Model(params)
    rng = random.Random(f"{seed}/arrivals")
    rec = Recorder()
    t0 = common.now()
    end_at = t0 + params["seconds"]
    threads, errors = [], []
    number = 0
    at = t0 + model.session_gap(rng)
    while at < end_at:
        time.sleep(max(0.0, at - common.now()))

        def session(n=number):
            try:
                _session(model, params, host, port, seed, n, end_at, rec)
            except Exception as e:  # noqa: BLE001 - reported below
                errors.append(e)

        t = threading.Thread(target=session, daemon=True)
        t.start()
        threads.append(t)
        number += 1
        at += model.session_gap(rng)
    time.sleep(max(0.0, end_at - common.now()))
    drain_until = common.now() + params["drain_seconds"]
    for t in threads:
        t.join(max(0.0, drain_until - common.now()))
    if errors:
        raise errors[0]
    goodbye(host, port)
    with rec.lock:
        metrics = {"sessions": number, "pages": rec.pages, "files": len(rec.file_ms), "unfinished_files": rec.unfinished}
        for name, values in (("file_ms", rec.file_ms), ("page_ms", rec.page_ms)):
            if values:
                metrics.update({f"{name}_p50": stats.median(values), f"{name}_p90": stats.percentile(values, 90),
                                f"{name}_p99": stats.percentile(values, 99), f"{name}_mean": stats.mean(values)})
        samples = {"file_ms": rec.file_ms, "page_ms": rec.page_ms, "request_bytes": rec.requests,
                   "reply_bytes": rec.replies, "files_per_page": rec.files_per_page}
    return {"metrics": metrics, "samples": samples, "series": {}}
