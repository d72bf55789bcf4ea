"""bench/run's published tables: `benchlib publish` writes a run's rows into bench/README.md and its headline rows
into README.md between the marker lines only, and `benchlib stale` says when the published table was measured on
other code than the tree's (a commit that only lands the tables is the same code)."""
import os
import shutil
import subprocess
import sys

import pytest

TOP = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
BENCHLIB = os.path.join(TOP, "bench", "benchlib.py")
sys.path.insert(0, os.path.join(TOP, "bench"))
import benchlib  # noqa: E402


def benchlib_run(*args, cwd=None):
    return subprocess.run([sys.executable, BENCHLIB, *args], capture_output=True, text=True, cwd=cwd, timeout=60)


def git(repo, *args):
    """Runs git in REPO; returns HEAD's short name, if there is one yet."""
    subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", *args], check=True,
                   capture_output=True)
    return subprocess.run(["git", "-C", str(repo), "rev-parse", "--short", "HEAD"], capture_output=True,
                          text=True).stdout.strip()


@pytest.fixture
def tree(tmp_path):
    """A repository holding the two READMEs (as committed) and a code file."""
    os.mkdir(tmp_path / "bench")
    shutil.copy(os.path.join(TOP, "README.md"), tmp_path / "README.md")
    shutil.copy(os.path.join(TOP, "bench", "README.md"), tmp_path / "bench" / "README.md")
    (tmp_path / "code.cc").write_text("int main() {}\n")
    git(tmp_path, "init", "-q")
    git(tmp_path, "add", ".")
    return tmp_path


def rows(n_extra=0):
    """A run's rows: every headline figure, then others."""
    figures = benchlib.HEADLINE + [f"other figure {i}" for i in range(n_extra)]
    return "".join(f"{f}\t{i}.5 Gbit/s\t{i} Gbit/s\t0.{i}x\t-\n" for i, f in enumerate(figures))


def publish(tree, tsv_text, machine):
    (tree / "results.tsv").write_text(tsv_text)
    return benchlib_run("publish", str(tree / "results.tsv"), machine, str(tree))


def test_publish_writes_between_the_markers_only(tree):
    before = (tree / "README.md").read_text()
    r = publish(tree, rows(3), "tracemod abc1234, Linux 6.18, Some CPU x 2, 2026-11-29")
    assert r.returncode == 0, r.stderr
    readme, bench = (tree / "README.md").read_text(), (tree / "bench" / "README.md").read_text()
    for text in (readme, bench):
        assert "Measured by `sudo bench/run` on tracemod abc1234, Linux 6.18, Some CPU x 2, 2026-11-29." in text
    outside = before[:before.index(benchlib.BEGIN)] + before[before.index(benchlib.END):]
    assert readme[:readme.index(benchlib.BEGIN)] + readme[readme.index(benchlib.END):] == outside
    headline = readme[readme.index(benchlib.BEGIN):readme.index(benchlib.END)]
    assert [l.split("|")[1].strip() for l in headline.splitlines() if l.startswith("| ")][1:] == benchlib.HEADLINE
    assert "other figure 2" in bench and "other figure" not in headline
    assert "not run (no MAHIMAHI_BINDIR)" in headline  # Mahimahi's column, when the run measured none


def test_the_mahimahi_column_holds_the_same_runs_mahimahi_rows(tree):
    mm = "Mahimahi TCP up, mm-delay 0\t1.81 Gbit/s\t20.1 Gbit/s\t0.09x\t-\n"
    r = publish(tree, rows() + mm, "tracemod abc1234, x")
    assert r.returncode == 0, r.stderr
    readme = (tree / "README.md").read_text()
    lines = readme[readme.index(benchlib.BEGIN):readme.index(benchlib.END)].splitlines()
    row = next(l for l in lines if l.startswith("| TCP up, tm-delay 0 "))
    assert row.rstrip(" |").endswith("1.81 Gbit/s (0.09x)"), row
    down = next(l for l in lines if l.startswith("| TCP down, tm-delay 0 "))
    assert down.rstrip(" |").endswith("| -"), down  # a row Mahimahi was not measured for


def test_publish_says_which_headline_rows_a_run_lacked_and_refuses_a_file_without_markers(tree):
    r = publish(tree, rows().replace("TCP up, tm-delay 0\t", "renamed\t"), "tracemod abc1234, x")
    assert r.returncode == 0 and "no figure for headline rows ['TCP up, tm-delay 0']" in r.stderr
    (tree / "README.md").write_text("# no markers\n")
    r = publish(tree, rows(), "tracemod abc1234, x")
    assert r.returncode != 0 and "README.md has no" in r.stderr


def test_stale_is_silent_on_the_measured_code_and_speaks_when_the_code_changed(tree):
    measured = git(tree, "commit", "-qm", "code")
    assert publish(tree, rows(), f"tracemod {measured}, Linux 6.18, CPU x 2, 2026-11-29").returncode == 0
    git(tree, "commit", "-qam", "the tables")  # lands only the tables: the same code
    head = git(tree, "rev-parse", "HEAD")
    stale = benchlib_run("stale", str(tree / "bench" / "README.md"), head)
    assert stale.returncode == 0 and stale.stdout == "", stale.stdout + stale.stderr
    (tree / "code.cc").write_text("int main() { return 1; }\n")
    changed = git(tree, "commit", "-qam", "code changed")
    stale = benchlib_run("stale", str(tree / "bench" / "README.md"), changed)
    assert f"table was measured on {measured}, this tree is {changed}" in stale.stdout
    dirty = benchlib_run("stale", str(tree / "bench" / "README.md"), measured + "-dirty")
    assert "this tree is" in dirty.stdout


@pytest.mark.parametrize("values,printed", [
    (["90", "100"], "90%"),
    (["9", "10", "8", "10", "12", "10"], "90% (median of 3 pairs, 80-120%)"),
    (["5", "10", "7", "0", "6", "10"],
     "50% (median of 2 pairs, 50-60%; 1 of 3 pairs void: their reference measured 0)"),
    (["3", "0"], "n/a (1 of 1 pairs void: their reference measured 0)"),
])
def test_paired_shows_the_median_ratio_and_says_which_pairs_had_no_reference(values, printed):
    r = benchlib_run("paired", *values)
    assert (r.returncode, r.stdout.strip()) == (0, printed), r.stderr


def test_median_is_one_of_the_values_and_paired_wants_pairs():
    assert benchlib_run("median", "3", "1", "2", "4").stdout.strip() == "2.00"
    r = benchlib_run("paired", "1", "2", "3")
    assert r.returncode != 0 and "give A B pairs" in r.stderr


def test_a_failed_mahimahi_run_is_shown_as_failed_not_as_not_run():
    failed = {"mahimahi: FAILED (exit 1)": ["mahimahi: FAILED (exit 1)", "", "", "", ""]}
    assert benchlib.mahimahi_cell(failed, "TCP up, tm-delay 0") == "bench/mahimahi FAILED (exit 1)"
    assert benchlib.mahimahi_cell(failed, "ping RTT p99, tm-delay 10") == "-"
    assert benchlib.mahimahi_cell({}, "TCP up, tm-delay 0") == "not run (no MAHIMAHI_BINDIR)"
