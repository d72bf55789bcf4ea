"""tm-run end to end on real shells: a bulk experiment (2 configurations x 3 replications) run as the
unprivileged user, interrupted with Ctrl-C and resumed, then run again as two shards and merged; the results
must match (identical run list and seeds, metrics within noise). And the one-line errors and exit statuses."""
import csv
import json
import os
import re
import shutil
import signal
import subprocess
import time

import lxml.etree as lxml  # python3-lxml: the JUnit report checked against its schema
import pytest

from conftest import BINDIR, DATA, TRACES

EXPERIMENT = '''name = "bulk over two constant links"
replications = 3
seed = 42
[[shell]]
run = "tm-delay 10"
[[shell]]
run = "tm-link {trace} {trace} --downlink-queue=droptail --downlink-queue-args=packets=60"
[matrix.trace]
"6mbit" = "constant-6mbit"
"12mbit" = "constant-12mbit"
[workload]
kind = "bulk"
direction = "down"
seconds = 1
[[assert]]
metric = "goodput_mbps"
stat = "median"
above = 1.0
'''


def tm_run(*args):
    return [os.path.join(BINDIR, "tm-run"), *map(str, args)]


@pytest.fixture
def experiment(public_tmp):
    for name in ("constant-6mbit", "constant-12mbit"):
        shutil.copy(os.path.join(TRACES, name), public_tmp / name)
        os.chmod(public_tmp / name, 0o644)
    path = public_tmp / "bulk.toml"
    path.write_text(EXPERIMENT)
    os.chmod(path, 0o644)
    return path


def rows(directory):
    with open(os.path.join(directory, "results.csv"), newline="") as f:
        return list(csv.DictReader(f))


def results(directory):
    out = {}
    for name in os.listdir(os.path.join(directory, "runs")):
        path = os.path.join(directory, "runs", name, "result.json")
        if os.path.exists(path):
            with open(path) as f:
                out[name] = json.load(f)
    return out


def user_processes(user, mark):
    """The user's live processes whose command line names MARK (this test's directory: other test suites may
    run as the same user at the same time, and exited processes wait for init to reap them)."""
    out = subprocess.run(["ps", "-u", str(user.uid), "-o", "pid=,stat=,args="], capture_output=True, text=True).stdout
    return [l for l in out.splitlines() if str(mark) in l and not l.split()[1].startswith("Z")]


def check_results(directory, trace_dir):
    res = results(directory)
    assert len(res) == 6
    table = rows(directory)
    assert list(table[0]) == ["run", "trace", "replication", "seed", "metric", "value"]
    by = {(r["run"], r["metric"]): float(r["value"]) for r in table}
    for rid in {r["run"] for r in table}:
        rate = 6 if "6mbit" in rid else 12
        # Never above the link's rate less the headers (1448 bytes of payload in a 1500-byte packet).
        assert 0 < by[(rid, "goodput_mbps")] <= rate * 1448 / 1500 * 1.01
        assert by[(rid, "min_rtt_ms")] >= 20.0  # tm-delay 10 both ways, end to end for the server's TCP
        assert by[(rid, "link2_down_capacity_mbps")] == pytest.approx(rate, rel=0.01)
    for r in res.values():  # two measurements agree: the client's bytes, and what the link log says it carried
        g = next(l["graph"] for l in r["links"] if l["direction"] == "downlink")
        delivered = g["throughput_mbps"] * (g["end_ms"] - g["start_ms"]) * 1e3 / 8
        assert r["metrics"]["bytes"] / delivered == pytest.approx(1448 / 1500, abs=0.005)
    one = next(iter(res.values()))
    assert one["shell_seeds"].keys() == {"1", "2"}  # both take --seed (tm-delay for its jitter)
    outside = one["argv"].index("--outside")  # the server runs by the outermost shell, end to end
    assert os.path.basename(one["argv"][0]) == "tm-delay" and outside < one["argv"].index("--")
    assert "workload bulk --server" in one["argv"][outside + 1]
    assert "--seed" in one["argv"] and os.path.exists(os.path.join(directory, "runs", next(iter(res)), "downlink-2.log.gz"))
    assert {os.path.basename(p) for p in one["traces"]} in ({"constant-6mbit"}, {"constant-12mbit"})
    manifest = json.load(open(os.path.join(directory, "manifest.json")))
    assert manifest["experiment"]["text"] == EXPERIMENT and len(manifest["runs"]) == 6
    assert manifest["traces"][str(trace_dir / "constant-6mbit")] == __import__("hashlib").sha256(
        open(trace_dir / "constant-6mbit", "rb").read()).hexdigest()
    summary = open(os.path.join(directory, "summary.md")).read()
    assert "| goodput_mbps | 3 |" in summary
    for plot in ("cdf_goodput_mbps", "box_goodput_mbps", "timeseries", "cdf_rtt_ms_samples"):
        for ext in ("png", "svg"):
            assert os.path.getsize(os.path.join(directory, "plots", f"{plot}.{ext}")) > 1000
    return res


def assert_goodput_within_noise(who, a, b, n):
    """Per configuration, the mean goodputs of A and B differ by less than 5% (a 1 s transfer's resolution:
    an RTT or two of slow start), or by less than the sum of their SDs (Noble's criterion), as tm-run compare
    reports them."""
    r = who.run(tm_run("compare", a, b, "--json"))
    assert r.returncode == 0, r.stderr
    rows = [row for row in json.loads(r.stdout) if row["metric"] == "goodput_mbps"]
    assert len(rows) == 2 and all(row["n_a"] == row["n_b"] == n for row in rows), rows
    for row in rows:
        close = abs(row["mean_b"] - row["mean_a"]) < 0.05 * row["mean_a"]
        assert close or row["noble"] == "indistinguishable", row


def test_run_resume_shard_merge(user, experiment, public_tmp):
    whole = public_tmp / "whole"
    # Interrupted after two runs: Ctrl-C reaches tm-run (not the shells, which run in sessions of their own).
    proc = user.spawn(tm_run(experiment, "-o", whole))
    deadline = time.monotonic() + 60
    while len(results(whole) if (whole / "runs").exists() else {}) < 2:
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert b"run the same command again to resume" in err
    assert wait_until_gone(user, whole) == []
    first = {name: os.stat(whole / "runs" / name / "result.json").st_mtime_ns for name in results(whole)}
    assert 2 <= len(first) < 6

    r = user.run(tm_run(experiment, "-o", whole), timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"{len(first)} of 6 runs already finished" in r.stderr
    assert {n: os.stat(whole / "runs" / n / "result.json").st_mtime_ns for n in first} == first  # not redone
    res = check_results(whole, public_tmp)
    assert "6mbit (n=3): goodput_mbps" in r.stdout
    r = user.run(tm_run(experiment, "-o", whole, "-q"), timeout=60)
    assert r.returncode == 0 and "6 of 6 runs already finished" not in r.stderr  # -q: quiet

    # The same experiment in two shards, run at once as two nodes would, merged: the same runs and seeds,
    # metrics within noise.
    shards = [user.spawn(tm_run(experiment, "-o", public_tmp / f"shard{k}", "--shard", f"{k}/2", "-q"))
              for k in (1, 2)]
    for k, proc in zip((1, 2), shards):
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        assert len(results(public_tmp / f"shard{k}")) == 3
    r = user.run(tm_run("merge", public_tmp / "shard1", public_tmp / "shard2", "-o", public_tmp / "merged"))
    assert r.returncode == 0, r.stdout + r.stderr
    merged = check_results(public_tmp / "merged", public_tmp)
    key = lambda table: sorted((x["run"], x["trace"], x["replication"], x["seed"], x["metric"]) for x in table)  # noqa
    assert key(rows(public_tmp / "merged")) == key(rows(whole))
    def argv(run):  # the command line less where it wrote (which results directory)
        text = json.dumps(run["argv"][1:])
        for d in (whole, public_tmp / "shard1", public_tmp / "shard2"):
            text = text.replace(str(d), "DIR")
        return text

    for name, a in res.items():
        b = merged[name]
        assert (a["seed"], a["shell_seeds"], argv(a)) == (b["seed"], b["shell_seeds"], argv(b))
        # The same trace; the log's window may hold one opportunity more or less at either edge (0.3% each).
        assert a["metrics"]["link2_down_capacity_mbps"] == pytest.approx(b["metrics"]["link2_down_capacity_mbps"],
                                                                         rel=0.01)
    assert_goodput_within_noise(user, whole, public_tmp / "merged", 3)

    # Shards of another experiment, and a run in two shards, are refused.
    other = public_tmp / "other.toml"
    other.write_text(EXPERIMENT.replace("seed = 42", "seed = 43"))
    r = user.run(tm_run(other, "-o", whole))
    assert r.returncode == 2 and "holds results of experiment" in r.stderr and r.stderr.count("\n") == 1
    fake = public_tmp / "fake"
    shutil.copytree(public_tmp / "shard1", fake)
    manifest = json.loads((fake / "manifest.json").read_text())
    manifest["experiment"]["hash"] = "0" * 64
    (fake / "manifest.json").write_text(json.dumps(manifest))
    r = user.run(tm_run("merge", public_tmp / "shard1", fake, "-o", public_tmp / "m2"))
    assert r.returncode == 2 and "only shards of one experiment merge" in r.stderr
    r = user.run(tm_run("merge", public_tmp / "shard1", public_tmp / "shard1", "-o", public_tmp / "m3"))
    assert r.returncode == 2 and "is in both" in r.stderr


def write(public_tmp, name, text):
    path = public_tmp / name
    path.write_text(text)
    os.chmod(path, 0o644)
    return path


def test_dry_run_lists_runs_seeds_and_command_lines(root, experiment, public_tmp):
    r = root.run(tm_run(experiment, "-o", public_tmp / "dry", "--dry-run"))
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert [l.split("\t")[0] for l in lines[:3]] == ["trace=6mbit/r1", "trace=12mbit/r1", "trace=6mbit/r2"]
    assert len(lines) == 6 and len({l.split("\t")[1] for l in lines}) == 6
    assert all(re.search(r"tm-delay 10 --seed \d+ --isolated --outside", l) and "tm-link" in l for l in lines)
    assert not os.path.exists(public_tmp / "dry")


# tm-run reads its own values as the tools read theirs: durations and sizes may carry units; the workload gets
# numbers in the keys' units, as when they are written as numbers.
def test_values_with_units_reach_the_workload_as_numbers(root, experiment, public_tmp):
    text = EXPERIMENT.replace("seconds = 1", 'seconds = "1000ms"\nsample_ms = "0.02s"').replace(
        "seed = 42", 'seed = 42\ntimeout = "2min"')
    r = root.run(tm_run(write(public_tmp, "units.toml", text), "-o", public_tmp / "dry", "--dry-run"))
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert len(lines) == 6 and all('"seconds":1.0' in l and '"sample_ms":20.0' in l for l in lines), lines[0]


def most_at_once(res):
    """The largest number of runs of RES that were running at one moment (from their start and end times)."""
    import datetime

    edges = []
    for r in res.values():
        edges += [(datetime.datetime.fromisoformat(r["started"]), 1), (datetime.datetime.fromisoformat(r["ended"]), -1)]
    running = most = 0
    for _, step in sorted(edges):  # an end sorts before a start at the same instant: touching is not overlapping
        running += step
        most = max(most, running)
    return most


def test_parallel_runs_overlap_use_the_same_ports_and_equal_a_serial_run(root, public_tmp):
    exp = write(public_tmp, "par.toml", 'name = "parallel"\nreplications = 2\n[[shell]]\nrun = "tm-delay {d}"\n'
                '[matrix]\nd = [5, 10]\n[workload]\nkind = "reqrep"\npairs = [[1, 1]]\ncount = 20\nconnects = 2\n')
    r = root.run(tm_run(exp, "-o", public_tmp / "par", "--jobs", "2"), timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "2 runs at once share this machine's CPU and disturb each other's timing" in r.stderr
    parallel = results(public_tmp / "par")
    # A run starts only when another has ended (the pool has two workers), and each lasts far longer than
    # starting one: two at a time, never three.
    spans = {n: (p["started"], p["ended"]) for n, p in parallel.items()}
    assert len(parallel) == 4 and most_at_once(parallel) == 2, spans
    for name, res in parallel.items():  # the reqrep servers all listened on one port, each in its own stack
        assert res["metrics"]["rtt_ms_min_1x1"] >= (10.0 if name.startswith("d=5") else 20.0)
    r = root.run(tm_run(exp, "-o", public_tmp / "serial", "-q"), timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    serial = results(public_tmp / "serial")
    assert most_at_once(serial) == 1
    key = lambda table: sorted((x["run"], x["d"], x["replication"], x["seed"], x["metric"]) for x in table)  # noqa
    assert key(rows(public_tmp / "par")) == key(rows(public_tmp / "serial"))
    def seeds(res, directory):  # noqa: E306 - and the command lines, less where they wrote
        return {n: (x["seed"], x["workload_seed"], x["shell_seeds"],
                    json.dumps(x["argv"][1:]).replace(directory, "DIR")) for n, x in res.items()}
    assert seeds(parallel, str(public_tmp / "par")) == seeds(serial, str(public_tmp / "serial"))


def test_bad_input_one_line_and_status_2(root, public_tmp):
    bad = write(public_tmp, "bad.toml", EXPERIMENT.replace("seconds = 1", "seconds = \"1 s\""))
    r = root.run(tm_run(bad, "-o", public_tmp / "out"))
    assert r.returncode == 2 and r.stderr == (f"tm-run: {bad}:14: [workload] 'seconds': invalid value '1 s': expected a "
                                              "duration (a unit is optional): ns, us, ms, s, min or h (e.g. 200ms or "
                                              "1.5s)\n"), r.stderr
    refused = write(public_tmp, "refused.toml", 'name = "x"\n[[shell]]\nrun = "tm-delay --uplink-delay x"\n'
                    '[workload]\nkind = "command"\nclient = "true"\nseconds = 1\n')
    r = root.run(tm_run(refused, "-o", public_tmp / "out2", "-q"))
    assert r.returncode == 2, r.stdout + r.stderr
    assert r.stderr.count("\n") == 1 and "a shell refused its options" in r.stderr
    assert "tm-delay: missing delay" in r.stderr
    r = root.run(tm_run(refused, "-o", public_tmp / "out3", "--shard", "3/2"))
    assert r.returncode == 2 and "invalid --shard '3/2'" in r.stderr


def test_a_server_that_exits_is_reported_at_once_with_its_status_and_stderr(root, public_tmp):
    exp = write(public_tmp, "srv.toml", 'name = "srv"\n[[shell]]\nrun = "tm-delay 5"\n[workload]\nkind = "command"\n'
                'client = "true"\nserver = "echo cannot bind >&2; exit 3"\nserver_port = 8000\nseconds = 1\n')
    start = time.monotonic()
    r = root.run(tm_run(exp, "-o", public_tmp / "srv", "-q"), timeout=60)
    assert r.returncode == 1, r.stdout + r.stderr
    assert r.stdout == ("run default/r1 failed: exit status 1: tm-run: the server exited with status 1 before it was "
                        "ready: cannot bind | tm-run: the server exited with status 3 before listening on port 8000\n")
    assert time.monotonic() - start < 10  # not "did not become ready within 15 s"


def test_violated_assertions_exit_1_one_line_each(root, public_tmp):
    exp = write(public_tmp, "gate.toml", 'name = "gate"\nreplications = 2\nwarmup = 1\n[[shell]]\nrun = "tm-delay 5"\n'
                '[workload]\nkind = "command"\nclient = "echo value=3"\nseconds = 1\n'
                '[[workload.metrics]]\nname = "value"\nregex = "value=([0-9]+)"\n'
                '[[assert]]\nmetric = "value"\nbelow = 2\n[[assert]]\nmetric = "elapsed_s"\nbelow = 60\n')
    report = public_tmp / "gate.xml"
    r = root.run(tm_run(exp, "-o", public_tmp / "gate", "-q", "--junit", report), timeout=60)
    assert r.returncode == 1, r.stdout + r.stderr
    assert r.stdout.splitlines() == ["assert 1 failed: value median 3 is not below 2 in default (n=2)"]
    assert os.listdir(public_tmp / "gate" / "warmup") == ["default.r1.w1"]  # run, and not counted (n=2)
    # The same verdicts as a CI reads them: valid JUnit XML, the missed bound a failed case, each run a case.
    schema = lxml.XMLSchema(lxml.parse(os.path.join(DATA, "junit", "junit-10.xsd")))
    assert schema.validate(lxml.parse(str(report))), schema.error_log
    suite = lxml.parse(str(report)).getroot().find("testsuite")
    verdicts = {c.get("name"): [x.tag for x in c if x.tag != "system-out"] for c in suite.iter("testcase")}
    assert verdicts == {"assert 1: value median below 2 [default]": ["failure"],
                        "assert 2: elapsed_s median below 60 [default]": [],
                        "run default/r1": [], "run default/r2": []}, verdicts
    assert float(next(c for c in suite.iter("testcase") if c.get("name") == "run default/r1").get("time")) > 0
    r = root.run(tm_run("report", public_tmp / "gate"))
    assert r.returncode == 1 and "assert 1 failed" in r.stdout


def wait_until_gone(user, mark, timeout=10):
    deadline = time.monotonic() + timeout
    while user_processes(user, mark) and time.monotonic() < deadline:
        time.sleep(0.1)
    return user_processes(user, mark)


def test_sigkill_of_tm_run_and_a_run_timeout_leave_nothing(user, public_tmp):
    slow = write(public_tmp, "slow.toml", 'name = "slow"\ntimeout = 1.5\n[[shell]]\nrun = "tm-delay 5"\n[[shell]]\n'
                 'run = "tm-delay 5"\n[workload]\nkind = "command"\nclient = "sleep 30"\nseconds = 30\n')
    # A run past its timeout is stopped, reported in one line, and retried by the next invocation.
    r = user.run(tm_run(slow, "-o", public_tmp / "t", "-q"), timeout=60)
    assert r.returncode == 1 and "did not end within its timeout of 1.5 s" in r.stdout, r.stdout + r.stderr
    assert os.path.exists(public_tmp / "t" / "runs" / "default.r1" / "failed.json")
    assert wait_until_gone(user, public_tmp / "t") == []
    # tm-run killed outright: its stacks get SIGTERM from the kernel (pdeathsig) and clean up after themselves.
    proc = user.spawn(tm_run(slow, "-o", public_tmp / "k", "-q"))
    deadline = time.monotonic() + 20
    while not os.path.exists(public_tmp / "k" / "runs" / "default.r1" / "stack.err"):
        assert time.monotonic() < deadline and proc.poll() is None
        time.sleep(0.05)
    time.sleep(0.5)
    assert [p for p in user_processes(user, public_tmp / "k") if "tm-delay" in p]
    proc.kill()
    proc.communicate(timeout=10)
    assert wait_until_gone(user, public_tmp / "k") == []
