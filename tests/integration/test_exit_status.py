"""The shell exits with its command's status, passes signals on to it, and exits 1 when the kernel refuses."""
import os
import signal

import pytest

from conftest import TIMEOUT, read_until, sh

EXIT_STATUSES = {
    "success": (["true"], 0),
    "exit-3": (sh("exit 3"), 3),
    "not-found": (["tm-no-such-command"], 127),
    "not-executable": (["/etc/passwd"], 126),
    "killed-by-SIGTERM": (sh("kill -TERM $$"), 128 + signal.SIGTERM),
    "killed-by-SIGKILL": (sh("kill -KILL $$"), 128 + signal.SIGKILL),
}


@pytest.mark.parametrize("case", EXIT_STATUSES)
def test_exit_status_is_the_commands(who, tools, case):
    command, status = EXIT_STATUSES[case]
    r = who.run(tools.delay(0, cmd=command))
    assert r.returncode == status, r.stderr
    if status in (126, 127):
        assert f"tm-delay: {command[0]}: " in r.stderr


TRAP_STATUS = {signal.SIGINT: 71, signal.SIGTERM: 72, signal.SIGHUP: 73}
TRAPPER = sh(" ".join(f'trap "exit {code}" {sig.name[3:]};' for sig, code in TRAP_STATUS.items())
             + " echo ready; while :; do sleep 0.05; done")


@pytest.mark.parametrize("sig", TRAP_STATUS, ids=lambda s: s.name)
def test_signal_to_the_shell_reaches_the_command(who, tools, spawn, sig):
    shell = spawn(who, tools.delay(0, cmd=TRAPPER))
    read_until(shell, "ready")
    os.kill(shell.pid, sig)
    assert shell.wait(TIMEOUT) == TRAP_STATUS[sig]


def test_refused_user_namespace_exits_1_naming_the_limit(user, tools):
    r = user.run(["unshare", "--user", "--map-root-user",
                  *sh('echo 0 > /proc/sys/user/max_user_namespaces && exec "$@"', *tools.delay(0, cmd=["true"]))])
    assert r.returncode == 1, r.stderr
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("tm-delay: ") and "max_user_namespaces" in lines[0], r.stderr
