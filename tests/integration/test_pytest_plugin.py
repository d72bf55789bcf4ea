"""tm-run's pytest plugin (src/run/tracemod_run/pytest_plugin.py, harness.py, agent.py) as a developer uses
it: examples/pytest, copied where nothing of the project's test set-up is in sight (no conftest.py, no ini
file), run by pytest with the plugin, as root and as the unprivileged user. The outage example fails against a
client that gives up; a failing test leaves none of its stack's processes; a machine that refuses user
namespaces skips the tests with tracemod's reason. (The installed package's entry point, which loads the plugin
without -p, is test_package's.)"""
import os
import shutil
import subprocess
import time

from conftest import BINDIR, TRACES, sh

EXAMPLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples", "pytest")
PLUGIN = ["-p", "no:tracemod", "-p", "tracemod_run.pytest_plugin", "-p", "no:cacheprovider"]  # the tree's, not an installed one


def environment():
    """The plugin's package, the staged tools and the source tree's traces (installed, none of this is needed)."""
    return {"PYTHONPATH": os.path.realpath(os.path.join(BINDIR, "..", "python")), "TM_TOOLS_DIR": BINDIR,
            "TM_TRACE_PATH": TRACES}


def copied(public_tmp, name="examples"):
    target = public_tmp / name
    shutil.copytree(EXAMPLES, target)
    for root, dirs, files in os.walk(target):
        os.chmod(root, 0o755)
        for f in files:
            os.chmod(os.path.join(root, f), 0o755 if f.endswith("client.py") else 0o644)
    return target


def pytest_argv(directory, *args):
    return ["/usr/bin/python3", "-m", "pytest", *PLUGIN, "-q", "-rs", f"--rootdir={directory}",
            f"--basetemp={directory}-tmp", *args, str(directory)]


def test_the_examples_pass_as_a_developer_runs_them(who, public_tmp):
    d = copied(public_tmp)
    r = who.run(pytest_argv(d), env=environment(), timeout=180)
    assert r.returncode == 0 and "3 passed" in r.stdout, r.stdout[-3000:] + r.stderr[-2000:]


def test_the_outage_example_fails_with_a_client_that_gives_up(root, public_tmp):
    d = copied(public_tmp)
    r = root.run(pytest_argv(d, "-k", "outage"), env=dict(environment(), EXAMPLE_RETRIES="0"), timeout=120)
    assert r.returncode == 1 and "1 failed" in r.stdout, r.stdout[-3000:]
    assert "the client gave up: attempt 1: <urlopen error timed out>" in r.stdout, r.stdout[-3000:]


FAILING = '''
import sys
def test_fails_with_its_stack_running(tracemod_stack):
    stack = tracemod_stack("tm-delay 5", "tm-loss uplink 0.001", outside=[sys.executable, "-c",
                           "import socket, time; s = socket.create_server(('0.0.0.0', 8731)); time.sleep(1731)"])
    stack.popen(["sleep", "1732"])
    assert stack.run(["sh", "-c", "exit 7"]).returncode == 0


def test_the_next_test_finds_none_of_it():  # the fixture's teardown, not the end of pytest, ended it
    import subprocess, time
    deadline = time.monotonic() + 5
    while subprocess.run(["pgrep", "-f", "sleep 1732|time.sleep.1731"]).returncode == 0:
        assert time.monotonic() < deadline, "the failed test's stack still runs"
        time.sleep(0.1)
'''


def processes(marker):
    r = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True)
    return r.stdout.split()


def test_a_failing_test_leaves_nothing_of_its_stack(who, public_tmp):
    d = public_tmp / "failing"
    d.mkdir()
    (d / "test_failing.py").write_text(FAILING)
    os.chmod(d, 0o777)
    before = set(os.listdir("/run/netns")) if os.path.isdir("/run/netns") else set()
    r = who.run(pytest_argv(d), env=environment(), timeout=120)
    assert r.returncode == 1 and "1 failed, 1 passed" in r.stdout and "assert 7 == 0" in r.stdout, r.stdout[-3000:]
    deadline = time.monotonic() + 5
    while (processes("sleep 1732") or processes("time.sleep\\(1731\\)")) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert processes("sleep 1732") == [] and processes("time.sleep\\(1731\\)") == []
    assert (set(os.listdir("/run/netns")) if os.path.isdir("/run/netns") else set()) == before


def test_no_user_namespaces_skip_with_tracemods_reason(user, public_tmp):
    d = copied(public_tmp)
    inner = sh('echo 0 > /proc/sys/user/max_user_namespaces && exec "$@"', *pytest_argv(d, "-k", "outage"))
    r = user.run(["unshare", "--user", "--map-root-user", *inner], env=environment(), timeout=60)
    assert r.returncode == 0 and "1 skipped" in r.stdout, r.stdout[-3000:] + r.stderr[-2000:]
    assert "tracemod cannot make its namespaces here" in r.stdout and "max_user_namespaces" in r.stdout, r.stdout


# A rate changed while the test runs, from the test's own steps (tm-modulate's schedule): a 1400-byte ping's
# 1428-byte packets take 2 x 1.428 ms at 8 Mbit/s on top of the 2 x 5 ms, and 2 x 11.424 ms at 1 Mbit/s once the
# second step began. Never less; a few ms more for the machine's wake-ups.
RATE_STEPS = '''
import re, time
def rtts(stack):
    r = stack.run(["ping", "-n", "-c", "3", "-i", "0.2", "-s", "1400", stack.env["TM_BASE"]], timeout=15)
    assert r.returncode == 0, r.stdout + r.stderr
    return [float(t) for t in re.findall(r"time=([\\d.]+) ms", r.stdout)]

def test_the_rate_follows_the_steps(tracemod_stack, tracemod_schedule):
    level = tracemod_schedule([("0s", "rate=8mbit delay=5ms"), ("2s", "rate=1mbit")])
    assert level.startswith("tm-modulate "), level
    stack = tracemod_stack(level)
    fast = rtts(stack)
    assert time.monotonic() - stack.started < 2, "the first pings ran past the first step"
    # The schedule starts with the shell's link, after stack.started by the shell's set-up: a second's margin.
    time.sleep(max(0.0, stack.started + 3.0 - time.monotonic()))
    slow = rtts(stack)
    print("fast", fast, "slow", slow)
    assert len(fast) == len(slow) == 3
    assert all(12.85 <= t < 12.85 + 6 for t in fast), fast
    assert all(32.84 <= t < 32.84 + 6 for t in slow), slow
'''


def test_a_rate_changes_at_the_tests_own_steps(who, public_tmp):
    d = public_tmp / "rate"
    d.mkdir()
    (d / "test_rate.py").write_text(RATE_STEPS)
    os.chmod(d, 0o777)
    r = who.run(pytest_argv(d, "-s"), env=environment(), timeout=120)
    assert r.returncode == 0 and "1 passed" in r.stdout, r.stdout[-3000:] + r.stderr[-2000:]
