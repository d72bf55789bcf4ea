"""The suite's own retry rule (conftest.py's `measured`, tests/run's count): a timed check is taken again only
when CPU pressure says the machine was busy, only for a TooSlow, and every retry is recorded in the report and
counted. Pure logic: the pressure is faked, nothing is started."""
import importlib.machinery
import importlib.util
import os
import xml.etree.ElementTree as ET

import pytest

import conftest
from conftest import TooSlow, measured

HERE = os.path.dirname(os.path.abspath(__file__))


class Pressure:
    """A fake cpu_pressure(): SHARE of the wall time waited for a CPU (each reading adds that much of a 1 s
    attempt), or None for a kernel without PSI."""

    def __init__(self, share):
        self.share, self.total = share, 0

    def __call__(self):
        if self.share is None:
            return None
        self.total += int(self.share * 1e6)
        return self.total, self.share


@pytest.fixture
def pressure(monkeypatch):
    ticks = iter(range(10**6))
    monkeypatch.setattr(conftest, "clock", lambda: float(next(ticks)))  # each attempt takes 1 s

    def set_share(share):
        monkeypatch.setattr(conftest, "cpu_pressure", Pressure(share))

    return set_share


def failing(times, exc):
    calls = []

    def check():
        calls.append(1)
        if len(calls) <= times:
            raise exc(f"miss {len(calls)}")
        return "ok"

    return check, calls


def retries(request):
    return [v for k, v in request.node.user_properties if k == "retry"]


def test_a_busy_machine_allows_a_recorded_retry(pressure, request):
    pressure(0.30)
    check, calls = failing(1, TooSlow)
    assert measured(check) == "ok" and len(calls) == 2
    [text] = retries(request)
    assert text.startswith("attempt 1 of 3 missed: miss 1 [CPU pressure some 30.0%") and "busy" in text
    request.node.user_properties.clear()  # this test's own report need not count as a retry


def test_a_quiet_machine_allows_no_retry(pressure, request):
    pressure(0.01)
    check, calls = failing(1, TooSlow)
    with pytest.raises(TooSlow, match=r"miss 1\n\[attempt 1 of 3; CPU pressure some 1.0%.*not taken again\]"):
        measured(check)
    assert len(calls) == 1 and retries(request) == []


def test_without_pressure_figures_nothing_is_retried(pressure, request):
    pressure(None)
    check, calls = failing(1, TooSlow)
    with pytest.raises(TooSlow, match="no CPU pressure"):
        measured(check)
    assert len(calls) == 1 and retries(request) == []


def test_a_failure_that_is_not_a_timing_miss_is_never_retried(pressure, request):
    pressure(0.90)
    check, calls = failing(1, AssertionError)
    with pytest.raises(AssertionError, match="miss 1"):
        measured(check)
    assert len(calls) == 1 and retries(request) == []


def test_the_last_attempt_fails_however_busy(pressure, request):
    pressure(0.90)
    check, calls = failing(3, TooSlow)
    with pytest.raises(TooSlow, match=r"miss 3\n\[attempt 3 of 3"):
        measured(check)
    assert len(calls) == 3 and len(retries(request)) == 2
    request.node.user_properties.clear()


def load_tests_run():
    path = os.path.join(HERE, "..", "run")
    loader = importlib.machinery.SourceFileLoader("tests_run", path)
    module = importlib.util.module_from_spec(importlib.util.spec_from_loader("tests_run", loader))
    loader.exec_module(module)
    return module


def junit(tmp_path, retried_tests):
    suite = ET.Element("testsuite")
    for i in range(6):
        case = ET.SubElement(suite, "testcase", classname="test_x", name=f"test_{i}")
        if i < retried_tests:
            props = ET.SubElement(case, "properties")
            ET.SubElement(props, "property", name="retry", value=f"attempt 1 of 3 missed: slow {i}")
    path = tmp_path / "junit.xml"
    root = ET.Element("testsuites")
    root.append(suite)
    ET.ElementTree(root).write(path)
    return path


@pytest.mark.parametrize("retried_tests", [0, 3, 4])
def test_tests_run_counts_the_tests_that_needed_a_retry(tmp_path, capsys, retried_tests):
    run = load_tests_run()
    tally, retried = run.Tally(), {}
    passed, failed, skips = run.count_junit(junit(tmp_path, retried_tests), retried)
    run.count_retries(retried, tally)
    out = capsys.readouterr().out
    assert (passed, failed, len(retried)) == (6, 0, retried_tests)
    assert out.count("RETRIED: test_x::test_") == retried_tests
    assert f"{retried_tests} integration tests needed a retry (at most {run.MAX_RETRIED} may)" in out
    assert tally.failed == (1 if retried_tests > run.MAX_RETRIED else 0)
