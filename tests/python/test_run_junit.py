"""tm-run's JUnit XML on synthetic results directories: every assertion and run a test case, a missed bound a
failure, an assertion not judged and a failed run an error, a run not made skipped, the medians as properties;
each document valid against Jenkins' junit-10.xsd (tests/data/junit)."""
import os
import xml.etree.ElementTree as ET

import pytest

from test_run_results import EXP, make_dir
from tracemod_run import cli, junit, results
from tracemod_run.errors import UsageError

lxml = pytest.importorskip("lxml.etree", reason="python3-lxml validates against the schema")
SCHEMA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "junit", "junit-10.xsd")


def validated(path):
    """The document at PATH, after checking it against junit-10.xsd (the schema's own words on a failure)."""
    schema = lxml.XMLSchema(lxml.parse(SCHEMA))
    doc = lxml.parse(str(path))
    assert schema.validate(doc), schema.error_log
    return ET.parse(path).getroot()


def cases(root):
    """{test case name: (verdict, its message)}, the verdict 'ok' or the child's tag."""
    out = {}
    for case in root.iter("testcase"):
        child = next((c for c in case if c.tag in ("failure", "error", "skipped")), None)
        out[case.get("name")] = ("ok", "") if child is None else (child.tag, child.get("message"))
    return out


def fail_run(d, run_id, error):
    """Turns the finished run RUN_ID of D into a failed one."""
    rundir = d / "runs" / run_id.replace("/", ".")
    (rundir / "result.json").unlink()
    results.write_json(str(rundir / "failed.json"), {"run": run_id, "error": error, "wall_s": 2.5})


def test_each_assertion_per_configuration_and_each_run_is_a_case(tmp_path):
    _, d = make_dir(tmp_path, "a", goodput=lambda run: 4.0 if run.config.values["d"] == "50" else 9.0)
    fail_run(d, "d=10/r3", "exit status 1: the server exited with status 3")
    out = junit.write(str(d), str(tmp_path / "junit.xml"))
    root = validated(out)
    suite = root.find("testsuite")
    got = cases(root)
    assert got["assert 1: goodput_mbps median above 5 [d=10]"] == ("ok", "")
    held = next(c for c in root.iter("testcase") if c.get("name") == "assert 1: goodput_mbps median above 5 [d=10]")
    assert held.findtext("system-out") == "assert 1 holds: goodput_mbps median 9.15 is above 5 in d=10 (n=2)"
    assert got["assert 1: goodput_mbps median above 5 [d=50]"] == (
        "failure", "assert 1 failed: goodput_mbps median 4.2 is not above 5 in d=50 (n=3)")
    assert got["run d=10/r3"] == ("error", "exit status 1: the server exited with status 3")
    assert [n for n in got if n.startswith("run ")] == [f"run d={d_}/r{k}" for k in (1, 2, 3) for d_ in (10, 50)]
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors"), suite.get("skipped")) == ("8", "1", "1", "0")
    props = {p.get("name"): p.get("value") for p in suite.iter("property")}
    assert props["d=50: goodput_mbps median"] == "4.2" and props["d=10: goodput_mbps n"] == "2"
    assert props["experiment_hash"] and props["tracemod_version"]
    assert all(c.get("classname") == "synthetic" for c in root.iter("testcase"))


def test_what_could_not_be_judged_or_run_is_never_a_pass(tmp_path):
    text = EXP + '[[assert]]\nmetric = "nope"\nbelow = 1\n'
    _, d = make_dir(tmp_path, "partial", runs={0, 1}, text=text)
    got = cases(validated(junit.write(str(d), str(tmp_path / "partial.xml"))))
    assert got["assert 2: nope median below 1 [d=10]"] == ("error", "assert 2: nope was not measured in d=10")
    assert got["run d=10/r2"] == ("skipped", "not run: the experiment was interrupted before it")
    _, empty = make_dir(tmp_path, "empty", runs=set())
    got = cases(validated(junit.write(str(empty), str(tmp_path / "empty.xml"))))
    assert got["assert 1: goodput_mbps median above 5"] == ("error", "assert 1: not judged: no run finished")
    assert {v for n, (v, _) in got.items() if n.startswith("run ")} == {"skipped"}


def test_another_shards_runs_are_skipped_and_say_so(tmp_path):
    _, d = make_dir(tmp_path, "shard", shard=(1, 2), runs={0, 2, 4})
    got = cases(validated(junit.write(str(d), str(tmp_path / "shard.xml"))))
    assert got["run d=50/r1"][0] == "skipped" and "shard 1/2 runs a share" in got["run d=50/r1"][1]


def test_report_writes_it_and_a_path_that_cannot_be_written_is_refused_first(tmp_path, capsys):
    _, d = make_dir(tmp_path, "a")
    assert cli.main(["report", str(d), "--junit", str(tmp_path / "r.xml")]) == 0
    assert validated(tmp_path / "r.xml").find("testsuite").get("failures") == "0"
    for bad, said in ((tmp_path, "is a directory"), (tmp_path / "no" / "r.xml", "is not a directory this user")):
        with pytest.raises(UsageError, match=said):
            junit.check_path(str(bad))
    assert cli.main([str(tmp_path / "a.toml"), "-o", str(tmp_path / "x"), "--junit", "j.xml", "--dry-run"]) == 2
    assert "--junit writes a run's results: a dry run has none" in capsys.readouterr().err
