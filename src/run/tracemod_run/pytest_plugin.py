"""tracemod's pytest plugin: a real, trace-driven network around an unmodified program, from a test.

    def test_upload_survives_loss(tracemod_stack):
        stack = tracemod_stack("tm-delay 40", "tm-loss uplink 0.05", outside=["my-server", "--port", "9000"])
        r = stack.run(["my-client", "--server", stack.env["TM_OUTSIDE"] + ":9000"], timeout=60)
        assert r.returncode == 0, r.stderr

Fixtures:
  tracemod_stack(*levels, outside=None, logs=True, env=None) -> harness.Stack: the shells as a user writes them
      ("tm-link Verizon-LTE-short.up Verizon-LTE-short.down"); run()/popen() start commands inside the innermost
      one, `outside` is the far end (the outermost shell's --outside, at $TM_OUTSIDE); summary() gives each
      tm-link level's log summary, counters() the live ones. Every stack ends with its test, passed or not.
  tracemod_schedule(steps) -> "tm-onoff --schedule FILE": a level that takes the link off and on at the steps'
      times from the stack's start, e.g. [("1s", "off"), ("4s", "on")] for a 3 s outage one second in.

Where this machine cannot make the namespaces (user namespaces off, Ubuntu's AppArmor restriction), a test that
asks for a stack is skipped with tracemod's reason, not failed. The tools are found in $TM_TOOLS_DIR, beside
tm-run, or in PATH.
"""
import os

import pytest

from .harness import Stack, StackUnavailable


@pytest.fixture
def tracemod_stack(tmp_path_factory):
    stacks = []
    base = tmp_path_factory.mktemp("tracemod")

    def make(*levels, outside=None, outside_wait=None, logs=True, env=None, start=True):
        stack = Stack(*levels, directory=base / f"stack{len(stacks) + 1}", outside=outside,
                      outside_wait=outside_wait, logs=logs, env=env)
        stacks.append(stack)
        if start:
            try:
                stack.start()
            except StackUnavailable as e:
                pytest.skip(f"tracemod cannot make its namespaces here: {e}")
        return stack

    yield make
    for stack in stacks:
        stack.close()


@pytest.fixture
def tracemod_schedule(tmp_path_factory):
    count = [0]

    def make(steps):
        count[0] += 1
        path = tmp_path_factory.mktemp("tracemod-schedule") / f"schedule{count[0]}.txt"
        with open(path, "w") as f:
            for when, state in steps:
                if state not in ("on", "off"):
                    raise ValueError(f"a step's state is 'on' or 'off', not {state!r}")
                f.write(f"{when} {state}\n")
        os.chmod(path, 0o644)
        return f"tm-onoff --schedule {path}"

    return make
