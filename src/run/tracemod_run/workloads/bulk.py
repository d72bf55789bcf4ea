"""bulk: TCP transfers of N bytes or T seconds, down (toward the client), up, or both at once, over one or
several flows. Metrics per direction: completion time (start of connect to the receiver's last byte), goodput,
the sender's retransmissions and RTT samples (TCP_INFO's smoothed RTT every sample_ms), minimum RTT, and
Jain's fairness index over the flows.

Protocol: a control connection carries one JSON line each way to set up ({"op": "bulk", ...} / {"ok": true}),
then one per data connection ({"op": "data", "token", "flow", "dir"}) opens it; when the client's ends are done
it sends {"op": "done"} and the server answers with its ends' reports: on the control connection, or, for a
server given --ready-file (tm-run's), in a file beside it ({"report_file": path}), so that a slow emulated link
does not carry them after the measurement. A client is served whole once its report is sent (--once)."""
import json
import os
import threading

from . import common, registry, transfer
from .. import values
from ..errors import ConfigError
from .registry import Param

DEFAULT_PORT = 5301
HEADLINE = ("goodput_mbps", "completion_s", "retransmits", "rtt_ms_p50")
PARAMS = {
    "direction": Param((str,), "down", choices=("down", "up", "both"), help="down, up or both"),
    "seconds": Param((float,), None, low=0.01, high=86400, help="send for this long", read=values.seconds),
    "bytes": Param((int,), None, low=1, high=1 << 50, help="send this many bytes", read=values.byte_count),
    "flows": Param((int,), 1, low=1, high=64, help="parallel connections per direction"),
    "sample_ms": Param((float,), 10.0, low=1, high=10000, help="TCP_INFO and progress sampling interval",
                  read=values.milliseconds),
    "congestion": Param((str,), None, help="the sender's congestion control (TCP_CONGESTION)"),
    "port": Param((int,), None, low=1, high=65535, help="the server's port", read=values.port),
}


def check(params):
    if ("seconds" in params) == ("bytes" in params):
        raise ConfigError("[workload] of kind bulk needs exactly one of 'seconds' and 'bytes'", ("workload",))


def duration(params):
    return params.get("seconds") or 10.0


def directions(params):
    return ("down", "up") if params["direction"] == "both" else (params["direction"],)


def name_suffix(params, direction):
    """What a metric's name ends with for DIRECTION: nothing when PARAMS go one way, "_down" or "_up" for both."""
    return "" if len(directions(params)) == 1 else f"_{direction}"


def outputs(params):
    """(metric names, sample names) that metrics_of reports for PARAMS (registry.outputs)."""
    metrics, samples = set(), set()
    for d in directions(params):
        s = name_suffix(params, d)
        metrics |= {f"{m}{s}" for m in ("goodput_mbps", "completion_s", "bytes", "retransmits", "rtt_ms_p50",
                                         "rtt_ms_p90", "min_rtt_ms")}
        if params["flows"] > 1:
            metrics.add(f"jain_index{s}")
        samples |= {f"rtt_ms{s}", f"flow_goodput_mbps{s}"}
    return metrics, samples


# ---------------------------------------------------------------------------------------------------------
# Server

_sessions = {}
_lock = threading.Lock()
_report_dir = None  # where reports go instead of the control connection (beside the ready file)


class Session:
    def __init__(self, spec):
        self.spec = spec
        self.ends = []  # (flow, dir, Sender|Receiver, thread)
        self.cond = threading.Condition()


def _end(spec, sock, direction, sender_side):
    if sender_side:
        return transfer.Sender(sock, spec.get("bytes"), spec.get("seconds"), spec["sample_ms"], spec.get("congestion"))
    return transfer.Receiver(sock, spec["sample_ms"])


def handle(sock):
    # Unbuffered: the hello line is read byte by byte, so no data after it is taken from a data connection.
    reader = sock.makefile("rb", buffering=0)
    hello = common.recv_json(reader)
    if hello is None:
        return
    if hello.get("op") in ("bulk", "maxrate"):
        return _control(sock, reader, hello)
    if hello.get("op") == "data":
        with _lock:
            session = _sessions.get(hello.get("token"))
        if session is None:
            return False
        end = _end(session.spec, sock, hello["dir"], sender_side=hello["dir"] == "down")
        with session.cond:
            session.ends.append((hello["flow"], hello["dir"], end))
            session.cond.notify_all()
        end.run()
        with session.cond:
            session.cond.notify_all()


def _control(sock, reader, spec):
    session = Session(spec)
    with _lock:
        _sessions[spec["token"]] = session
    try:
        common.send_json(sock, {"ok": True})
        done = common.recv_json(reader)
        if not done or done.get("op") != "done":
            return False
        expected = spec["flows"] * len(spec["dirs"])
        with session.cond:  # every end has connected (the client's are done) and finished
            session.cond.wait_for(lambda: len(session.ends) == expected and all(
                _finished(e) for _, _, e in session.ends), timeout=120)
            reports = [dict(e.report(), flow=f, dir=d) for f, d, e in session.ends]
        if _report_dir:
            path = os.path.join(_report_dir, f"server-report-{spec['token']}.json")
            registry.write_json_atomic(path, {"ends": reports})
            common.send_json(sock, {"report_file": path})
        else:
            common.send_json(sock, {"ends": reports})
        return True
    finally:
        with _lock:
            _sessions.pop(spec["token"], None)


def _finished(end):
    return end.finished


def serve(params, port, host=None, ready_file=None, once=False):
    global _report_dir
    _report_dir = os.path.dirname(os.path.abspath(ready_file)) if ready_file else None
    common.serve(handle, port, host, ready_file, once)


# ---------------------------------------------------------------------------------------------------------
# Client


def transfer_all(params, host, port, op="bulk"):
    """Runs the flows; returns (t0, [report dicts of every end, client's and server's])."""
    token = os.urandom(8).hex()
    dirs = directions(params)
    control, _ = common.connect(host, port)
    reader = control.makefile("rb")
    spec = {k: v for k, v in params.items() if k != "kind"}
    common.send_json(control, dict(spec, op=op, token=token, dirs=list(dirs)))
    if not (common.recv_json(reader) or {}).get("ok"):
        raise common.RunError("the server refused the transfer")
    ends, starts = [], {}

    def flow(k, d):
        starts[(k, d)] = common.now()
        sock, _ = common.connect(host, port)
        common.send_json(sock, {"op": "data", "token": token, "flow": k, "dir": d})
        end = _end(params, sock, d, sender_side=d == "up")
        end.run()
        ends.append(dict(end.report(), flow=k, dir=d))
        sock.close()

    t0 = common.now()
    transfer.run_threads([lambda k=k, d=d: flow(k, d) for d in dirs for k in range(params["flows"])])
    common.send_json(control, {"op": "done"})
    answer = common.recv_json(reader)
    control.close()
    if not answer:
        raise common.RunError("the server closed the control connection without its report")
    if "report_file" in answer:
        with open(answer["report_file"]) as f:
            answer = json.load(f)
        os.unlink(f.name)
    ends += answer["ends"]
    for e in ends:
        e["connect_start"] = starts[(e["flow"], e["dir"])]
    _check_clock(ends, t0)
    return t0, ends


def _check_clock(ends, t0):
    later = common.now()
    for e in ends:
        t = e.get("last_at") or e.get("acked_at")
        if t is not None and not t0 - 1 <= t <= later + 1:
            raise common.RunError("the server's monotonic clock differs from the client's (a time namespace?): "
                                  "transfer times cannot be measured")


def metrics_of(params, t0, ends):
    """Metrics, samples and series from the reports of every end."""
    metrics, samples, series = {}, {}, {}
    dirs = directions(params)
    from .. import stats

    for d in dirs:
        suffix = name_suffix(params, d)
        receivers = [e for e in ends if e["dir"] == d and e["role"] == "receiver"]
        senders = [e for e in ends if e["dir"] == d and e["role"] == "sender"]
        total = sum(e["bytes"] for e in receivers)
        last = max((e["last_at"] or e["connect_start"]) for e in receivers)
        per_flow = [8e-6 * e["bytes"] / max(1e-9, (e["last_at"] or e["connect_start"]) - e["connect_start"])
                    for e in receivers]
        metrics[f"goodput_mbps{suffix}"] = 8e-6 * total / max(1e-9, last - t0)
        metrics[f"completion_s{suffix}"] = last - t0
        metrics[f"bytes{suffix}"] = total
        metrics[f"retransmits{suffix}"] = sum(e["info"]["total_retrans"] or 0 for e in senders)
        rtts = [r for e in senders for _, r in e["rtt"]]
        if rtts:
            metrics[f"rtt_ms_p50{suffix}"] = stats.median(rtts)
            metrics[f"rtt_ms_p90{suffix}"] = stats.percentile(rtts, 90)
        min_rtts = [e["info"]["min_rtt_us"] for e in senders if e["info"].get("min_rtt_us")]
        if min_rtts:
            metrics[f"min_rtt_ms{suffix}"] = min(min_rtts) / 1000.0
        if len(per_flow) > 1:
            metrics[f"jain_index{suffix}"] = stats.jain(per_flow)
        samples[f"rtt_ms{suffix}"] = rtts
        samples[f"flow_goodput_mbps{suffix}"] = per_flow
        series[f"received_bytes{suffix}"] = [[[round(t - t0, 6), b] for t, b in e["progress"]] for e in receivers]
        series[f"rtt_ms{suffix}"] = [[[round(t - t0, 6), r] for t, r in e["rtt"]] for e in senders]
    return metrics, samples, series


def run_client(params, host, port, seed):
    t0, ends = transfer_all(params, host, port)
    metrics, samples, series = metrics_of(params, t0, ends)
    return {"metrics": metrics, "samples": samples, "series": series}
