"""Results directories without running anything: rows, summary, assertions, report, merge and compare on
synthetic runs; resume's notion of a finished run; the progress bar's silence off a terminal."""
import csv
import io
import json
import os

import pytest

from tracemod_run import compare, experiment, merge, progress, results, runner
from tracemod_run.errors import UsageError

EXP = '''name = "synthetic"
replications = 3
seed = 9
[[shell]]
run = "tm-delay {d}"
[matrix]
d = [10, 50]
[workload]
kind = "bulk"
seconds = 1
[[assert]]
metric = "goodput_mbps"
stat = "median"
above = 5
'''


def make_dir(tmp_path, name, shard=None, runs=None, text=EXP, goodput=lambda run: 20.0 - float(run.config.values["d"]) / 10):
    path = tmp_path / f"{name}.toml"
    path.write_text(text)
    exp = experiment.parse(text, str(path))
    d = tmp_path / name
    (d / "runs").mkdir(parents=True)
    manifest = results.new_manifest(exp, shard)
    results.write_json(str(d / "manifest.json"), manifest)
    chosen = exp.runs() if runs is None else [r for i, r in enumerate(exp.runs()) if i in runs]
    for run in chosen:
        rd = d / "runs" / run.dirname
        rd.mkdir()
        g = goodput(run) + run.replication * 0.1
        results.write_json(str(rd / "result.json"), {
            "run": run.id, "config": run.config.name, "values": run.config.values, "replication": run.replication,
            "seed": run.seed, "metrics": {"goodput_mbps": g, "retransmits": 0},
            "samples": {"rtt_ms": [20.0 + run.replication, 30.0]}, "series": {}, "links": [],
            "workload": exp.workload, "argv": ["tm-delay", str(run.config.values["d"])], "traces": {}})
    return exp, d


def test_rows_summary_and_report(tmp_path):
    exp, d = make_dir(tmp_path, "a")
    res, failed, violations = results.report(str(d), plots=False)
    assert len(res) == 6 and not failed
    with open(d / "results.csv", newline="") as f:
        table = list(csv.DictReader(f))
    assert list(table[0]) == ["run", "d", "replication", "seed", "metric", "value"]
    assert table[0]["run"] == "d=10/r1" and table[0]["metric"] == "goodput_mbps"
    assert float(table[0]["value"]) == pytest.approx(19.1)
    assert json.loads((d / "results.json").read_text())[0]["seed"] == exp.runs()[0].seed
    summary = (d / "summary.md").read_text()
    assert "## d=10" in summary and "| goodput_mbps | 3 | 19.2 | 19.12 | 19.28 | 19.2 ± 0.1 |" in summary
    assert "| rtt_ms | 6 |" in summary  # pooled samples
    assert violations == []
    manifest = json.loads((d / "manifest.json").read_text())
    assert [r["run"] for r in manifest["runs"]] == [r.id for r in exp.runs()]


def test_assertions_one_message_per_configuration(tmp_path):
    _, d = make_dir(tmp_path, "a", goodput=lambda run: 4.0 if run.config.values["d"] == "50" else 9.0)
    _, _, violations = results.report(str(d), plots=False)
    assert violations == ["assert 1 failed: goodput_mbps median 4.2 is not above 5 in d=50 (n=3)"]
    assert "## Assertions violated" in (d / "summary.md").read_text()
    asserts = [{"metric": "nope", "stat": "median", "below": 1.0, "above": None, "config": "d=1*", "index": 1}]
    per, _ = results.summaries(results.load_results(str(d))[0])
    assert results.check_assertions(asserts, per) == ["assert 1: nope was not measured in d=10"]


def test_merge_joins_shards_and_refuses_others(tmp_path):
    _, one = make_dir(tmp_path, "one", shard=(1, 2), runs={0, 2, 4})
    _, two = make_dir(tmp_path, "two", shard=(2, 2), runs={1, 3, 5})
    done, missing = merge.merge([str(one), str(two)], str(tmp_path / "m"))
    assert len(done) == 6 and missing == []
    manifest = json.loads((tmp_path / "m" / "manifest.json").read_text())
    assert manifest["shard"] is None and [m["shard"] for m in manifest["merged_from"]] == [[1, 2], [2, 2]]
    _, partial = make_dir(tmp_path, "partial", runs={0})
    assert merge.merge([str(partial)], str(tmp_path / "m2"))[1] == [r for r in json.loads(
        (partial / "manifest.json").read_text())["run_order"] if r != "d=10/r1"]
    _, other = make_dir(tmp_path, "other", text=EXP.replace("seed = 9", "seed = 8"))
    with pytest.raises(UsageError, match="only shards of one experiment merge"):
        merge.merge([str(one), str(other)], str(tmp_path / "m3"))
    with pytest.raises(UsageError, match="is in both"):
        merge.merge([str(one), str(one)], str(tmp_path / "m4"))
    with pytest.raises(UsageError, match="not empty"):
        merge.merge([str(one)], str(one))


def test_compare(tmp_path):
    _, a = make_dir(tmp_path, "a")
    _, b = make_dir(tmp_path, "b", goodput=lambda run: 30.0)
    res_a, res_b = results.load_results(str(a))[0], results.load_results(str(b))[0]
    rows = {(r["config"], r["metric"]): r for r in compare.compare(res_a, res_b)}
    g = rows[("d=10", "goodput_mbps")]
    assert g["diff"] == pytest.approx(11.0) and g["noble"] == "different" and g["p"] == pytest.approx(0.1)
    assert rows[("d=10", "retransmits")]["noble"] == "indistinguishable"
    within = compare.compare(res_a, res_a, "d=10", "d=50")
    assert within[0]["config"] == "d=10 vs d=50" and within[0]["diff"] == pytest.approx(-4.0)
    with pytest.raises(UsageError, match="no configuration 'd=99'"):
        compare.compare(res_a, res_b, "d=99")


def test_a_run_is_finished_only_with_a_complete_result(tmp_path):
    assert runner.finished(str(tmp_path)) is None
    (tmp_path / "result.json.tmp123").write_text('{"run": "x"}')  # cut off before its rename
    assert runner.finished(str(tmp_path)) is None
    (tmp_path / "result.json").write_text('{"run": ')  # a torn file
    assert runner.finished(str(tmp_path)) is None
    results.write_json(str(tmp_path / "result.json"), {"run": "x"})
    assert runner.finished(str(tmp_path)) == {"run": "x"}


def test_resume_refuses_another_experiment(tmp_path):
    exp, d = make_dir(tmp_path, "a")
    other = experiment.parse(EXP.replace("seed = 9", "seed = 10"), str(tmp_path / "a.toml"))
    with pytest.raises(UsageError, match="holds results of experiment 'synthetic'"):
        runner.Runner(other, str(d)).prepare()
    with pytest.raises(UsageError, match="holds a whole experiment"):
        runner.Runner(exp, str(d), shard=(1, 2)).prepare()
    first = runner.Runner(exp, str(d))
    first.prepare()  # the same experiment resumes
    with pytest.raises(UsageError, match="in use by another tm-run"):
        runner.Runner(exp, str(d)).prepare()
    first.release()
    (tmp_path / "junk").mkdir()
    (tmp_path / "junk" / "x").write_text("")
    with pytest.raises(UsageError, match="not a tm-run results directory"):
        runner.Runner(exp, str(tmp_path / "junk")).prepare()


class FakeTTY(io.StringIO):
    def __init__(self, tty):
        super().__init__()
        self.tty = tty

    def isatty(self):
        return self.tty


def test_progress_only_on_a_terminal_and_not_quiet():
    for tty, quiet, shown in ((False, False, False), (True, True, False), (True, False, True)):
        out = FakeTTY(tty)
        p = progress.Progress(4, expected=2.0, quiet=quiet, stream=out)
        p.start("a/r1")
        p.finish("a/r1")
        p.close()
        assert ("1/4" in out.getvalue()) == shown
    p = progress.Progress(4, jobs=2, expected=10.0, stream=FakeTTY(False))
    assert p.eta() == pytest.approx(20.0)  # 4 runs of 10 s, 2 at once
    p.start("x")
    assert "ETA 0:00:20" in p.line() and "x" in p.line()


def test_a_missing_tool_stops_everything_before_any_run(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    text = EXP.replace('run = "tm-delay {d}"', 'run = "tm-nonexistent {d}"')
    path = tmp_path / "e.toml"
    path.write_text(text)
    exp = experiment.parse(text, str(path))
    with pytest.raises(UsageError, match="tm-nonexistent: no such tool next to tm-run or on PATH"):
        runner.Runner(exp, str(tmp_path / "out"), quiet=True).run_all()
    assert not os.path.exists(tmp_path / "out")  # checked before the results directory is made


def test_a_figure_with_nothing_labelled_draws_without_a_warning(tmp_path, caplog):
    """A run whose series have no goodput or RTT (a browser's) gives a panel without labels: matplotlib's "No
    artists with labels found to put in legend" (a logged warning) went to tm-run's standard error."""
    import warnings

    from tracemod_run import plots

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        plots.timeseries(plots._pyplot(), {"run": "r1", "seed": 1, "series": {"plt_ms": [[(0.0, 1.0)]]}}, tmp_path)
        plots.cdf_figure(plots._pyplot(), tmp_path, "empty", {}, "x", "y", "nothing")
    assert [str(w.message) for w in caught] == [] and caplog.records == []
    assert (tmp_path / "timeseries.png").exists() and (tmp_path / "empty.png").exists()
