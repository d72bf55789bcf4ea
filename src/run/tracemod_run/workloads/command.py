"""command: any program as the workload, so an unmodified app can be measured and gated on.

The client is a shell command line (sh -c) run behind the stack with $TM_RUN_SERVER (and $TM_RUN_SERVER6)
naming the server's address; the server, if any, a command line run outside, whose readiness is its TCP
server_port listening. Metrics come from the client's output: each [[workload.metrics]] entry has a name and
either `regex` (the first match's first group, or the whole match) or `json` (a path such as
"end.sum_received.bits_per_second" or "runs[0].time" into the output parsed as JSON, or into its last line that
is JSON), optionally `scale` (a factor) and `source` ("stdout" or "stderr"). elapsed_s, the client's wall time,
is always measured. A client that exits non-zero fails the run; a metric that cannot be found fails it too."""
import json
import math
import os
import re
import signal
import subprocess
import sys
import time

from . import common
from .. import values
from ..errors import ConfigError
from .registry import Param

DEFAULT_PORT = 0
HEADLINE = ("elapsed_s",)
PARAMS = {
    "client": Param((str,), help="the command line to measure, e.g. \"curl -s -o /dev/null http://$TM_RUN_SERVER:8000/\""),
    "server": Param((str,), None, help="a command line to run outside, e.g. \"python3 -m http.server 8000\""),
    "server_port": Param((int,), None, low=1, high=65535, help="the TCP port the server listens on when ready",
                  read=values.port),
    "metrics": Param((list,), [], help="[[workload.metrics]] with name and regex or json"),
    "seconds": Param((float,), 10.0, low=0.001, high=86400, help="expected length of a run (progress, timeout)",
                  read=values.seconds),
}
METRIC_KEYS = {"name", "regex", "json", "scale", "source"}


def check(params):
    names = {"elapsed_s"}
    for i, m in enumerate(params["metrics"]):
        where = f"[[workload.metrics]] {i + 1}"

        def fail(why, key=None):
            raise ConfigError(f"{where}{why}", ("workload", "metrics", i) + ((key,) if key else ()))

        if not isinstance(m, dict) or not isinstance(m.get("name"), str):
            fail(" needs name = \"...\"")
        unknown = set(m) - METRIC_KEYS
        if unknown:
            key = sorted(unknown)[0]
            fail(f": unknown key '{key}' (known: {', '.join(sorted(METRIC_KEYS))})", key)
        if m["name"] in names:
            fail(f": the metric '{m['name']}' is named twice" + (" (elapsed_s is always measured)"
                                                                 if m["name"] == "elapsed_s" else ""), "name")
        names.add(m["name"])
        if ("regex" in m) == ("json" in m):
            fail(f" ('{m['name']}') needs exactly one of regex and json")
        if "regex" in m:
            if not isinstance(m["regex"], str):
                fail(f" ('{m['name']}'): regex must be a string", "regex")
            try:
                re.compile(m["regex"])
            except re.error as e:
                fail(f" ('{m['name']}'): bad regex: {e}", "regex")
        if "json" in m and not isinstance(m["json"], str):
            fail(f" ('{m['name']}'): json must be a string (a path such as \"end.sum.bits_per_second\")", "json")
        if m.get("source", "stdout") not in ("stdout", "stderr"):
            fail(f" ('{m['name']}'): source must be stdout or stderr", "source")
        scale = m.get("scale", 1)
        if not isinstance(scale, (int, float)) or isinstance(scale, bool) or not math.isfinite(scale):
            fail(f" ('{m['name']}'): scale must be a finite number", "scale")
    if params.get("server_port") and not params.get("server"):
        raise ConfigError("[workload] server_port needs a server", ("workload", "server_port"))


def duration(params):
    return params["seconds"]


def outputs(params):
    """(metric names, sample names) of run_client (registry.outputs): elapsed_s and the [[workload.metrics]]."""
    return {"elapsed_s"} | {m["name"] for m in params["metrics"]}, set()


# ---------------------------------------------------------------------------------------------------------
# Metrics from output


def json_path(doc, path):
    """DOC[path] for a path like "a.b[0].c"."""
    value = doc
    for name, index in re.findall(r"([^.\[\]]+)|\[(\d+)\]", path):
        try:
            value = value[int(index)] if index else value[name]
        except (KeyError, IndexError, TypeError):
            raise KeyError(path) from None
    return value


def _json_documents(text):
    try:
        yield json.loads(text)
    except json.JSONDecodeError:
        pass
    for line in reversed(text.splitlines()):
        try:
            yield json.loads(line)
        except json.JSONDecodeError:
            continue


def extract(spec, stdout, stderr):
    """The number SPEC names in the output; raises RunError if it is not there."""
    text = stdout if spec.get("source", "stdout") == "stdout" else stderr
    if "regex" in spec:
        m = re.search(spec["regex"], text, re.M)
        if not m:
            raise common.RunError(f"metric '{spec['name']}': /{spec['regex']}/ matches nothing in the client's "
                                  f"{spec.get('source', 'stdout')}")
        raw = m.group(1) if m.groups() else m.group(0)
    else:
        for doc in _json_documents(text):
            try:
                raw = json_path(doc, spec["json"])
                break
            except KeyError:
                continue
        else:
            raise common.RunError(f"metric '{spec['name']}': no JSON in the client's {spec.get('source', 'stdout')} "
                                  f"has '{spec['json']}'")
    try:
        return float(raw) * spec.get("scale", 1)
    except (TypeError, ValueError):
        raise common.RunError(f"metric '{spec['name']}': '{raw}' is not a number") from None


# ---------------------------------------------------------------------------------------------------------
# Client and server


def run_client(params, host, port, seed):
    env = dict(os.environ, TM_RUN_SERVER=host, TM_RUN_SEED=str(seed))
    start = common.now()
    proc = subprocess.run(["sh", "-c", params["client"]], env=env, capture_output=True, text=True, errors="replace")
    elapsed = common.now() - start
    sys.stderr.write(proc.stderr)
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["(nothing on stderr)"])[-1]
        raise common.RunError(f"the client exited with status {proc.returncode}: {last}")
    metrics = {"elapsed_s": elapsed}
    for spec in params["metrics"]:
        metrics[spec["name"]] = extract(spec, proc.stdout, proc.stderr)
    return {"metrics": metrics, "samples": {}, "series": {}, "stdout": proc.stdout[-65536:]}


def listening(port):
    """True if a TCP socket listens on PORT in this network namespace (/proc/net/tcp and tcp6)."""
    for name in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(name) as f:
                next(f)
                for line in f:
                    fields = line.split()
                    if fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port:
                        return True
        except OSError:
            continue
    return False


def _fails_within(proc, seconds):
    try:
        proc.wait(timeout=seconds)
    except subprocess.TimeoutExpired:
        return False
    return proc.returncode != 0


def serve(params, port, host=None, ready_file=None, once=False):
    if not params.get("server"):
        raise common.UsageError("--server needs --param server='COMMAND'")
    if once:
        raise common.UsageError("--once: the command workload's server is your command, which decides when it ends")
    proc = subprocess.Popen(["sh", "-c", params["server"]], start_new_session=True)
    stopped = []

    def stop(*_):
        stopped.append(1)
        try:
            os.killpg(proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    wanted = params.get("server_port")
    deadline = common.now() + 15
    if not wanted and _fails_within(proc, 0.05):  # a command that cannot start (a typo) ends at once
        raise common.RunError(f"the server exited with status {proc.returncode} at once (and without server_port "
                              "nothing says when it is ready)")
    while wanted and not listening(wanted):
        if proc.poll() is not None:
            raise common.RunError(f"the server exited with status {proc.returncode} before listening on port {wanted}")
        if common.now() > deadline:
            stop()
            raise common.RunError(f"the server did not listen on port {wanted} within 15 s")
        time.sleep(0.005)
    common.mark_ready(ready_file)
    try:
        proc.wait()
        if proc.returncode != 0 and not stopped:  # tm-run's status is the server's: the client checks it
            raise common.RunError(f"the server exited with status {proc.returncode}")
    finally:
        stop()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
