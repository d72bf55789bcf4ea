"""maxrate: a bulk transfer sampled over time, and its maximum sustainable rate estimated as in the Mowgli
project's GSM/NMT measurements: with b_i the bytes the receiving application has read by time t_i, the median
over all pairs i < j of r_ij = (b_j - b_i) / (t_j - t_i), robust to stalls and to slow start.

maxrate_mbps counts application bytes (as the paper); maxrate_wire_mbps scales it by the sender's path MTU over
its MSS (TCP_INFO), i.e. counts whole IP packets as a link's rate does."""
from . import bulk, common
from .. import values
from .registry import Param

DEFAULT_PORT = bulk.DEFAULT_PORT
HEADLINE = ("maxrate_mbps", "maxrate_wire_mbps", "goodput_mbps")
PARAMS = {
    "direction": Param((str,), "down", choices=("down", "up"), help="down or up"),
    "seconds": Param((float,), 10.0, low=0.1, high=86400, help="length of the transfer", read=values.seconds),
    "sample_ms": Param((float,), 10.0, low=1, high=10000, help="receiver progress sampling interval",
                  read=values.milliseconds),
    "congestion": Param((str,), None, help="the sender's congestion control (TCP_CONGESTION)"),
    "port": Param((int,), None, low=1, high=65535, help="the server's port", read=values.port),
}


def duration(params):
    return params["seconds"]


def outputs(params):
    """(metric names, sample names) of run_client (registry.outputs): bulk's, and the two rates."""
    metrics, samples = bulk.outputs(dict(params, flows=1))
    return metrics | {"maxrate_mbps", "maxrate_wire_mbps"}, samples


serve = bulk.serve


def estimate(progress):
    """Bytes per second from [(t, cumulative bytes)...]."""
    from .. import stats

    return stats.pairwise_rate_median([t for t, _ in progress], [b for _, b in progress])


def run_client(params, host, port, seed):
    spec = dict(params, flows=1)
    t0, ends = bulk.transfer_all(spec, host, port, op="maxrate")
    metrics, samples, series = bulk.metrics_of(spec, t0, ends)
    receiver = next(e for e in ends if e["role"] == "receiver")
    sender = next(e for e in ends if e["role"] == "sender")
    if len(receiver["progress"]) < 2:
        raise common.RunError("the receiver got too little data to estimate a rate")
    rate = estimate(receiver["progress"])
    metrics["maxrate_mbps"] = 8e-6 * rate
    info = sender["info"]
    if info.get("pmtu") and info.get("snd_mss"):
        metrics["maxrate_wire_mbps"] = 8e-6 * rate * info["pmtu"] / info["snd_mss"]
    return {"metrics": metrics, "samples": samples, "series": series}
