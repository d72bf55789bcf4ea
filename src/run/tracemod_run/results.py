"""The results of a directory: manifest, rows (results.csv, results.json), summary.md, assertions.

Everything here is rebuilt from the runs' result.json files (never from a live run), so `tm-run report DIR`
gives the same files as the run that made them. Rows: one per run and metric, columns run, one per matrix
name, replication, seed, metric, value. The summary gives, per configuration and metric over its
replications: n, median, p10, p90, mean +- SD and the 95% confidence interval of the mean; and per
configuration the pooled samples (e.g. every file's retrieval time) with n, median, p10, p90 and mean.
"""
import csv
import fnmatch
import json
import os
import platform
import threading

from . import VERSION, stats
from . import plots as plotting  # not "plots": report() has a parameter of that name
from .errors import UsageError


def write_json(path, obj):
    """Writes OBJ to PATH whole or not at all (a temporary file of this process and thread, renamed)."""
    tmp = f"{path}.tmp{os.getpid()}.{threading.get_ident()}"
    with open(tmp, "w") as f:
        json.dump(obj, f, indent=1)
        f.write("\n")
    os.rename(tmp, path)


def make_directory(path):
    """Creates the directory -o names (and its parents), or raises UsageError saying why it cannot."""
    try:
        os.makedirs(path, exist_ok=True)
    except FileExistsError:
        raise UsageError(f"{path} exists and is not a directory: use another -o") from None
    except OSError as e:
        raise UsageError(f"cannot create {path}: {e.strerror}: use another -o") from None


def shard_text(shard):
    return f"shard {shard[0]}/{shard[1]}" if shard else "a whole experiment (no --shard)"


def _cpu():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _versions():
    out = {"python": platform.python_version()}
    for mod in ("numpy", "matplotlib"):
        try:
            out[mod] = __import__(mod).__version__
        except ImportError:
            out[mod] = None
    return out


def new_manifest(exp, shard):
    with open(exp.path, "rb") as f:
        raw = f.read()
    import hashlib

    return {
        "tracemod_version": VERSION,
        "experiment": {"name": exp.name, "file": os.path.abspath(exp.path), "text": exp.text,
                       "hash": exp.hash, "file_sha256": hashlib.sha256(raw).hexdigest()},
        "matrix": [d.name for d in exp.matrix],
        "shard": list(shard) if shard else None,
        "run_order": [r.id for r in exp.runs()],
        "asserts": [dict(a.__dict__) for a in exp.asserts],
        "plot": exp.plot,
        "workload": exp.workload,
        "host": {"kernel": platform.release(), "machine": platform.machine(), "cpu": _cpu(),
                 "cpus": os.cpu_count(), "hostname": platform.node(), **_versions()},
    }


def check_same_experiment(manifest, exp, where):
    theirs = manifest.get("experiment", {})
    if theirs.get("hash") != exp.hash:
        raise UsageError(f"{where} holds results of experiment '{theirs.get('name')}' from "
                         f"{theirs.get('file')}, not of {exp.path} as it is now: use another -o")
    if manifest.get("tracemod_version") != VERSION:
        raise UsageError(f"{where} was made by tracemod {manifest.get('tracemod_version')}, this is {VERSION}: "
                         "use another -o")


def load_manifest(directory):
    path = os.path.join(directory, "manifest.json")
    try:
        with open(path) as f:
            return json.load(f)
    except FileNotFoundError:
        raise UsageError(f"{directory}: not a tm-run results directory (no manifest.json)") from None
    except (OSError, json.JSONDecodeError) as e:
        raise UsageError(f"{path}: unreadable: {e}") from None


def load_results(directory, manifest=None):
    """(finished results in the experiment's run order, failed results)."""
    manifest = manifest or load_manifest(directory)
    runs_dir = os.path.join(directory, "runs")
    done, failed = {}, []
    for name in sorted(os.listdir(runs_dir)) if os.path.isdir(runs_dir) else []:
        for fname, bucket in (("result.json", done), ("failed.json", None)):
            path = os.path.join(runs_dir, name, fname)
            if os.path.exists(path):
                try:
                    with open(path) as f:
                        r = json.load(f)
                except (OSError, json.JSONDecodeError):
                    continue
                if bucket is None:
                    failed.append(r)
                else:
                    bucket[r["run"]] = r
                break
    order = {rid: i for i, rid in enumerate(manifest.get("run_order", []))}
    return sorted(done.values(), key=lambda r: order.get(r["run"], len(order))), failed


def rows(results, matrix):
    """A row per run and metric; then, for a workload that reports items one by one (the browser's page loads),
    a row per item and field, its metric named ITEM<n>.FIELD (load3.plt_ms, load3.completed, load3.error)."""
    out = []
    for r in results:
        def add(metric, value):
            row = {"run": r["run"]}
            row.update({name: r["values"].get(name, "") for name in matrix})
            row.update(replication=r["replication"], seed=r["seed"], metric=metric, value=value)
            out.append(row)

        for metric, value in r["metrics"].items():
            add(metric, value)
        for n, item in enumerate(r.get("loads", []), 1):
            for field, value in item.items():
                if field != "load" and not isinstance(value, (dict, list)):
                    add(f"load{n}.{field}", "" if value is None else value)
    return out


def configurations(results):
    """{config name: [results]} in first-seen order."""
    out = {}
    for r in results:
        out.setdefault(r["config"], []).append(r)
    return out


def summaries(results):
    """{config: {metric: stats.summarize(...)}} over replications, and {config: {sample: summary}} pooled."""
    per, pooled = {}, {}
    for config, rs in configurations(results).items():
        metrics = {}
        for r in rs:
            for m, v in r["metrics"].items():
                if isinstance(v, (int, float)):
                    metrics.setdefault(m, []).append(v)
        per[config] = {m: stats.summarize(v) for m, v in metrics.items()}
        samples = {}
        for r in rs:
            for name, values in r.get("samples", {}).items():
                samples.setdefault(name, []).extend(values)
        pooled[config] = {n: stats.summarize(v) for n, v in samples.items() if v}
    return per, pooled


def evaluate_assertions(exp_asserts, per):
    """(assertion, configuration or None, verdict, message) per [[assert]] and configuration it covers. The
    verdict is 'ok', 'failure' (a bound missed) or 'error' (not judged: its metric not measured, no
    configuration matching, no run finished: never counted as holding)."""
    out = []
    for a in exp_asserts:
        if not per:
            out.append((a, None, "error", f"assert {a['index']}: not judged: no run finished"))
            continue
        configs = [c for c in per if a["config"] is None or fnmatch.fnmatchcase(c, a["config"])]
        if not configs:
            out.append((a, None, "error", f"assert {a['index']}: no configuration matches '{a['config']}'"))
        for c in configs:
            s = per[c].get(a["metric"])
            if s is None:
                out.append((a, c, "error", f"assert {a['index']}: {a['metric']} was not measured in {c}"))
                continue
            value, missed = s[a["stat"]], None
            if a["below"] is not None and not value < a["below"]:
                missed = f"is not below {a['below']:g}"
            if a["above"] is not None and not value > a["above"]:
                missed = f"is not above {a['above']:g}"
            holds = " and ".join(f"is {k} {a[k]:g}" for k in ("below", "above") if a[k] is not None)
            said = f"{a['metric']} {a['stat']} {value:.6g} {missed or holds} in {c} (n={s['n']})"
            out.append((a, c, "failure" if missed else "ok",
                        f"assert {a['index']} {'failed' if missed else 'holds'}: {said}"))
    return out


def check_assertions(exp_asserts, per):
    """One message per violated [[assert]] and configuration."""
    if not per:
        return []  # no finished run: the failures are reported instead
    return [message for _, _, verdict, message in evaluate_assertions(exp_asserts, per) if verdict != "ok"]


def _fmt(x):
    if x is None:
        return "-"
    if isinstance(x, int) or float(x).is_integer() and abs(x) < 1e15:
        return str(int(x))
    return f"{x:.4g}" if abs(x) >= 1e-3 or x == 0 else f"{x:.3e}"


def summary_markdown(manifest, results, failed, per, pooled, violations):
    exp = manifest["experiment"]
    lines = [f"# {exp['name']}", "",
             f"tracemod {manifest['tracemod_version']}, {manifest['host']['kernel']}, {manifest['host']['cpu']} "
             f"x {manifest['host']['cpus']}; experiment {exp['file']} (hash {exp['hash'][:12]}).",
             f"{len(results)} runs finished" + (f", {len(failed)} failed" if failed else "") +
             f" of {len(manifest.get('run_order', []))}" +
             (f" ({shard_text(manifest['shard'])})" if manifest.get("shard") else "") + ".", ""]
    for config in per:
        lines += [f"## {config}", "", "| metric | n | median | p10 | p90 | mean ± SD | 95% CI of the mean |",
                  "|---|---|---|---|---|---|---|"]
        for m, s in per[config].items():
            ci = f"{_fmt(s['ci95'][0])} – {_fmt(s['ci95'][1])}" if s["ci95"] else "-"
            lines.append(f"| {m} | {s['n']} | {_fmt(s['median'])} | {_fmt(s['p10'])} | {_fmt(s['p90'])} | "
                         f"{_fmt(s['mean'])} ± {_fmt(s['sd'])} | {ci} |")
        lines += loads_markdown(configurations(results).get(config, []))
        if pooled.get(config):
            lines += ["", "Samples pooled over the replications:", "",
                      "| sample | n | median | p10 | p90 | mean |", "|---|---|---|---|---|---|"]
            for name, s in pooled[config].items():
                lines.append(f"| {name} | {s['n']} | {_fmt(s['median'])} | {_fmt(s['p10'])} | {_fmt(s['p90'])} | "
                             f"{_fmt(s['mean'])} |")
        lines.append("")
    if failed:
        lines += ["## Failed runs", ""] + [f"- {r['run']}: {r.get('error')}" for r in failed] + [""]
    if violations:
        lines += ["## Assertions violated", ""] + [f"- {v}" for v in violations] + [""]
    elif manifest.get("asserts"):
        lines += ["All assertions hold.", ""]
    return "\n".join(lines)


def loads_markdown(results):
    """For a workload with per-load rows: how many completed, with which protocol, how many of those were
    degraded (and what failed in them), and why the others failed."""
    loads = [item for r in results for item in r.get("loads", [])]
    if not loads:
        return []
    done = [item for item in loads if item.get("completed")]
    protocols = {}
    for item in done:
        protocols[item.get("protocol") or "?"] = protocols.get(item.get("protocol") or "?", 0) + 1
    lines = ["", f"Loads: {len(done)} of {len(loads)} completed" +
             (" (" + ", ".join(f"{p} {n}" for p, n in sorted(protocols.items())) + ")" if protocols else "") +
             degraded_text(done) + "."]
    listed = [(r["run"], item) for r in results for item in r.get("loads", [])
              if not item.get("completed") or item.get("degraded") or item.get("replay_misses")]
    lines += [f"- {run} load {item.get('load')}: {load_problem(item)}" for run, item in listed[:20]]
    if len(listed) > 20:
        lines.append(f"- ... and {len(listed) - 20} more (results.csv has every one)")
    return lines


def degraded_text(done):
    """How many of the completed loads DONE were degraded, and the requests that failed in them ('' if none)."""
    degraded = sum(1 for item in done if item.get("degraded"))
    failed, misses = (sum(item.get(k) or 0 for item in done) for k in ("failed_requests", "replay_misses"))
    if not (degraded or misses):
        return ""
    return f", {degraded} of them degraded (failed_requests {failed}, replay_misses {misses})"


def load_problem(item):
    """A failed load's error, or what failed in a completed one."""
    if not item.get("completed"):
        return str(item.get("error"))
    return ("degraded: " if item.get("degraded") else "") + "; ".join(item.get("failures") or ["?"])


def write_manifest_runs(directory, manifest, results, failed):
    manifest["runs"] = [{k: r.get(k) for k in ("run", "config", "values", "replication", "seed", "workload_seed",
                                               "shell_seeds", "argv", "server", "traces", "started", "ended",
                                               "wall_s", "exit_status")} | {"status": "finished"} for r in results]
    manifest["runs"] += [{"run": r["run"], "seed": r.get("seed"), "argv": r.get("argv"), "status": "failed",
                          "error": r.get("error")} for r in failed]
    traces = {}
    for r in results:
        traces.update(r.get("traces", {}))
    manifest["traces"] = traces
    write_json(os.path.join(directory, "manifest.json"), manifest)


def report(directory, asserts=None, plots=True, plot_options=None):
    """Rebuilds results.csv, results.json, summary.md, the manifest's run list and the plots of DIRECTORY;
    returns (results, failed, violations)."""
    manifest = load_manifest(directory)
    results, failed = load_results(directory, manifest)
    failed = [f for f in failed if f["run"] not in {r["run"] for r in results}]
    matrix = manifest.get("matrix", [])
    table = rows(results, matrix)
    tmp = os.path.join(directory, "results.csv.tmp")
    with open(tmp, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["run", *matrix, "replication", "seed", "metric", "value"])
        w.writeheader()
        for row in table:
            w.writerow({k: (repr(v) if isinstance(v, float) else v) for k, v in row.items()})
    os.rename(tmp, os.path.join(directory, "results.csv"))
    write_json(os.path.join(directory, "results.json"), table)
    per, pooled = summaries(results)
    if asserts is None:
        asserts = manifest.get("asserts", [])
    else:
        manifest["asserts"] = asserts
    violations = check_assertions(asserts, per)
    text = summary_markdown(manifest, results, failed, per, pooled, violations)
    with open(os.path.join(directory, "summary.md.tmp"), "w") as f:
        f.write(text)
    os.rename(os.path.join(directory, "summary.md.tmp"), os.path.join(directory, "summary.md"))
    write_manifest_runs(directory, manifest, results, failed)
    if plots and results:
        plotting.draw_all(directory, manifest, results, plot_options or manifest.get("plot", {}))
    return results, failed, violations


def terminal_summary(results, headline):
    """A few lines for the terminal: per configuration, the headline metrics' median [p10, p90] (n)."""
    per, _ = summaries(results)
    out = []
    for config, metrics in per.items():
        parts = []
        for m in headline:
            s = metrics.get(m)
            if s:
                parts.append(f"{m} {_fmt(s['median'])} [{_fmt(s['p10'])}, {_fmt(s['p90'])}]")
        n = max((s["n"] for s in metrics.values()), default=0)
        out.append(f"{config} (n={n}): " + ("; ".join(parts) or "no headline metrics"))
    return out
