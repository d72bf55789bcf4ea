"""Bad usage exits 2 with one line naming the problem, then the usage; --help and --version exit 0; the command
may follow without `--`, as with Mahimahi."""
import os

import pytest

from conftest import TRACES, sh

BAD_ARGUMENTS = [
    ("tm-delay", [], "missing delay"),
    ("tm-delay", ["abc"], "'abc'"),
    ("tm-delay", ["-5"], "'-5'"),
    ("tm-delay", ["--delay", "-5"], "'-5'"),
    ("tm-delay", ["--uplink-delay", "-1", "--downlink-delay", "3"], "'-1'"),
    ("tm-delay", ["--uplink-delay", "5"], "missing delay"),
    ("tm-delay", ["--bogus-option", "5"], "--bogus-option"),
    ("tm-loss", ["sideways", "0.1"], "'sideways'"),
    ("tm-loss", ["uplink", "1.5"], "'1.5'"),
    ("tm-loss", ["uplink"], "missing loss rate"),
    ("tm-loss", ["--uplink-loss", "0.1", "--seed", "abc"], "'abc'"),
    ("tm-loss", ["--uplink-loss", "0.1", "--seed", "-1"], "'-1'"),
    ("tm-link", ["--uplink-rate", "1mbit", "--downlink-rate", "1mbit", "--log-format", "mahimahi"],
     "--log-format: there is no --uplink-log or --downlink-log"),
]


def test_an_extra_value_taken_as_the_command_is_said_to_be_one(root, tools):
    r = root.run([tools.path("tm-delay"), "20", "30"])
    assert r.returncode == 127 and "30: No such file or directory (taken as the command: a value the shell does " \
        "not take? the command goes after --)" in r.stderr, r.stderr


@pytest.mark.parametrize("tool,args,named", BAD_ARGUMENTS, ids=[" ".join([t, *a]) for t, a, _ in BAD_ARGUMENTS])
def test_bad_arguments_exit_2_naming_the_problem(root, tools, tool, args, named):
    r = root.run([tools.path(tool), *args, "--", "true"])
    assert r.returncode == 2, r.stderr
    lines = r.stderr.splitlines()
    assert lines[0].startswith(f"{tool}: ") and named in lines[0], r.stderr
    assert lines[1].startswith(f"usage: {tool} "), r.stderr
    assert r.stdout == ""


@pytest.mark.parametrize("tool", ["tm-delay", "tm-loss"])
@pytest.mark.parametrize("option,expected", [("--help", "usage: {tool} "), ("--version", "{tool} (tracemod) ")],
                         ids=["help", "version"])
def test_help_and_version_exit_0(root, tools, tool, option, expected):
    r = root.run([tools.path(tool), option])
    assert r.returncode == 0 and r.stderr == ""
    assert r.stdout.startswith(expected.format(tool=tool))


TRACE = os.path.join(TRACES, "constant-12mbit")
WITHOUT_DOUBLE_DASH = {
    "tm-delay": ["0"],
    "tm-loss": ["uplink", "0"],
    "tm-link": [TRACE, TRACE],  # mm-link UP DOWN COMMAND, as Mahimahi's users write it
    "tm-link-options-between": ["--uplink-queue", "droptail", TRACE, "--uplink-queue-args", "packets=10", TRACE],
}


@pytest.mark.parametrize("case", WITHOUT_DOUBLE_DASH)
def test_command_without_double_dash(root, tools, case):
    tool = case.split("-options")[0]
    r = root.run([tools.path(tool), *WITHOUT_DOUBLE_DASH[case], *sh('echo "$TM_DEPTH"; exit 4')])
    assert r.returncode == 4, r.stderr
    assert r.stdout == "1\n", "the command did not run inside the shell"
