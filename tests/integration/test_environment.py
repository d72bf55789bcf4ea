"""The variables each level sets (TM_BASE, TM_OUTER, TM_DEPTH, ...) and the prompt prefix."""
import pytest

from conftest import OUTERMOST_OUTER, OUTERMOST_OUTER6, TM_BASE, TM_BASE6, deepest_prompt, sh

VARIABLES = ("TM_DEPTH", "TM_BASE", "TM_BASE6", "MAHIMAHI_BASE", "TM_OUTER", "TM_OUTER6")
# Each level prints its variables, then whether it reaches TM_BASE and TM_BASE6, then starts the next one.
REPORT = ('printf "%s %s %s %s %s %s " ' + " ".join(f'"${v}"' for v in VARIABLES) + "; "
          'if ping -n -q -c 1 -W 2 "$TM_BASE" >/dev/null && ping -n -q -c 1 -W 2 "$TM_BASE6" >/dev/null; '
          'then echo reached; else echo unreachable; fi; exec "$@"')


def levels(who, tools, depth):
    """[{variable: value, "ping": reached|unreachable}] of each level, outermost first."""
    cmd = ["true"]
    for _ in range(depth):
        cmd = tools.delay(0, cmd=sh(REPORT, *cmd))
    r = who.run(cmd)
    assert r.returncode == 0, r.stderr
    return [dict(zip((*VARIABLES, "ping"), line.split())) for line in r.stdout.splitlines()]


def test_variables_at_each_level(who, tools):
    found = levels(who, tools, 3)
    assert [level["TM_DEPTH"] for level in found] == ["1", "2", "3"]
    for level in found:
        assert (level["TM_BASE"], level["TM_BASE6"], level["MAHIMAHI_BASE"]) == (TM_BASE, TM_BASE6, TM_BASE), level
        assert level["ping"] == "reached", level
    assert (found[0]["TM_OUTER"], found[0]["TM_OUTER6"]) == (OUTERMOST_OUTER, OUTERMOST_OUTER6)
    assert len({level["TM_OUTER"] for level in found}) == 3 and len({level["TM_OUTER6"] for level in found}) == 3


def test_outermost_shell_replaces_stale_values(root, tools):
    stale = {"TM_BASE": "192.0.2.1", "TM_BASE6": "2001:db8::1", "MAHIMAHI_BASE": "192.0.2.1",
             "TM_OUTER": "192.0.2.1", "TM_PROMPT": "[stale] "}
    r = root.run(tools.delay(0, cmd=sh('echo "$TM_BASE $TM_BASE6 $MAHIMAHI_BASE $TM_OUTER $TM_PROMPT"')), env=stale)
    assert r.returncode == 0, r.stderr
    assert r.stdout == f"{TM_BASE} {TM_BASE6} {TM_BASE} {OUTERMOST_OUTER} [delay 0] \n"


SHELLS = {"bash": ["bash", "--norc", "-i"], "sh": ["sh", "-i"]}


@pytest.mark.parametrize("shell", SHELLS)
def test_prompt_shows_the_shell(root, tools, shell):
    r = root.run(tools.delay(0, cmd=SHELLS[shell]), input="exit\n")
    assert r.returncode == 0, r.stderr
    assert deepest_prompt(r.stderr) == "[delay 0] ", r.stderr


@pytest.mark.parametrize("shell", SHELLS)
def test_prompt_of_a_shell_started_from_an_interactive_one(root, tools, shell):
    typed = " ".join(tools.delay(1, cmd=SHELLS[shell])) + "\nexit\nexit\n"
    r = root.run(tools.delay(0, cmd=SHELLS[shell]), input=typed)
    assert r.returncode == 0, r.stderr
    assert deepest_prompt(r.stderr) == "[delay 0] [delay 1] ", r.stderr


@pytest.mark.parametrize("shell", SHELLS)
def test_prompt_of_chained_shells(root, tools, shell):
    r = root.run(tools.delay(0, cmd=tools.loss("uplink", 0, cmd=SHELLS[shell])), input="exit\n")
    assert r.returncode == 0, r.stderr
    assert deepest_prompt(r.stderr) == "[delay 0] [loss up=0 down=0] ", r.stderr
