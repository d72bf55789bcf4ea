"""tm-run's bad input, one class per test: refused before the first run (most when the file is read) in one line
naming the file and line, exit 2, never a traceback; and a server that exits reported with its status and the
end of its stderr. No namespaces: where the runner plans stacks, the tools are small scripts that print a --help."""
import os
import time

import pytest

import tracemod_run
from tracemod_run import cli, experiment, runner
from tracemod_run.errors import RunError, UsageError
from tracemod_run.workloads import common

BASE = '''name = "x"
[[shell]]
run = "tm-delay {d}"
[matrix]
d = [5, 10]
[workload]
kind = "bulk"
seconds = 1
'''


def refusal(text):
    """The UsageError parsing TEXT (as exp.toml) raises."""
    with pytest.raises(UsageError) as e:
        experiment.parse(text, "exp.toml")
    return str(e.value)


def test_the_matrix_is_counted_before_it_is_made():
    names = "abcdefg"
    text = BASE.replace("run = \"tm-delay {d}\"", "run = \"tm-delay " + " ".join(f"{{{n}}}" for n in names) + "\"")
    text = text.replace("d = [5, 10]", "\n".join(f"{n} = [{', '.join(map(str, range(10)))}]" for n in names))
    start = time.monotonic()
    assert refusal(text) == ("exp.toml:4: the experiment has 10000000 runs (10 x 10 x 10 x 10 x 10 x 10 x 10 "
                             "configurations x 1 replications), more than 100000")
    assert time.monotonic() - start < 1  # making ten million configurations takes a minute and gigabytes


@pytest.mark.parametrize("change,message", [
    (("seconds = 1", "seconds = nan"), "exp.toml:8: [workload] 'seconds' must be a finite number, not nan"),
    (("seconds = 1", "seconds = 1\nsample_ms = inf"), "exp.toml:9: [workload] 'sample_ms' must be a finite number"),
    (('name = "x"', 'name = "x"\ntimeout = nan'), "exp.toml:2: 'timeout' must be a finite number, not nan"),
    (('name = "x"', 'name = "x"\ntimeout = inf'), "exp.toml:2: 'timeout' must be a finite number, not inf"),
    (("d = [5, 10]", "d = [5, nan]"), "exp.toml:5: a value of matrix 'd' must be a finite number, not nan"),
    (("seconds = 1", 'seconds = 1\n[[assert]]\nmetric = "bytes"\nbelow = -inf'),
     "exp.toml:11: [[assert]] 1 'below' must be a finite number, not -inf"),
])
def test_nan_and_inf_are_refused(change, message):
    assert refusal(BASE.replace(*change)).startswith(message)



def test_a_matrix_value_that_breaks_a_shells_quoting_is_refused_when_the_file_is_read():
    # Found as a traceback (ValueError from shlex) in the middle of a run.
    assert refusal(BASE.replace("d = [5, 10]", "d = [5, \"1'0\"]")) == (
        "exp.toml:3: [[shell]] 1 'run' with configuration d=1'0: No closing quotation (in 'tm-delay 1'0')")

ASSERT = BASE + '[[assert]]\nmetric = "goodput_mbps"\n'


@pytest.mark.parametrize("text,message", [
    (ASSERT + "above = 5\nbelow = 2\n", "exp.toml:12: [[assert]] 1: no value is below 2 and above 5: it could never "
                                        "hold"),
    (ASSERT + "above = 5\nbelow = 5\n", "exp.toml:12: [[assert]] 1: no value is below 5 and above 5"),
    (ASSERT + 'above = 5\nconfig = "d=7*"\n', "exp.toml:12: [[assert]] 1: 'config' 'd=7*' matches no configuration "
                                              "(they are d=5, d=10)"),
    (BASE + '[plot]\nmetrics = ["goodput_mbps", 1]\n', "exp.toml:10: each of [plot] 'metrics' must be str, not int"),
    (BASE + '[plot]\nmetrics = "goodput_mbps"\n', "exp.toml:10: [plot] 'metrics' must be list, not str"),
    (BASE + '[plot]\ntimeseries = "d=7/r1"\n', "exp.toml:10: [plot] 'timeseries' 'd=7/r1' is no run of the "
                                                "experiment (they are d=5/r1, d=10/r1)"),
], ids=["bounds", "equal bounds", "config", "plot metric type", "plot metrics type", "timeseries"])
def test_an_assertion_or_plot_that_could_never_be_met_is_refused_at_once(text, message):
    assert refusal(text).startswith(message)


@pytest.mark.parametrize("lines,message", [
    ('[[workload.metrics]]\nregex = "x"\n', "exp.toml:7: [[workload.metrics]] 1 needs name = \"...\""),
    ('[[workload.metrics]]\nname = "t"\nregex = "x"\n[[workload.metrics]]\nname = "t"\njson = "a"\n',
     "exp.toml:11: [[workload.metrics]] 2: the metric 't' is named twice"),
    ('[[workload.metrics]]\nname = "t"\nregex = "(x"\n', "exp.toml:9: [[workload.metrics]] 1 ('t'): bad regex"),
    ('[[workload.metrics]]\nname = "t"\nregex = "x"\nscale = nan\n',
     "exp.toml:10: [[workload.metrics]] 1 ('t'): scale must be a finite number"),
    ('[[workload.metrics]]\nname = "t"\nregex = "x"\nsauce = "stdout"\n',
     "exp.toml:10: [[workload.metrics]] 1: unknown key 'sauce'"),
])
def test_workload_metrics_errors_name_their_line(lines, message):
    text = 'name = "x"\n[[shell]]\nrun = "tm-delay 5"\n[workload]\nkind = "command"\nclient = "true"\n' + lines
    assert refusal(text).startswith(message)


def test_a_metric_no_run_reports_is_refused_naming_the_line():
    exp = experiment.parse(ASSERT + "above = 1\n[plot]\nmetrics = [\"rtt_ms\", \"goodput_mbps\"]\n", "exp.toml")
    links = runner.link_metric_names(2, "downlink")
    experiment.check_metrics(exp, links)  # a metric, a sample: both reported
    for change, message in [
        (('metric = "goodput_mbps"', 'metric = "goodput"'), "exp.toml:10: [[assert]] 1: no run reports a metric "
                                                             "'goodput' (they report bytes, completion_s, goodput_mbps"),
        (('metric = "goodput_mbps"', 'metric = "link1_down_drops"'), "exp.toml:10: [[assert]] 1: no run reports a "
                                                                      "metric 'link1_down_drops'"),
        (('"rtt_ms"', '"rtt"'), "exp.toml:13: [plot] 'metrics': no run reports 'rtt' (metrics: bytes,"),
    ]:
        bad = experiment.parse(ASSERT.replace(*change) + "above = 1\n[plot]\nmetrics = [\"rtt_ms\", \"goodput_mbps\"]\n"
                               .replace(*change), "exp.toml")
        with pytest.raises(UsageError) as e:
            experiment.check_metrics(bad, links)
        assert str(e.value).startswith(message), str(e.value)
    link = experiment.parse(ASSERT.replace('"goodput_mbps"', '"link2_down_drops"') + "above = 1\n", "exp.toml")
    experiment.check_metrics(link, links)


@pytest.fixture
def tools(tmp_path, monkeypatch):
    """A tm-delay that only prints a --help naming the options tm-run looks for, found before PATH."""
    d = tmp_path / "bin"
    d.mkdir()
    tool = d / "tm-delay"
    tool.write_text("#!/bin/sh\necho 'usage: tm-delay [--seed N] [--outside CMD] [--outside-wait D] MS'\n")
    tool.chmod(0o755)
    monkeypatch.setattr(tracemod_run, "TOOLS_DIR", str(d))
    return d


def run_main(capsys, *argv):
    """cli.main(ARGV): (status, stdout, stderr)."""
    status = cli.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return status, out, err


def test_a_metric_no_run_reports_stops_tm_run_before_the_first_run(tmp_path, tools, capsys):
    path = tmp_path / "e.toml"
    path.write_text(ASSERT.replace('"goodput_mbps"', '"goodput"') + "above = 1\n")
    status, out, err = run_main(capsys, path, "-o", tmp_path / "out")
    assert (status, out) == (2, "") and err.startswith(f"tm-run: {path}:10: [[assert]] 1: no run reports a metric "
                                                      "'goodput'"), err
    assert not os.path.exists(tmp_path / "out")
    status, out, err = run_main(capsys, path, "-o", tmp_path / "out", "--dry-run")  # the dry run checks it too
    assert status == 2 and "no run reports a metric 'goodput'" in err


BROWSER_RUN = 'name = "b"\n[[shell]]\nrun = "tm-delay 1"\n[workload]\nkind = "browser"\nloads = 1\n'


@pytest.mark.parametrize("lines,message", [
    ('site = "nowhere"', "[workload] site {d}/nowhere: no such file or directory"),
    ('site = "e.toml"', "[workload] site {d}/e.toml: not a directory"),
    ('replay = "nowhere.har"\nurls = ["https://a.test/"]', "[workload] replay {d}/nowhere.har: no such file or "
                                                           "directory"),
    ('server = "https://a.test/"\nca = "nowhere.pem"', "[workload] ca {d}/nowhere.pem: no such file or directory"),
    ('server = "https://a.test/"\nca = "."', "[workload] ca {d}/.: not a file"),
    ('server = "https://a.test/"\nrecord = "no/rec"', "[workload] record {d}/no/rec: its directory does not exist"),
])
def test_a_browser_path_that_is_not_there_stops_tm_run_and_its_dry_run(tmp_path, tools, capsys, lines, message):
    """Found passing the dry run, and then failing every run."""
    path = tmp_path / "e.toml"
    path.write_text(BROWSER_RUN + lines + "\n")
    for dry in ([], ["--dry-run"]):
        status, out, err = run_main(capsys, path, "-o", tmp_path / "out", *dry)
        assert (status, out, err) == (2, "", f"tm-run: {message.format(d=tmp_path)}\n")
        assert not os.path.exists(tmp_path / "out")


def test_an_empty_experiment_says_what_is_missing(tmp_path, tools, capsys):
    path = tmp_path / "e.toml"
    path.write_text("")
    assert run_main(capsys, path, "-o", tmp_path / "out") == (2, "", f"tm-run: {path}: 'name' is missing: it must "
                                                                      "be str\n")


def test_an_output_that_cannot_be_a_directory_is_one_line(tmp_path, tools, capsys):
    path = tmp_path / "e.toml"
    path.write_text(BASE)
    afile = tmp_path / "afile"
    afile.write_text("")
    for out, message in [(afile, f"tm-run: {afile} exists and is not a directory: use another -o\n"),
                         (afile / "sub", f"tm-run: cannot create {afile}/sub: Not a directory: use another -o\n"),
                         ("/proc/tracemod-test/out", "tm-run: cannot create /proc/tracemod-test/out: ")]:
        status, _, err = run_main(capsys, path, "-o", out)
        assert status == 2 and err.startswith(message) and err.count("\n") == 1, err


@pytest.mark.parametrize("argv,message", [
    (["--server", "--port", "99999"], "tm-run: invalid --port '99999': expected a port from 1 to 65535\n"),
    (["--server", "--param", "server_port=99999"], "tm-run: --param 'server_port' must be from 1 to 65535, not 99999\n"),
    (["--server", "--param", "sever=1"], "tm-run: --param 'sever' is no parameter of kind command (known: "),
    (["--server", "--param", "server=true"], "tm-run: --param 'server' must be a string, not True\n"),
    (["--client", "--param", "client='true'", "--param", "seconds=nan"],
     "tm-run: --param 'seconds' must be a finite number, not nan\n"),
])
def test_workload_command_lines_are_one_line_errors(capsys, argv, message):
    status, _, err = run_main(capsys, "workload", "command", *argv)
    assert status == 2 and err.startswith(message) and err.count("\n") == 1, err


def test_a_server_that_exited_is_reported_with_its_status_and_stderr(tmp_path):
    ready = str(tmp_path / "server.ready")
    (tmp_path / "server.err").write_text("Traceback (most recent call last):\n  ...\nOSError: Address in use\n")
    (tmp_path / "server.status").write_text("1\n")
    start = time.monotonic()
    with pytest.raises(RunError) as e:
        common.wait_ready(ready, 15)
    assert str(e.value) == ("the server exited with status 1 before it was ready: Traceback (most recent call "
                            "last): | ... | OSError: Address in use")
    assert time.monotonic() - start < 1  # not after the 15 s it would wait for a server that is still starting
    (tmp_path / "server.err").write_text("")
    with pytest.raises(RunError, match="status 1 before it was ready: [(]nothing on its stderr[)]$"):
        common.wait_ready(ready, 15)


BROWSER = '''name = "x"
[workload]
kind = "browser"
urls = ["https://a.example/"]
'''


@pytest.mark.parametrize("extra,message", [
    ('replay_options = ["--deterministic"]', "replay_options are tm-webreplay's: give them with replay"),
    ('replay = "r.har"\nreplay_options = ["--strict", ""]', "'replay_options' must be an array of non-empty strings"),
])
def test_replay_options_go_with_a_replay(extra, message):
    assert message in refusal(BROWSER + extra + "\n")
