"""tm-trace: validate, stats and make, on hand-made bad traces, on traces it makes itself, and on the project's
real LTE traces (their figures checked against the table in traces/README)."""
import os
import re

import pytest

from conftest import TRACES

# name, text, line of the error, what the error line must say
BAD_TRACES = [
    ("empty-line", "1\n\n2\n", 2, "empty line"),
    ("empty-last-line", "1\n2\n\n", 3, "empty line"),
    ("crlf", "1\r\n2\r\n", 1, "dos2unix"),
    ("junk", "1\n2\nabc\n", 3, "'abc'"),
    ("plus", "+1\n", 1, "'+1'"),
    ("minus", "1\n-2\n", 2, "'-2'"),
    ("leading-space", "1\n 2\n", 2, "' 2'"),
    ("decimal", "1\n2.5\n", 2, "'2.5'"),
    ("too-large", "1\n4294967296\n", 2, "too large"),
    ("decreasing", "1\n5\n3\n", 3, "3 after 5"),
    ("zero-length", "0\n0\n", 2, "nonzero time"),
]


def write(directory, name: str, text: str) -> str:
    path = directory / name
    path.write_bytes(text.encode())
    return str(path)


def trace_tool(who, tools, *args):
    return who.run(tools.tool("tm-trace", *args))


def ok_line(path: str, opportunities: int, period: int, mbps: str) -> str:
    return f"{path}: ok, {opportunities} opportunities over {period} ms, mean {mbps} Mbit/s"


@pytest.mark.parametrize("name,text,line,what", BAD_TRACES, ids=[b[0] for b in BAD_TRACES])
def test_validate_names_file_and_line_of_a_bad_trace(root, tools, public_tmp, name, text, line, what):
    path = write(public_tmp, name, text)
    r = trace_tool(root, tools, "validate", path)
    assert r.returncode == 2, r
    assert r.stdout == ""
    assert len(r.stderr.splitlines()) == 1, r.stderr
    assert r.stderr.startswith(f"{path}:{line}: ") and what in r.stderr, r.stderr


@pytest.mark.parametrize("case", ["empty", "missing", "directory"])
def test_validate_files_that_are_not_traces(root, tools, public_tmp, case):
    path = str(public_tmp / case)
    expected = {"empty": f"{path}: empty file: no timestamps",
                "missing": f"{path}: cannot open: No such file or directory",
                "directory": f"{path}: cannot open: Is a directory"}[case]
    if case == "empty":
        write(public_tmp, case, "")
    elif case == "directory":
        os.mkdir(path)
    r = trace_tool(root, tools, "validate", path)
    assert (r.returncode, r.stdout, r.stderr) == (2, "", expected + "\n")


def test_validate_checks_every_file_and_accepts_a_last_line_without_newline(root, tools, public_tmp):
    good = write(public_tmp, "good", "1\n1\n3")
    bad = write(public_tmp, "bad", "2\n1\n")
    r = trace_tool(root, tools, "validate", bad, good)
    assert r.returncode == 2
    assert r.stdout == ok_line(good, 3, 3, "12.00") + "\n"
    assert r.stderr == f"{bad}:2: decreasing time: 1 after 2\n"


def test_stats_of_a_bad_trace_exits_2_with_file_and_line(root, tools, public_tmp):
    bad = write(public_tmp, "bad", "1\n2\n3\r\n")
    good = write(public_tmp, "good", "1\n2\n")
    r = trace_tool(root, tools, "stats", bad, good)
    assert r.returncode == 2
    assert r.stderr.startswith(f"{bad}:3: CRLF") and len(r.stderr.splitlines()) == 1, r.stderr
    assert r.stdout.startswith(f"{good}:\n  duration: 2 ms\n"), r.stdout


def make(root, tools, directory, name, *args) -> str:
    path = str(directory / name)
    r = trace_tool(root, tools, "make", *args, "-o", path)
    assert (r.returncode, r.stdout, r.stderr) == (0, "", ""), r
    return path


def lines_of(path: str) -> list:
    with open(path, encoding="ascii") as f:
        return [int(v) for v in f.read().splitlines()]


def stats_of(root, tools, *args) -> str:
    r = trace_tool(root, tools, "stats", *args)
    assert r.returncode == 0 and r.stderr == "", r
    return r.stdout


def window_rates(stats: str, window_ms: int) -> dict:
    m = re.search(rf"rate over {window_ms} ms windows \((\d+)\): min ([\d.]+), p5 ([\d.]+), p50 ([\d.]+), "
                  rf"p95 ([\d.]+), max ([\d.]+) Mbit/s", stats)
    assert m, stats
    return dict(zip(["windows", "min", "p5", "p50", "p95", "max"], [float(g) for g in m.groups()]))


def test_make_constant_rate_round_trip(root, tools, public_tmp):
    path = make(root, tools, public_tmp, "12mbit", "--rate", "12mbit", "--duration", "10s")
    assert lines_of(path) == list(range(1, 10001))
    r = trace_tool(root, tools, "validate", path)
    assert (r.returncode, r.stdout) == (0, ok_line(path, 10000, 10000, "12.00") + "\n")
    stats = stats_of(root, tools, path)
    assert f"{path}:\n  duration: 10000 ms\n  opportunities: 10000\n  mean rate: 12.00 Mbit/s\n" in stats
    for window in (100, 1000):
        rates = window_rates(stats, window)
        assert rates["min"] == rates["max"] == 12.0, stats


def test_make_writes_standard_output_without_o(root, tools, public_tmp):
    path = make(root, tools, public_tmp, "file", "--rate", "7mbit", "--duration", "1s")
    r = trace_tool(root, tools, "make", "--rate", "7mbit", "--duration", "1s")
    assert r.returncode == 0
    with open(path, encoding="ascii") as f:
        assert r.stdout == f.read()


def test_make_low_rate_ends_on_the_period(root, tools, public_tmp):
    # 1 Mbit/s: one opportunity per 12 ms; the 8th (96 ms) moves to 100 ms, so the trace loops every 100 ms.
    path = make(root, tools, public_tmp, "1mbit", "--rate", "1mbit", "--duration", "100ms")
    assert lines_of(path) == [12, 24, 36, 48, 60, 72, 84, 100]


def test_make_steps(root, tools, public_tmp):
    path = make(root, tools, public_tmp, "steps", "--steps", "5mbit:10s,20mbit:10s,2mbit:10s")
    lines = lines_of(path)
    assert len(lines) == 4166 + 16666 + 1666 and lines[-1] == 30000
    r = trace_tool(root, tools, "validate", path)
    assert r.stdout == ok_line(path, 22498, 30000, "9.00") + "\n"
    rates = window_rates(stats_of(root, tools, "--window", "1s", path), 1000)
    assert rates["windows"] == 30
    assert 1.99 <= rates["min"] <= 2.0 and 19.99 <= rates["max"] <= 20.0, rates


def test_make_on_off(root, tools, public_tmp):
    path = make(root, tools, public_tmp, "onoff", "--on-off", "12mbit:2s,off:1s", "--duration", "1min")
    lines = lines_of(path)
    assert len(lines) == 20 * 2000 and lines[-1] == 60000
    # Every opportunity but the last (moved to the end of the trace) lies in an "on" stretch.
    assert all(1 <= v % 3000 <= 2000 for v in lines[:-1])
    r = trace_tool(root, tools, "validate", path)
    assert r.stdout == ok_line(path, 40000, 60000, "8.00") + "\n"
    rates = window_rates(stats_of(root, tools, "-w", "1s,100ms", path), 1000)
    assert (rates["windows"], rates["min"], rates["max"]) == (60, 0.0, 12.0)


def test_make_on_off_once_keeps_the_off_time(root, tools, public_tmp):
    path = make(root, tools, public_tmp, "once", "--on-off", "12mbit:5ms,0:3ms")
    assert lines_of(path) == [1, 2, 3, 4, 8]


def test_make_stalls_hold_opportunities_back_and_release_them_in_a_burst(root, tools, public_tmp):
    path = make(root, tools, public_tmp, "stalls", "--rate", "12mbit", "--duration", "20s", "--stalls", "2s:300ms",
                "--burst-rate", "24mbit", "--seed", "1")
    lines = lines_of(path)
    assert len(lines) == 20000 and lines[-1] == 20000, "the mean rate is the link's"
    gaps = [(a, b - a) for a, b in zip(lines, lines[1:]) if b - a > 1]
    assert 6 <= len(gaps) <= 20 and all(150 <= g <= 451 for _, g in gaps), gaps
    after = [lines.count(a + g + 1) for a, g in gaps]
    assert all(n == 3 for n in after), "each stall is followed by the link's 1 and the burst's 2 per ms"
    again = make(root, tools, public_tmp, "again", "--rate", "12mbit", "--duration", "20s", "--stalls",
                 "2s:300ms", "--burst-rate", "24mbit", "--seed", "1")
    assert lines_of(again) == lines
    r = trace_tool(root, tools, "make", "--rate", "12mbit", "--duration", "20s", "--stalls", "2s:300ms")
    seed = re.fullmatch(r"tm-trace: stalls drawn with --seed (\d+)\n", r.stderr)
    assert r.returncode == 0 and seed, r.stderr
    r2 = trace_tool(root, tools, "make", "--rate", "12mbit", "--duration", "20s", "--stalls", "2s:300ms",
                    "--seed", seed.group(1))
    assert r2.stdout == r.stdout and r2.stderr == ""


def test_make_cannot_write_exits_1(root, tools):
    r = trace_tool(root, tools, "make", "--rate", "12mbit", "--duration", "1s", "-o", "/nonexistent/dir/t")
    assert r.returncode == 1 and r.stderr.startswith("tm-trace: cannot write /nonexistent/dir/t: "), r


BAD_USAGE = [
    ([], "missing subcommand"),
    (["frobnicate"], "'frobnicate'"),
    (["make"], "exactly one of"),
    (["make", "--rate", "12mbit"], "--duration"),
    (["make", "--rate", "12xbit", "--duration", "1s"], "'12xbit'"),
    (["make", "--rate", "0mbit", "--duration", "1s"], "'0mbit'"),
    (["make", "--rate", "12mbit", "--duration", "10"], "'10'"),
    (["make", "--rate", "12mbit", "--duration", "1.5ms"], "'1.5ms'"),
    (["make", "--rate", "12mbit", "--steps", "1mbit:1s"], "exactly one of"),
    (["make", "--steps", "12mbit:1s", "--duration", "5s"], "--steps"),
    (["make", "--on-off", "12mbit"], "'12mbit'"),
    (["make", "--on-off", "12mbit:1s,fast:1s"], "'fast:1s'"),
    (["make", "--rate", "1mbit", "--duration", "5ms"], "no opportunity"),
    (["make", "--bogus"], "--bogus"),
    (["make", "--rate", "12mbit", "--duration", "1s", "--stalls", "2s"], "'2s'"),
    (["make", "--rate", "12mbit", "--duration", "1s", "--stalls", "2s:300ms", "--burst-rate", "x"], "'x'"),
    (["make", "--rate", "12mbit", "--duration", "1s", "--seed", "1"], "need --stalls"),
    (["stats"], "missing FILE"),
    (["stats", "--window", "0ms", "/dev/null"], "'0ms'"),
    (["validate"], "missing FILE"),
    (["validate", "--rate", "1mbit", "/dev/null"], "--rate"),
]


@pytest.mark.parametrize("args,named", BAD_USAGE, ids=[" ".join(a) or "nothing" for a, _ in BAD_USAGE])
def test_bad_usage_exits_2_naming_the_problem(root, tools, args, named):
    r = trace_tool(root, tools, *args)
    assert r.returncode == 2, r
    lines = r.stderr.splitlines()
    assert lines[0].startswith("tm-trace: ") and named in lines[0], r.stderr
    assert lines[1].startswith("usage: tm-trace "), r.stderr
    assert r.stdout == ""


@pytest.mark.parametrize("args,expected", [(["--help"], "usage: tm-trace "), (["make", "--help"], "usage: tm-trace make "),
                                           (["--version"], "tm-trace (tracemod) ")],
                         ids=["help", "make-help", "version"])
def test_help_and_version_exit_0(root, tools, args, expected):
    r = trace_tool(root, tools, *args)
    assert r.returncode == 0 and r.stderr == ""
    assert r.stdout.startswith(expected)


def lte_trace_table() -> list:
    """(file, lines, last ms, mean Mbit/s) from the table in traces/README; none if it is missing
    (test_the_lte_trace_table_was_read then fails, rather than the whole module failing to load)."""
    try:
        with open(os.path.join(TRACES, "README"), encoding="utf-8") as f:
            rows = re.findall(r"^\| (\S+) \| (\d+) \| (\d+) \| ([\d.]+) Mbit/s \|$", f.read(), re.M)
    except OSError:
        return []
    return [(name, int(lines), int(last), mbps) for name, lines, last, mbps in rows]


LTE = lte_trace_table()


def test_the_lte_trace_table_was_read():
    assert len(LTE) == 6, f"expected the six traces listed in {TRACES}/README"


@pytest.mark.parametrize("name,lines,last,mbps", LTE, ids=[s[0] for s in LTE])
def test_real_traces_match_their_readme(root, tools, name, lines, last, mbps):
    path = os.path.join(TRACES, name)
    r = trace_tool(root, tools, "validate", path)
    assert (r.returncode, r.stdout, r.stderr) == (0, ok_line(path, lines, last, mbps) + "\n", "")
    stats = stats_of(root, tools, path)
    assert f"  duration: {last} ms\n  opportunities: {lines}\n  mean rate: {mbps} Mbit/s\n" in stats
    for window in (100, 1000):
        rates = window_rates(stats, window)
        assert rates["windows"] == -(-last // window)
        assert rates["min"] <= rates["p5"] <= rates["p50"] <= rates["p95"] <= rates["max"], rates
        assert rates["min"] <= float(mbps) <= rates["max"], rates


# ---------------------------------------------------------------------------------------------------------
# The project's traces: synthetic ones reproducible, bare names found where `make install` puts them


def test_the_synthetic_traces_are_what_tm_trace_make_writes(root, tools, public_tmp):
    r = root.run([os.path.join(TRACES, "make-synthetic"), tools.path("tm-trace"), str(public_tmp)])
    assert r.returncode == 0, r.stderr
    made = sorted(os.listdir(public_tmp))
    assert len(made) >= 9, made
    for name in made:
        with open(public_tmp / name, "rb") as new, open(os.path.join(TRACES, name), "rb") as committed:
            assert new.read() == committed.read(), f"traces/{name} differs from what make-synthetic writes"


def test_a_bare_trace_name_is_looked_up_in_the_trace_path(root, tools):
    r = root.run(tools.tool("tm-trace", "validate", "Verizon-LTE-short.up"), env={"TM_TRACE_PATH": TRACES})
    assert (r.returncode, r.stderr) == (0, ""), r
    assert r.stdout == ok_line("Verizon-LTE-short.up", 69367, 140000, "5.95") + "\n"
    r = root.run(tools.shell("tm-link", "constant-12mbit", "constant-12mbit", "--once", "-v", cmd=["true"]),
                 env={"TM_TRACE_PATH": f"/nonexistent:{TRACES}"})
    assert r.returncode == 0, r.stderr


def test_a_missing_bare_trace_name_names_every_place_looked_in(root, tools, public_tmp):
    for argv in (tools.tool("tm-trace", "validate", "no-such.trace"),
                 tools.shell("tm-link", "no-such.trace", "constant-12mbit", cmd=["true"])):
        r = root.run(argv, env={"TM_TRACE_PATH": str(public_tmp)})
        assert r.returncode == 2, r
        first = r.stderr.splitlines()[0].removeprefix("tm-link: ")
        assert first.startswith("no-such.trace: cannot open: no such trace (looked in the current directory, "), first
        assert str(public_tmp) in first and "/share/tracemod/traces" in first, first


def test_make_install_installs_the_traces(root, tmp_path):
    builddir = os.environ.get("TM_TEST_BUILDDIR")
    assert builddir, "TM_TEST_BUILDDIR is not set: use tests/run"
    r = root.run(["make", "-C", builddir, "install", f"DESTDIR={tmp_path}"], timeout=120)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    found = [os.path.join(d, f) for d, _, files in os.walk(tmp_path) for f in files
             if d.endswith("/share/tracemod/traces")]
    names = {os.path.basename(f) for f in found}
    assert {"Verizon-LTE-short.up", "TMobile-LTE-short.down", "constant-12mbit", "README"} <= names, names
    for f in found:
        with open(f, "rb") as a, open(os.path.join(TRACES, os.path.basename(f)), "rb") as b:
            assert a.read() == b.read(), f
