"""Bash completion (completion/tracemod, as built): every option each tool's --help prints is completed, nothing
is completed that the tool rejects, and the values that have names complete to them: queues, loss models, trace
names from $TM_TRACE_PATH, files, and the command a shell runs. Completion needs no privilege: root only."""
import os
import re
import subprocess

import pytest

from completion_helper import complete
from conftest import BINDIR

SCRIPT = os.path.join(os.environ.get("TM_TEST_BUILDDIR", ""), "completion", "tracemod")

# Where each context's options are listed: (tool, subcommand or None, the arguments that print them, and the
# sections of that output that belong to it (None: every section)).
CONTEXTS = [
    ("tm-delay", None, ["--help"], None),
    ("tm-loss", None, ["--help"], None),
    ("tm-link", None, ["--help"], None),
    ("tm-onoff", None, ["--help"], None),
    ("tm-modulate", None, ["--help"], None),
    ("tm-multipath", None, ["--help"], None),
    ("tm-graph", None, ["--help"], None),
    ("tm-top", None, ["--help"], None),
    ("tm-webreplay", None, ["--help"], None),
    ("tm-webrecord", None, ["--help"], None),
    ("tm-trace", "validate", ["validate", "--help"], None),
    ("tm-trace", "stats", ["stats", "--help"], None),
    ("tm-trace", "make", ["make", "--help"], None),
    ("tm-record", "server", ["server", "--help"], None),
    ("tm-record", "client", ["client", "--help"], None),
    ("tm-probe", None, ["--help"], ["Probe options:"]),  # its subcommands take no --help: one help for all
    ("tm-probe", "server", ["--help"], ["Server options:"]),
    ("tm-probe", "distill", ["--help"], ["Distill options:"]),
    ("tm-run", None, ["--help"], None),
    ("tm-run", "report", ["report", "--help"], None),
    ("tm-run", "compare", ["compare", "--help"], None),
    ("tm-run", "merge", ["merge", "--help"], None),
    ("tm-run", "workload", ["workload", "--help"], None),
]
# Contexts whose help prints no options, for the check that what is completed is accepted.
BARE_CONTEXTS = [("tm-trace", None), ("tm-record", None), ("tm-record", "distill")]


def ids(contexts):
    return [" ".join(filter(None, c[:2])) for c in contexts]


def run_tool(tool, *args):
    return subprocess.run([os.path.join(BINDIR, tool), *args], capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=30)


def help_options(tool, args, sections):
    """The options in the option lists of TOOL ARGS's output (Boost's "  -o [ --output ] RAW  text" and
    argparse's "  -o DIR, --output DIR  text"), in SECTIONS ("Probe options:") or all of them."""
    r = run_tool(tool, *args)
    assert r.returncode == 0, r.stderr
    found, section = set(), None
    for line in r.stdout.splitlines():
        if line and not line[0].isspace() and line.endswith(":"):
            section = line
        elif re.match(r" {1,4}-", line) and (sections is None or section in sections):
            spec = re.split(r"\s{2,}", line.strip())[0]  # the option and its value name, not the description
            found |= set(re.findall(r"(?<![\w-])--?[A-Za-z][\w-]*", spec))
    return found


def completed_options(tool, sub):
    return {w for w in complete([tool, *filter(None, [sub]), "-"], script=SCRIPT) if w.startswith("-")}


@pytest.mark.parametrize("tool,sub,args,sections", CONTEXTS, ids=ids(CONTEXTS))
def test_every_option_the_help_prints_is_completed(tool, sub, args, sections):
    printed = help_options(tool, args, sections)
    assert printed, f"no options found in {tool} {' '.join(args)}"
    assert printed <= completed_options(tool, sub), f"not completed: {sorted(printed - completed_options(tool, sub))}"


@pytest.mark.parametrize("tool,sub", [c[:2] for c in CONTEXTS] + BARE_CONTEXTS,
                         ids=ids(CONTEXTS) + ids(BARE_CONTEXTS))
def test_no_option_is_completed_that_the_tool_rejects(tool, sub):
    printed = next((help_options(t, a, s) for t, u, a, s in CONTEXTS if (t, u) == (tool, sub)), set())
    for option in sorted(completed_options(tool, sub) - printed):  # those the help does not show
        r = run_tool(tool, *filter(None, [sub]), option)
        assert not re.search(r"unrecogni[sz]ed|unknown (option|subcommand)", r.stderr), f"{option}: {r.stderr}"


def test_subcommands_complete(tmp_path):
    assert complete(["tm-trace", ""], script=SCRIPT) == {"validate", "stats", "make"}
    assert complete(["tm-record", ""], script=SCRIPT) == {"server", "client", "distill"}
    assert {"server", "distill", "print"} <= complete(["tm-probe", ""], script=SCRIPT)
    kinds = re.search(r"\{([\w,]+)\}", run_tool("tm-run", "workload", "--help").stdout).group(1).split(",")
    assert complete(["tm-run", "workload", ""], script=SCRIPT) == set(kinds)
    (tmp_path / "exp.toml").write_text("")
    (tmp_path / "notes.txt").write_text("")
    assert complete(["tm-run", ""], script=SCRIPT, cwd=tmp_path) == {"report", "compare", "merge", "workload",
                                                                     "exp.toml"}


def test_queue_names_are_those_the_help_lists():
    listed = re.search(r"--uplink-queue NAME.*?\s(\w+(?:\|\w+)+)", run_tool("tm-link", "--help").stdout)
    assert listed, "tm-link --help lists no queue names"
    for words in (["--uplink-queue", ""], ["--downlink-queue", ""], ["--downlink-queue="]):
        assert complete(["tm-link", *words], script=SCRIPT) == set(listed.group(1).split("|")), words


def test_queue_arguments_are_the_given_queues_keys():
    def offered(*words):
        return complete(["tm-link", *words], script=SCRIPT)

    assert offered("--downlink-queue", "codel", "--downlink-queue-args", "") == \
        {"target=", "interval=", "packets=", "bytes=", "ecn="}
    assert offered("--downlink-queue=pie", "--downlink-queue-args", "q") == {"qdelay_ref="}
    # After the first key, readline's word starts after the last '=': what comes back starts there too. A key
    # the list holds already is not offered again.
    assert offered("--uplink-queue", "red", "--uplink-queue-args", "min=20,m") == {"20,max="}
    assert "wq=" in offered("--uplink-queue-args", "")  # no queue given yet: every key


def test_loss_models_are_those_the_help_names():
    named = set(re.findall(r"\b(\w+):\w", run_tool("tm-loss", "--help").stdout.split("Options:")[0]))
    assert named >= {"gilbert", "markov4", "ber"}, named
    for words in (["--uplink-loss", ""], ["--downlink-loss", ""], ["uplink", ""],
                  ["--direction", "uplink", "--rate", ""]):
        offered = complete(["tm-loss", *words], script=SCRIPT)
        assert {w.split(":")[0] for w in offered} == named, words
    # Past the colon, readline's word begins after it; then each key of the model.
    assert complete(["tm-loss", "--uplink-loss", "gilbert:"], script=SCRIPT) == {"p=", "r=", "h=", "k="}
    assert complete(["tm-loss", "--uplink-loss", "gilbert:p=1%,r=25%,"], script=SCRIPT) == \
        {"25%,h=", "25%,k="}
    assert complete(["tm-loss", "--uplink-error-mode", "arq:delay=8,r"], script=SCRIPT) == {"8,retries="}


@pytest.mark.parametrize("words,values", [
    (["tm-delay", "--distribution", ""], {"uniform", "normal", "pareto", "paretonormal"}),
    (["tm-loss", "--downlink-error-mode", ""], {"drop", "corrupt", "arq:delay="}),
    (["tm-onoff", "--uplink-on", ""], {"exp:", "uniform:", "const:", "normal:", "pareto:"}),
    (["tm-onoff", "--off-mode", ""], {"drop", "hold"}),
    (["tm-onoff", ""], {"uplink", "downlink"}),
    (["tm-link", "--log-format", ""], {"tracemod", "mahimahi"}),
    (["tm-record", "client", "--profile", ""], {"auto", "wifi", "lte"}),
    (["tm-record", "client", "--direction", ""], {"up", "down", "both"}),
    (["tm-probe", "--method", ""], {"auto", "ping", "raw", "udp"}),
], ids=lambda v: " ".join(v) if isinstance(v, list) else "")
def test_named_values_complete_as_the_help_names_them(words, values, tmp_path):
    assert complete(words, script=SCRIPT, cwd=tmp_path) == values
    help_text = run_tool(words[0], "--help").stdout
    for value in values:  # the help names each (a prefix such as exp: by its name)
        assert re.search(rf"\b{re.escape(value.split(':')[0])}\b", help_text), value


def test_trace_names_come_from_the_trace_path_and_files_from_here(tmp_path):
    traces, here = tmp_path / "traces", tmp_path / "here"
    traces.mkdir()
    here.mkdir()
    for name in ("campus.up", "campus.down", "README"):
        (traces / name).write_text("1\n")
    (here / "car.up").write_text("1\n")
    env = {"TM_TRACE_PATH": f"/nonexistent:{traces}"}
    assert complete(["tm-link", "ca"], script=SCRIPT, env=env, cwd=here) == {"campus.up", "campus.down", "car.up"}
    assert complete(["tm-link", "campus.up", "campus.d"], script=SCRIPT, env=env, cwd=here) == {"campus.down"}
    assert complete(["tm-link", "--uplink-trace", "R"], script=SCRIPT, env=env, cwd=here) == set()  # not README
    assert complete(["tm-modulate", "--uplink", "c"], script=SCRIPT, env=env, cwd=here) >= {"campus.up", "car.up"}
    assert complete(["tm-graph", "c"], script=SCRIPT, env=env, cwd=here) == {"car.up"}  # a log: files only


def test_the_shells_command_completes_as_a_command_of_its_own():
    env = {"PATH": f"{BINDIR}:/usr/bin:/bin"}
    assert {"tm-link", "tm-loss"} <= complete(["tm-delay", "40", "--", "tm-l"], script=SCRIPT, env=env)
    # Nested: the inner shell's own options; Mahimahi's form without `--` too.
    assert complete(["tm-delay", "40", "--", "tm-link", "--uplink-q"], script=SCRIPT, env=env) == \
        {"--uplink-queue", "--uplink-queue-args"}
    assert "tm-loss" in complete(["tm-delay", "40", "tm-lo"], script=SCRIPT, env=env)
    assert complete(["tm-loss", "uplink", "0.1", "tm-delay", "--jit"], script=SCRIPT, env=env) == {"--jitter"}
    # Until the positional arguments are there, a word is one of them, not the command.
    assert complete(["tm-loss", "--seed", "3", ""], script=SCRIPT, env=env) == {"uplink", "downlink"}
    assert complete(["tm-loss", "--uplink-loss", "0.1", "tm-lo"], script=SCRIPT, env=env) >= {"tm-loss"}


def test_make_install_puts_a_link_per_tool_where_bash_completion_looks_and_uninstall_removes_them(tmp_path):
    builddir = os.environ.get("TM_TEST_BUILDDIR")
    assert builddir, "TM_TEST_BUILDDIR is not set: use tests/run"
    make = ["make", "-C", builddir, f"DESTDIR={tmp_path}", "prefix=/opt/tm"]
    r = subprocess.run([*make, "install"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    completions = tmp_path / "opt/tm/share/bash-completion/completions"
    tools = sorted(t for t in os.listdir(BINDIR) if t.startswith("tm-"))
    assert sorted(os.listdir(completions)) == sorted(tools + ["tracemod"])
    for tool in tools:
        assert os.readlink(completions / tool) == "tracemod", tool
    # bash-completion loads it by the tool's name from the data directories it searches.
    env = {"XDG_DATA_DIRS": str(tmp_path / "opt/tm/share")}
    assert complete(["tm-link", "--uplink-q"], env=env) == {"--uplink-queue", "--uplink-queue-args"}
    r = subprocess.run([*make, "uninstall"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    assert os.listdir(completions) == []
