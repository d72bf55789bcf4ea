"""Every file in examples/ is loaded by what reads it, so a broken example fails here and not in a user's hands:
each experiment by tm-run (a dry run: its own loader, its stacks planned, assertions and plots checked) and then
every shell level of every configuration started as written, around `true` (so the tools read the traces,
schedules and queue arguments it names); schedules by tm-modulate; scripts by their interpreter's syntax check;
the Kubernetes Job by a YAML parser, its command run (dry) as each pod would run it; the test site against its
own site.json. A file that no check here claims fails the test: a new kind of example needs a check."""
import json
import os
import re
import shlex
import subprocess

import yaml

from conftest import BINDIR, TRACES

EXAMPLES = os.path.realpath(os.path.join(os.path.dirname(__file__), "..", "..", "examples"))
SHELLS = ("tm-delay", "tm-loss", "tm-link", "tm-onoff", "tm-modulate")


def example_files():
    return sorted(os.path.relpath(os.path.join(d, f), EXAMPLES) for d, _, files in os.walk(EXAMPLES) for f in files)


def tm_run(*args, env=None, timeout=60):
    return subprocess.run([os.path.join(BINDIR, "tm-run"), *map(str, args)], capture_output=True, text=True,
                          env=env, timeout=timeout, cwd="/")


def dry_run(path, out, env=None):
    """{run id: the stack's argv} from `tm-run PATH -o OUT --dry-run`, which must succeed."""
    r = tm_run(path, "-o", out, "--dry-run", env=env)
    assert r.returncode == 0, f"{path}: {r.stderr}"
    runs = {}
    for line in r.stdout.splitlines():
        run, seed, argv = line.split("\t")
        assert re.fullmatch(r"seed \d+", seed), line
        runs[run] = shlex.split(argv)
    assert runs, f"{path}: a dry run listed no runs"
    return runs


def shell_levels(argv):
    """The shells of a stack's argv, outermost first: each level's words up to its `--` (the client after the
    last is tm-run's own and is left out)."""
    levels = []
    while argv and os.path.basename(argv[0]) in SHELLS:
        end = argv.index("--")
        levels.append(argv[:end])
        argv = argv[end + 1:]
    return levels


RUN_OPTIONS = ("--seed", "--isolated", "--outside", "--outside-wait", "--uplink-log", "--downlink-log")


def as_written(words):
    """A level's words without what tm-run adds for a run (its seed, the workload's server, logs in the run's
    directory, --isolated), which would make every run's level differ."""
    out, rest = [], iter(words)
    for w in rest:
        if w.split("=", 1)[0] in RUN_OPTIONS:
            if "=" not in w and w != "--isolated":
                next(rest)  # its value
            continue
        out.append(w)
    return tuple(out)


def start_level(words, cwd):
    """Starts one shell level around `true` where the experiment's shells run (its directory), bare trace names
    found as tm-run finds them, isolated (the outside path is not what is checked here)."""
    env = {"PATH": os.environ["PATH"], "TM_TRACE_PATH": TRACES}
    r = subprocess.run([words[0], "--isolated", *words[1:], "--", "true"], capture_output=True, text=True, cwd=cwd,
                       env=env, timeout=30)
    assert r.returncode == 0, f"{shlex.join(words)}: {r.stderr}"


def test_every_example_file_is_checked():
    files = example_files()
    claimed = {f for f in files if f.endswith((".toml", ".schedule", ".sh", ".yaml"))}
    claimed.add("sites/make-site")
    site = os.path.join(EXAMPLES, "sites", "page")
    with open(os.path.join(site, "site.json")) as f:
        sizes = json.load(f)["sizes"]
    claimed |= {f"sites/page/{name}" for name in (*sizes, "site.json")}
    claimed |= {f for f in files if f.startswith("pytest/")}  # run by test_pytest_plugin (installed: test_package)
    claimed |= {f for f in files if f.startswith("ci/")}  # their steps run by test_package, from the package
    assert not set(files) - claimed, f"examples with no check in {__file__}: {sorted(set(files) - claimed)}"
    assert len(files) > 10, files  # the walk found the examples


def test_experiments_load_and_their_shells_start(tmp_path):
    started, count = set(), 0
    for name in example_files():
        if not name.endswith(".toml"):
            continue
        path = os.path.join(EXAMPLES, name)
        runs = dry_run(path, tmp_path / name)
        count += len(runs)
        for argv in runs.values():
            levels = shell_levels(argv)
            assert levels, f"{name}: no shell in {argv}"
            for words in map(as_written, levels):
                if (path, words) not in started:  # each distinct level once
                    started.add((path, words))
                    start_level(words, os.path.dirname(path))
    print(f"examples: {count} runs planned, {len(started)} distinct shell levels started")


def test_schedules_load_in_tm_modulate():
    for name in example_files():
        if name.endswith(".schedule"):
            start_level([os.path.join(BINDIR, "tm-modulate"), "--once", name], EXAMPLES)


def test_scripts_pass_their_interpreters_syntax_check():
    for name in example_files():
        path = os.path.join(EXAMPLES, name)
        with open(path, "rb") as f:
            first = f.readline().decode(errors="replace")
        if name.endswith(".sh") or first.startswith("#!"):
            assert first.startswith("#!"), f"{name}: no #! line"
            interpreter = os.path.basename(first[2:].split()[0])
            assert os.access(path, os.X_OK), f"{name} is not executable"
            if interpreter.startswith("python"):
                with open(path) as f:
                    compile(f.read(), path, "exec")
            else:
                assert interpreter in ("sh", "bash"), f"{name}: an interpreter this test cannot check: {first}"
                r = subprocess.run([interpreter, "-n", path], capture_output=True, text=True, timeout=30)
                assert r.returncode == 0, f"{name}: {r.stderr}"


def test_site_matches_its_description():
    site = os.path.join(EXAMPLES, "sites", "page")
    with open(os.path.join(site, "site.json")) as f:
        desc = json.load(f)
    sizes = desc["sizes"]
    assert desc["files"] == len(sizes) == desc["objects"] + 1 and "index.html" in sizes, desc
    for name, size in sizes.items():
        assert os.path.getsize(os.path.join(site, name)) == size, name
        if name.endswith(".png"):
            with open(os.path.join(site, name), "rb") as f:
                assert f.read(8) == b"\x89PNG\r\n\x1a\n", name
    assert sum(sizes.values()) == desc["bytes"] and sizes["index.html"] == desc["html_bytes"], desc


def test_kubernetes_job_runs_tm_run_on_an_example_in_shares(tmp_path):
    with open(os.path.join(EXAMPLES, "kubernetes-indexed-job.yaml")) as f:
        job = yaml.safe_load(f)
    assert (job["apiVersion"], job["kind"]) == ("batch/v1", "Job"), job
    spec = job["spec"]
    completions = spec["completions"]
    # Indexed: each pod gets JOB_COMPLETION_INDEX; a Job's pods may restart only Never or OnFailure.
    assert spec["completionMode"] == "Indexed" and 1 <= spec["parallelism"] <= completions, spec
    pod = spec["template"]["spec"]
    assert pod["restartPolicy"] in ("Never", "OnFailure"), pod
    (container,) = pod["containers"]
    env = {e["name"]: e["value"] for e in container.get("env", [])}
    # tm-run's count of shares: Kubernetes does not give a pod spec.completions, so the manifest must.
    assert env.get("JOB_COMPLETIONS") == str(completions), (env, completions)
    volumes = {v["name"]: v for v in pod["volumes"]}
    mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
    assert set(mounts.values()) <= set(volumes), (mounts, volumes)

    # The command: sh -c "exec tm-run FILE ... -o DIR.shard-$JOB_COMPLETION_INDEX", FILE an example in the
    # experiments volume (a ConfigMap of examples/), DIR in the results volume.
    shell, flag, script = container["command"]
    assert (shell, flag) == ("sh", "-c"), container["command"]
    words = shlex.split(script)
    assert words[:2] == ["exec", "tm-run"], script
    experiment = words[2]
    mount = os.path.dirname(experiment)
    assert mounts.get(mount) and "configMap" in volumes[mounts[mount]], (experiment, mounts)
    local = os.path.join(EXAMPLES, os.path.basename(experiment))
    assert os.path.isfile(local), f"{experiment} is not an example"
    out = words[words.index("-o") + 1]
    assert out.endswith(".shard-$JOB_COMPLETION_INDEX"), out
    assert "persistentVolumeClaim" in volumes[mounts[os.path.dirname(out)]], (out, mounts)

    # Each pod's command, run as a dry run with the volumes at local paths: every index gets a share, the
    # shares are disjoint and together are the whole experiment.
    script = script.replace(mount + "/", EXAMPLES + "/").replace(os.path.dirname(out) + "/", f"{tmp_path}/")
    script = script.replace("exec tm-run ", f"exec {os.path.join(BINDIR, 'tm-run')} --dry-run ", 1)
    whole = dry_run(local, tmp_path / "whole")
    shares = []
    for index in range(completions):
        r = subprocess.run(["sh", "-c", script], env={"PATH": os.environ["PATH"], **env,
                                                      "JOB_COMPLETION_INDEX": str(index)},
                           capture_output=True, text=True, timeout=60, cwd="/")
        assert r.returncode == 0, r.stderr
        shares.append([line.split("\t")[0] for line in r.stdout.splitlines()])
    print(f"kubernetes: {completions} pods, {len(whole)} runs, shares of {[len(s) for s in shares]}")
    assert all(shares), f"a pod with nothing to run: {shares}"
    assert sorted(r for s in shares for r in s) == sorted(whole), shares
