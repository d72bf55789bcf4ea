"""Running an experiment into a results directory: resume, shards, parallel runs, collection.

    DIR/manifest.json          the experiment, tracemod version, host, every run (see results.write_manifest)
    DIR/experiment.toml        the experiment file as given
    DIR/runs/NAME/             one run: run.log, stack.err, client.json, server.err, server.status (once the
                               server has exited: its exit status), *-N.log.gz (link logs),
                               result.json (written last, by rename: a run is finished only when it exists)

A run that fails leaves failed.json instead and is retried when the same command runs again. A run's stack is
started in a session of its own (so Ctrl-C reaches tm-run, which then stops every run it started) under
setpriv --pdeathsig, so even a tm-run killed with SIGKILL leaves no shell behind.
"""
import datetime
import gzip
import json
import os
import platform
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait

from . import VERSION, experiment, results, shard, stack
from .errors import RunError, UsageError
from .progress import Progress
from .results import write_json
from .workloads import registry

GRACE = 5.0  # seconds between SIGTERM and SIGKILL when a run is stopped


def now_iso():
    """UTC, to the microsecond: runs run in parallel (--jobs) can be told apart and their overlap seen."""
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="microseconds")


def read_json(path):
    with open(path) as f:
        return json.load(f)


def finished(rundir):
    """The run's result, or None if it has none (missing, or cut off before its rename)."""
    try:
        return read_json(os.path.join(rundir, "result.json"))
    except (OSError, json.JSONDecodeError):
        return None


class Interrupted(Exception):
    pass


class Runner:
    def __init__(self, exp, outdir, jobs=1, quiet=False, shard=None, argv=None):
        self.exp, self.jobs, self.quiet, self.shard = exp, jobs, quiet, shard
        self.outdir = os.path.abspath(outdir)  # the shells run in the experiment's directory
        self.argv = argv or sys.argv
        self.active = {}  # run id -> Popen
        self.lock = threading.Lock()
        self.stopping = False
        self.known_traces = {}
        self.progress = None

    # -----------------------------------------------------------------------------------------------------
    # The directory

    def lock_directory(self):
        """Holds DIR/.lock for as long as this tm-run lives: two tm-runs on one directory would undo each other's
        runs."""
        import fcntl

        try:
            self.lock_fd = os.open(os.path.join(self.outdir, ".lock"), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError as e:
            raise UsageError(f"cannot write in {self.outdir}: {e.strerror}: use another -o") from None
        try:
            fcntl.flock(self.lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise UsageError(f"{self.outdir} is in use by another tm-run: wait for it, or use another -o") from None

    def release(self):
        if getattr(self, "lock_fd", None) is not None:
            os.close(self.lock_fd)
            self.lock_fd = None

    def prepare(self):
        results.make_directory(self.outdir)
        self.lock_directory()
        try:
            self._prepare()
        except OSError as e:
            self.release()
            raise UsageError(f"cannot write in {self.outdir}: {e.strerror or e}: use another -o") from None
        except BaseException:
            self.release()
            raise

    def _prepare(self):
        manifest_path = os.path.join(self.outdir, "manifest.json")
        if os.path.exists(manifest_path):
            manifest = read_json(manifest_path)
            results.check_same_experiment(manifest, self.exp, self.outdir)
            if manifest.get("shard") != (list(self.shard) if self.shard else None):
                raise UsageError(f"{self.outdir} holds {results.shard_text(manifest.get('shard'))}, not "
                                 f"{results.shard_text(self.shard)}: use another -o")
        elif os.path.isdir(self.outdir) and set(os.listdir(self.outdir)) - {".lock"}:
            raise UsageError(f"{self.outdir} exists and is not a tm-run results directory: use another -o")
        else:
            os.makedirs(os.path.join(self.outdir, "runs"), exist_ok=True)
            shutil.copyfile(self.exp.path, os.path.join(self.outdir, "experiment.toml"))
            manifest = results.new_manifest(self.exp, self.shard)
        manifest.setdefault("sessions", []).append(
            {"started": now_iso(), "argv": self.argv, "host": platform.node(), "jobs": self.jobs,
             "user": os.environ.get("USER", str(os.getuid()))})
        write_json(manifest_path, manifest)
        for run in self.exp.runs():
            res = finished(self.rundir(run))
            if res:
                self.known_traces.update(res.get("traces", {}))

    def check_stacks(self):
        """Plans one run of every configuration before any starts (and before the results directory is made), so
        that a missing tool, a shell without --outside, or an [[assert]] or [plot] naming a metric no run reports
        is one error at once rather than a failure per run or a message after all of them."""
        seen, links = set(), set()
        for run in self.exp.runs():
            if run.config.name not in seen:
                seen.add(run.config.name)
                plan = stack.plan_run(self.exp, run, self.rundir(run))
                links |= {name for level in plan.levels for d in level.logs for name in link_metric_names(level.index, d)}
        experiment.check_metrics(self.exp, links)

    def rundir(self, run):
        return os.path.join(self.outdir, "runs", run.dirname)

    def my_runs(self):
        runs = self.exp.runs()
        return shard.select(runs, *self.shard) if self.shard else runs

    # -----------------------------------------------------------------------------------------------------
    # One run

    def execute(self, run, rundir=None, record=True):
        rundir = rundir or self.rundir(run)
        if os.path.exists(rundir):
            shutil.rmtree(rundir)
        os.makedirs(rundir)
        os.chmod(rundir, 0o755)
        plan = stack.plan_run(self.exp, run, rundir)
        self._check_traces(plan)
        started, wall0 = now_iso(), time.monotonic()
        with open(os.path.join(rundir, "run.log"), "w") as log:
            log.write(f"# tm-run {VERSION}: {shlex.join(self.argv)}\n# run {run.id}, seed {run.seed}, "
                      f"workload seed {plan.workload_seed}\n# {shlex.join(plan.argv)}\n")
        status = self._spawn(run, plan, rundir)
        wall, ended = time.monotonic() - wall0, now_iso()
        error = self._failure(status, rundir)
        client = None if error else self._client_result(rundir)
        if client is None and not error:
            error = "the workload client wrote no result"
        result = {"run": run.id, "config": run.config.name, "values": run.config.values,
                  "replication": run.replication, "seed": run.seed, "workload_seed": plan.workload_seed,
                  "shell_seeds": {str(level.index): level.seed for level in plan.levels if level.seed is not None},
                  "argv": plan.argv, "server": plan.server, "traces": plan.traces,
                  "version": VERSION, "started": started, "ended": ended, "wall_s": wall, "exit_status": status}
        if error:
            result["error"] = error
            write_json(os.path.join(rundir, "failed.json"), result)
            return result
        links, link_metrics = self._collect_links(plan)
        result.update(workload=plan.workload, metrics=dict(client["metrics"], **link_metrics),
                      samples=client.get("samples", {}), series=client.get("series", {}), links=links,
                      client_elapsed_s=client.get("elapsed_s"))
        if client.get("loads"):
            result["loads"] = client["loads"]  # the browser workload's page loads, a row each in results.csv
        result["collected_s"] = time.monotonic() - wall0
        result["overhead_s"] = result["collected_s"] - (client.get("elapsed_s") or 0.0)
        if record:
            write_json(os.path.join(rundir, "result.json"), result)
        return result

    def _check_traces(self, plan):
        with self.lock:
            for path, digest in plan.traces.items():
                if self.known_traces.setdefault(path, digest) != digest:
                    raise UsageError(f"{path} changed since earlier runs in {self.outdir} (SHA-256 "
                                     f"{self.known_traces[path][:12]}... then, {digest[:12]}... now): "
                                     "restore it or use another -o")

    def _spawn(self, run, plan, rundir):
        argv = plan.argv
        setpriv = shutil.which("setpriv")
        if setpriv:
            argv = [setpriv, "--pdeathsig", "TERM", "--"] + argv
        timeout = self.exp.timeout or 3 * registry.duration(plan.workload) + 60
        with open(os.path.join(rundir, "stack.out"), "wb") as out, open(os.path.join(rundir, "stack.err"), "wb") as err:
            with self.lock:
                if self.stopping:
                    raise Interrupted()
                proc = subprocess.Popen(argv, cwd=self.exp.directory, env=stack.environment(), stdout=out,
                                        stderr=err, stdin=subprocess.DEVNULL, start_new_session=True)
                self.active[run.id] = proc
            try:
                return proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                stop(proc)
                with open(os.path.join(rundir, "stack.err"), "a") as e:
                    e.write(f"tm-run: the run did not end within its timeout of {timeout:g} s: stopped\n")
                return "timeout"
            finally:
                with self.lock:
                    self.active.pop(run.id, None)

    def _failure(self, status, rundir):
        """None for a run that ended well, else one line: the last error a tool or the client printed."""
        if status == 0:
            return None
        lines = [l.strip() for l in _tail(os.path.join(rundir, "stack.err")) if l.strip()]
        said = [l for l in lines if l.startswith(("tm-", "tm-run")) and not l.startswith("tm-run workload:")
                and ": " in l and not l.startswith("Try ")]
        own = [l for l in said if l.startswith("tm-run: ")]  # the client's: what a shell adds is a consequence
        last = (own or said or lines or ["(no message)"])[-1]
        if status == "timeout":
            return last
        if status == 2 and any(l.startswith("usage: tm-") for l in lines):
            return f"usage: {last}"
        return f"exit status {status}: {last}"

    @staticmethod
    def _client_result(rundir):
        try:
            return read_json(os.path.join(rundir, "client.json"))
        except (OSError, json.JSONDecodeError):
            return None

    def _collect_links(self, plan):
        links, metrics = [], {}
        graph = stack.find_tool("tm-graph")
        for level in plan.levels:
            for direction, path in level.logs.items():
                entry = {"level": level.index, "tool": level.tool, "direction": direction,
                         "log": os.path.basename(path) + ".gz"}
                if not os.path.exists(path):
                    entry["error"] = "no log was written"
                    links.append(entry)
                    continue
                out = subprocess.run([graph, path, "--json", "--bin", "100"], capture_output=True, text=True)
                if out.returncode == 0:
                    entry["graph"] = json.loads(out.stdout)
                    metrics.update(link_metrics(level.index, direction, entry["graph"]))
                else:
                    entry["error"] = out.stderr.strip()
                with open(path, "rb") as src, gzip.open(path + ".gz", "wb", compresslevel=3) as dst:
                    shutil.copyfileobj(src, dst, 1 << 20)
                os.unlink(path)
                links.append(entry)
        return links, metrics

    # -----------------------------------------------------------------------------------------------------
    # All runs

    def stop_all(self):
        with self.lock:
            self.stopping = True
            procs = list(self.active.values())
        for proc in procs:
            stop(proc)

    def run_all(self):
        """Runs the pending runs of this share; returns (finished now, failed [(run, error)], skipped)."""
        self.check_stacks()
        self.prepare()
        mine = self.my_runs()
        pending = [r for r in mine if not finished(self.rundir(r))]
        skipped = len(mine) - len(pending)
        expected = registry.duration(self.exp.workload) + 1.0
        if self.jobs > 1 and pending:
            print(f"tm-run: {self.jobs} runs at once share this machine's CPU and disturb each other's timing",
                  file=sys.stderr)
        if skipped and not self.quiet:
            print(f"tm-run: {skipped} of {len(mine)} runs already finished in {self.outdir}", file=sys.stderr)
        self.progress = Progress(len(pending), self.jobs, expected, self.quiet)
        failed, done = [], 0
        # Signals only set a flag, read by the loop below: an exception thrown into a waiting thread pool could
        # leave it waiting for runs nobody stops any more.
        self.interrupted = threading.Event()
        watched = [s for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP) if signal.getsignal(s) != signal.SIG_IGN]
        previous = {s: signal.signal(s, lambda *_: self.interrupted.set()) for s in watched}
        try:
            if self.exp.warmup and pending:
                for _ in self._drive([pending[0]] * self.exp.warmup, self._warmup):
                    pass  # results discarded
            for run, result in self._drive(pending, self._one):
                if "error" not in result:
                    done += 1
                    continue
                failed.append((run, result["error"]))
                if _usage_error(result):
                    self.stop_all()
                    raise UsageError(f"{run.id}: a shell refused its options: {result['error']}")
        except Interrupted:
            finished_now = sum(1 for r in pending if finished(self.rundir(r)))
            raise Interrupted(f"interrupted: {finished_now} runs finished now, {len(pending) - finished_now} left; "
                              "run the same command again to resume") from None
        finally:
            self.progress.close()
            for s, h in previous.items():
                signal.signal(s, h)
        return done, failed, skipped

    def _drive(self, items, work):
        """Yields (item, work(item)) for each item as they finish, at most `jobs` at once; on a signal, stops
        every run and raises Interrupted once the workers have returned."""
        with ThreadPoolExecutor(max_workers=self.jobs) as pool:
            futures, queue, number = {}, list(items), 0
            while queue or futures:
                if self.interrupted.is_set():
                    self.stop_all()
                    wait(list(futures))
                    raise Interrupted()
                while queue and len(futures) < self.jobs:
                    number += 1
                    item = queue.pop(0)
                    futures[pool.submit(work, item, number)] = item
                ready, _ = wait(list(futures), timeout=0.2, return_when=FIRST_COMPLETED)
                for f in ready:
                    yield futures.pop(f), f.result()

    def _one(self, run, number=None):
        self.progress.start(run.id)
        try:
            result = self.execute(run)
        except Interrupted:
            result = {"error": "interrupted"}
        except (UsageError, RunError, OSError) as e:
            result = {"error": str(e)}
        ok = "error" not in result
        if not ok and not self.stopping and not _usage_error(result):
            self.progress.message(f"tm-run: run {run.id} failed: {result['error']}")
        elif ok and not self.quiet:
            heads = [f"{m} {result['metrics'][m]:.4g}" for m in registry.headline(self.exp.workload)
                     if isinstance(result["metrics"].get(m), (int, float))]
            self.progress.message(f"run {run.id} (seed {run.seed}, {result['wall_s']:.1f} s): " + ", ".join(heads))
        self.progress.finish(run.id, ok)
        return result

    def _warmup(self, run, number):
        rundir = os.path.join(self.outdir, "warmup", f"{run.dirname}.w{number}")
        self.progress.message(f"tm-run: warm-up run {number} of {self.exp.warmup} ({run.config.name})")
        try:
            return self.execute(run, rundir=rundir, record=False)
        except (Interrupted, UsageError, RunError, OSError) as e:
            return {"error": str(e)}


def _usage_error(result):
    return result.get("error", "").startswith("usage: ")


def _tail(path, limit=65536):
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - limit))
            return f.read().decode(errors="replace").splitlines()
    except OSError:
        return []


def stop(proc):
    """SIGTERM to the run's process group (the outermost shell passes it on), SIGKILL after GRACE seconds."""
    for sig, grace in ((signal.SIGTERM, GRACE), (signal.SIGKILL, None)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=grace)
            return
        except subprocess.TimeoutExpired:
            continue


def _link_prefix(level, direction):
    return f"link{level}_{direction[:-4] if direction.endswith('link') else direction}_"


def link_metric_names(level, direction):
    """What link_metrics() may report for the log of DIRECTION at LEVEL."""
    return [_link_prefix(level, direction) + q for q in ("throughput_mbps", "capacity_mbps", "drops", "delay_ms_p50",
                                                         "delay_ms_p95")]


def link_metrics(level, direction, graph):
    """A link log's summary as run metrics: link<level>_<up|down>_<quantity>."""
    prefix = _link_prefix(level, direction)
    out = {prefix + "throughput_mbps": graph["throughput_mbps"], prefix + "capacity_mbps": graph["capacity_mbps"],
           prefix + "drops": graph["drops"]["packets"]}
    if graph.get("delay_ms"):
        out[prefix + "delay_ms_p50"] = graph["delay_ms"]["p50"]
        out[prefix + "delay_ms_p95"] = graph["delay_ms"]["p95"]
    return out
