"""reqrep: request/reply exchanges over one TCP connection, as the Mowgli project's GSM/NMT measurements: for
each (request, reply) size pair, the round-trip times' percentiles and the fraction of outliers (beyond
outlier_factor times the pair's median); and the time to set up a connection (connect(): SYN to SYN-ACK),
measured over `connects` fresh connections. The pairs' exchanges are interleaved in a seeded random order, so
drift in the path touches every pair alike. Both ends set TCP_NODELAY.

Protocol: {"op": "reqrep", "sequence": [[q, r]...]} then, per exchange, q bytes up and r bytes down. A client
is served whole when its sequence is (--once); its set-up probes, connections that send nothing, are not."""
import random

from . import common
from .. import values
from ..errors import ConfigError
from .registry import Param

DEFAULT_PORT = 5302
GSM_PAIRS = [[1, 1], [1, 1024], [1, 2048], [1024, 1], [2048, 1]]
HEADLINE = ("connect_ms_p50",)
PARAMS = {
    "pairs": Param((list,), GSM_PAIRS, help="[[request bytes, reply bytes], ...] (numbers or sizes: \"2KiB\")"),
    "count": Param((int,), 50, low=1, high=1000000, help="exchanges per pair"),
    "interval_ms": Param((float,), 0.0, low=0, high=60000, help="pause between exchanges", read=values.milliseconds),
    "outlier_factor": Param((float,), 2.0, low=1, high=1000, help="an RTT beyond this times the median is an outlier"),
    "connects": Param((int,), 10, low=0, high=100000, help="connection set-ups to time"),
    "port": Param((int,), None, low=1, high=65535, help="the server's port", read=values.port),
}


def _size(x):
    """A size of a pair: a number of bytes, or a string read as the tools read sizes ("2KiB"); None if bad."""
    if not isinstance(x, str):
        return x
    try:
        return values.byte_count(x)
    except common.UsageError:
        return None


def check(params):
    pairs = params["pairs"] = [[_size(x) for x in p] if isinstance(p, list) else p for p in params["pairs"]]
    ok = pairs and all(isinstance(p, list) and len(p) == 2 and all(
        isinstance(x, int) and not isinstance(x, bool) and 1 <= x <= 1 << 30 for x in p) for p in pairs)
    if not ok:
        raise ConfigError("[workload] 'pairs' must be a non-empty array of [request bytes, reply bytes], "
                          "each from 1 to 2^30", ("workload", "pairs"))
    if len({tuple(p) for p in pairs}) != len(pairs):
        raise ConfigError("[workload] 'pairs' names a pair twice", ("workload", "pairs"))


PERCENTILES = (50, 90, 95, 99)  # of each pair's RTTs


def outputs(params):
    """(metric names, sample names) of run_client (registry.outputs)."""
    labels = [label(p) for p in params["pairs"]]
    metrics = {f"{m}_{name}" for name in labels
               for m in [f"rtt_ms_p{q}" for q in PERCENTILES] + ["rtt_ms_min", "rtt_ms_max", "outliers"]}
    samples = {f"rtt_ms_{name}" for name in labels}
    if params["connects"]:
        metrics |= {"connect_ms_p50", "connect_ms_p90", "connect_ms_max"}
        samples.add("connect_ms")
    return metrics, samples


def duration(params):
    return 1.0 + len(params["pairs"]) * params["count"] * (0.1 + params["interval_ms"] / 1000) + params["connects"] * 0.1


def handle(sock):
    sock.setsockopt(common.socket.IPPROTO_TCP, common.socket.TCP_NODELAY, 1)
    reader = sock.makefile("rb")
    hello = common.recv_json(reader)
    if not hello or hello.get("op") != "reqrep":
        return False  # a connection set-up probe
    common.send_json(sock, {"ok": True})
    buf = bytearray(1 << 16)
    for q, r in hello["sequence"]:
        if not _read(reader, q, buf):
            return False
        common.send_count(sock, r)
    return True


def _read(reader, n, buf):
    view = memoryview(buf)
    while n:
        got = reader.readinto(view[: min(n, len(view))])
        if not got:
            return False
        n -= got
    return True


def serve(params, port, host=None, ready_file=None, once=False):
    common.serve(handle, port, host, ready_file, once)


def label(pair):
    return f"{pair[0]}x{pair[1]}"


def run_client(params, host, port, seed):
    from .. import stats

    connect_ms = []
    for _ in range(params["connects"]):
        s, took = common.connect(host, port, nodelay=True)
        connect_ms.append(took * 1000)
        s.close()
    sequence = [p for p in params["pairs"] for _ in range(params["count"])]
    random.Random(seed).shuffle(sequence)
    sock, _ = common.connect(host, port, nodelay=True)
    common.send_json(sock, {"op": "reqrep", "sequence": sequence})
    reader = sock.makefile("rb")
    if not (common.recv_json(reader) or {}).get("ok"):
        raise common.RunError("the server refused the exchanges")
    rtts = {label(p): [] for p in params["pairs"]}
    buf = bytearray(1 << 16)
    pause = params["interval_ms"] / 1000
    for q, r in sequence:
        start = common.now()
        common.send_count(sock, q)
        if not _read(reader, r, buf):
            raise common.RunError("the server closed the connection in the middle of the exchanges")
        rtts[label((q, r))].append((common.now() - start) * 1000)
        if pause:
            common.time.sleep(pause)
    sock.close()
    metrics, samples = {}, {}
    if connect_ms:
        metrics.update(connect_ms_p50=stats.median(connect_ms), connect_ms_p90=stats.percentile(connect_ms, 90),
                       connect_ms_max=max(connect_ms))
        samples["connect_ms"] = connect_ms
    for name, values in rtts.items():
        m = stats.median(values)
        for q in PERCENTILES:
            metrics[f"rtt_ms_p{q}_{name}"] = stats.percentile(values, q)
        metrics[f"rtt_ms_min_{name}"] = min(values)
        metrics[f"rtt_ms_max_{name}"] = max(values)
        metrics[f"outliers_{name}"] = sum(v > params["outlier_factor"] * m for v in values) / len(values)
        samples[f"rtt_ms_{name}"] = values
    return {"metrics": metrics, "samples": samples, "series": {}}
