"""The pytest plugin's stack (tracemod_run/harness.py) without starting one: levels as written, the command
line it makes, and the reason it gives when the shells refuse to start (the real stacks: test_pytest_plugin)."""
import pytest

from tracemod_run import harness
from tracemod_run.harness import Stack, StackError, StackUnavailable


@pytest.fixture
def tools(tmp_path, monkeypatch):
    for name in harness.SHELLS:
        path = tmp_path / "bin" / name
        path.parent.mkdir(exist_ok=True)
        path.write_text("#!/bin/sh\n")
        path.chmod(0o755)
    monkeypatch.setenv("TM_TOOLS_DIR", str(tmp_path / "bin"))
    return tmp_path / "bin"


def test_levels_are_shells_as_written_and_the_stack_puts_the_separators(tools, tmp_path):
    stack = Stack("tm-delay 40", ["tm-link", "--uplink-rate", "8mbit", "--downlink-rate", "8mbit"],
                  directory=tmp_path / "s", outside="iperf3 -s")
    argv = stack.argv()
    agent = argv.index("python3")
    assert argv[:agent] == [str(tools / "tm-delay"), "40", "--outside", "iperf3 -s", "--",
                            str(tools / "tm-link"), "--uplink-rate", "8mbit", "--downlink-rate", "8mbit",
                            "--uplink-log", str(tmp_path / "s" / "level2-uplink.log"),
                            "--downlink-log", str(tmp_path / "s" / "level2-downlink.log"), "--"]
    assert argv[agent:agent + 3] == ["python3", "-S", "-c"] and "def main():" in argv[agent + 3]
    with pytest.raises(StackError, match="'sleep 1' is not a tracemod shell"):
        Stack("sleep 1", directory=tmp_path)
    with pytest.raises(StackError, match="the stack puts the '--' between them"):
        Stack("tm-delay 5 -- tm-loss uplink 0.1", directory=tmp_path)
    with pytest.raises(StackError, match="at least one shell"):
        Stack(directory=tmp_path)


@pytest.mark.parametrize("said,kind,reason", [
    ("tm-link: --uplink-rate: 'fast' is not a rate\nusage: tm-link ...\nTry 'tm-link --help' for more information.\n",
     StackError, "tm-link: --uplink-rate: 'fast' is not a rate"),
    ("tm-delay: the host does not forward (...)\ntm-delay: create user namespace: Operation not permitted: "
     "AppArmor restricts unprivileged user namespaces\n", StackUnavailable, "AppArmor restricts"),
    ("", StackError, "exit status 2"),
])
def test_a_stack_that_did_not_start_says_the_tools_own_reason(tmp_path, said, kind, reason):
    stack = Stack("tm-delay 1", directory=tmp_path)
    stack.stderr_path, stack.returncode = str(tmp_path / "stack.err"), 2
    (tmp_path / "stack.err").write_text(said)
    error = stack._start_failure()
    assert type(error) is kind and reason in str(error) and "Try " not in str(error), str(error)


def test_steps_become_tm_modulates_schedule_line_by_line():
    from tracemod_run.pytest_plugin import LAST_HOLD, modulate_schedule
    assert modulate_schedule([("0s", "rate=10mbit delay=20ms"), ("2s", "rate=1mbit"), ("2.5s", "off"),
                              ("3500ms", "on")]) == (
        "2000000000ns rate=10mbit delay=20ms\n500000000ns rate=1mbit\n1000000000ns off\n"
        f"{LAST_HOLD}ns\n")
    # Before the first step the link is as tm-modulate starts it: a line that names nothing.
    assert modulate_schedule([("1s", "loss=1%")]) == f"1000000000ns\n{LAST_HOLD}ns loss=1%\n"
    with pytest.raises(ValueError, match="must increase"):
        modulate_schedule([("2s", "rate=1mbit"), ("1s", "rate=2mbit")])
    with pytest.raises(ValueError, match="not 'fast'"):
        modulate_schedule([("0s", "fast")])
    with pytest.raises(ValueError, match="a step's time 'soon'"):
        modulate_schedule([("soon", "rate=1mbit")])
