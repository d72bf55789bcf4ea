"""The command runs as the caller (under sudo: as the sudo user), and can start nested shells."""
import pytest

from conftest import assert_ping_rtt, ping_cmd, python_script, sh, sudo_env

IDS = sh("id -u; id -g")


def test_command_runs_as_the_caller(who, tools):
    r = who.run(tools.delay(0, cmd=IDS))
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == [str(who.uid), str(who.gid)]


def test_under_sudo_the_command_runs_as_the_sudo_user(root, user, tools):
    r = root.run(tools.delay(0, cmd=sh('id -u; id -g; echo "$HOME"')), env=sudo_env(user))
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == [str(user.uid), str(user.gid), user.home]


@pytest.mark.parametrize("how", ["directly", "under-sudo"])
def test_unprivileged_command_starts_a_nested_shell(root, user, tools, how):
    caller, env = (user, None) if how == "directly" else (root, sudo_env(user))
    inner = tools.delay(2, cmd=sh('id -u; exec "$@"', *ping_cmd(count=5)))
    r = assert_ping_rtt(caller, tools.delay(1, cmd=sh('id -u; exec "$@"', *inner)), 6.0, 8.0, env=env)
    assert r.stdout.split()[:2] == [str(user.uid)] * 2


def test_sudo_user_cannot_become_root_inside(root, user, tools):
    # The sudo user keeps capabilities inside the sandbox to nest shells; they must not make it root, e.g.
    # through a setuid su reading a PAM configuration mounted over the real one.
    r = root.run(tools.delay(0, cmd=python_script("su_probe.py")), env=sudo_env(user))
    outcome = r.stdout.strip()
    assert r.returncode == 0 and outcome, r.stderr
    assert outcome != "su gave uid 0", "the sudo user became root inside the shell"
