"""Bad usage exits 2 with one line naming the problem, then the usage; --help and --version exit 0; the command
may follow without `--`, as with Mahimahi."""
import pytest

from conftest import sh

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
]


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


@pytest.mark.parametrize("tool,args", [("tm-delay", ["0"]), ("tm-loss", ["uplink", "0"])], ids=["tm-delay", "tm-loss"])
def test_command_without_double_dash(root, tools, tool, args):
    r = root.run([tools.path(tool), *args, *sh("exit 4")])
    assert r.returncode == 4, r.stderr
