"""tm-run merge DIR... -o OUT: joins the shards of one experiment into one results directory, as if it had
run in one piece. Shards of different experiments (or tracemod versions) are refused, and so is a run found in
two shards; runs found in none are listed (OUT can be completed by running the experiment into it)."""
import os
import shutil
import sys

from . import results
from .errors import UsageError


def merge(dirs, out):
    manifests = [results.load_manifest(d) for d in dirs]
    first = manifests[0]
    for d, m in zip(dirs[1:], manifests[1:]):
        if m["experiment"]["hash"] != first["experiment"]["hash"]:
            raise UsageError(f"{d} holds experiment '{m['experiment']['name']}' ({m['experiment']['file']}), "
                             f"{dirs[0]} holds '{first['experiment']['name']}' ({first['experiment']['file']}): "
                             "only shards of one experiment merge")
        if m["tracemod_version"] != first["tracemod_version"]:
            raise UsageError(f"{d} was made by tracemod {m['tracemod_version']}, {dirs[0]} by "
                             f"{first['tracemod_version']}: shards must come from one version")
    if os.path.exists(out) and (not os.path.isdir(out) or os.listdir(out)):
        raise UsageError(f"{out} exists and is not empty: merge into a new directory")
    seen = {}
    for d in dirs:
        runs_dir = os.path.join(d, "runs")
        for name in sorted(os.listdir(runs_dir)) if os.path.isdir(runs_dir) else []:
            if os.path.exists(os.path.join(runs_dir, name, "result.json")):
                if name in seen:
                    raise UsageError(f"run {name} is in both {seen[name]} and {d}: were the shards overlapping?")
                seen[name] = d
    results.make_directory(os.path.join(out, "runs"))
    for name, d in seen.items():
        shutil.copytree(os.path.join(d, "runs", name), os.path.join(out, "runs", name), symlinks=True)
    if os.path.exists(os.path.join(dirs[0], "experiment.toml")):
        shutil.copyfile(os.path.join(dirs[0], "experiment.toml"), os.path.join(out, "experiment.toml"))
    manifest = {k: v for k, v in first.items() if k not in ("runs", "traces")}
    manifest["shard"] = None
    manifest["merged_from"] = [{"dir": os.path.abspath(d), "shard": m.get("shard")} for d, m in zip(dirs, manifests)]
    manifest["sessions"] = [s for m in manifests for s in m.get("sessions", [])]
    results.write_json(os.path.join(out, "manifest.json"), manifest)
    done, _ = results.load_results(out, manifest)
    missing = [rid for rid in manifest["run_order"] if rid not in {r["run"] for r in done}]
    return done, missing


def main(dirs, out):
    done, missing = merge(dirs, out)
    print(f"tm-run merge: {len(done)} runs from {len(dirs)} directories into {out}")
    _, _, violations = results.report(out)
    for v in violations:
        print(v)
    if missing:
        print(f"tm-run merge: {len(missing)} runs of the experiment are in none of them (e.g. "
              f"{', '.join(missing[:3])}): run the experiment with -o {out} to complete it", file=sys.stderr)
    return 1 if missing or violations else 0
