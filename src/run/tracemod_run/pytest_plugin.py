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
  tracemod_schedule(steps) -> a level that changes the link at the steps' times from the stack's start:
      "tm-onoff --schedule FILE" for steps that only take it off and on, e.g. [("1s", "off"), ("4s", "on")] for
      a 3 s outage one second in; "tm-modulate FILE" for steps that set its rate, delay, loss or queue with
      tm-modulate's words, e.g. [("0s", "rate=10mbit delay=20ms"), ("2s", "rate=1mbit"), ("5s", "off"),
      ("6s", "on")]: each step keeps what it does not name.

Where this machine cannot make the namespaces (user namespaces off, Ubuntu's AppArmor restriction), a test that
asks for a stack is skipped with tracemod's reason, not failed. The tools are found in $TM_TOOLS_DIR, beside
tm-run, or in PATH.
"""
import os
import re

import pytest

from . import values
from .errors import UsageError
from .harness import Stack, StackUnavailable

LAST_HOLD = 999 * 3600 * values.SECOND  # a schedule's line: far beyond any test


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
        steps = [(str(when), str(state)) for when, state in steps]
        if not steps:
            raise ValueError("a schedule needs at least one step")
        count[0] += 1
        path = tmp_path_factory.mktemp("tracemod-schedule") / f"schedule{count[0]}.txt"
        onoff = all(state in ("on", "off") for _, state in steps)
        with open(path, "w") as f:
            f.write("".join(f"{when} {state}\n" for when, state in steps) if onoff else modulate_schedule(steps))
        os.chmod(path, 0o644)
        return f"tm-onoff --schedule {path}" if onoff else f"tm-modulate {path}"

    return make


def modulate_schedule(steps):
    """tm-modulate's schedule for STEPS, [(time from the stack's start, "key=value ..." | "on" | "off")]: each
    step's line lasts until the next step; before the first, the link is as tm-modulate starts it (no delay,
    no bottleneck, no loss); the last holds for LAST_HOLD (the schedule would then start again)."""
    times, states = [], []
    for when, state in steps:
        try:
            times.append(values.parse_duration(when, values.SECOND))
        except UsageError as e:
            raise ValueError(f"a step's time {when!r}: {e}") from None
        if state == "on":
            state = ""  # a line that changes nothing: the outage of the line before ends
        if not re.fullmatch(r"(\s*[a-z]+=\S+)*(\s*off(=\S+)?)?\s*", state):
            raise ValueError(f"a step's state is 'on', 'off' or tm-modulate's key=value words, not {state!r}")
        states.append(state.strip())
    if times != sorted(times) or len(set(times)) != len(times):
        raise ValueError(f"the steps' times must increase: {[when for when, _ in steps]}")
    lines = [f"{times[0]}ns\n"] if times[0] > 0 else []
    for i, state in enumerate(states):
        length = times[i + 1] - times[i] if i + 1 < len(states) else LAST_HOLD
        lines.append(f"{length}ns {state}".rstrip() + "\n")
    return "".join(lines)
