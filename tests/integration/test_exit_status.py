"""The shell exits with its command's status, passes signals on to it, and exits 1 when the kernel refuses."""
import os
import signal
import subprocess
import time

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


# Every signal the shell forwards (SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2 in turn, then SIGTERM), one shell
# per run: the command says which it got, and exits with its own status on the last.
FORWARDED = (signal.SIGINT, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2)
TRAPPER = sh(" ".join(f'trap "echo got {sig.name}" {sig.name[3:]};' for sig in FORWARDED)
             + ' trap "exit 72" TERM; echo ready; while :; do sleep 0.05; done')


def test_signals_to_the_shell_reach_the_command(who, tools, spawn):
    shell = spawn(who, tools.delay(0, cmd=TRAPPER))
    read_until(shell, "ready")
    for sig in FORWARDED:
        os.kill(shell.pid, sig)
        read_until(shell, f"got {sig.name}\n")
    os.kill(shell.pid, signal.SIGTERM)
    assert shell.wait(TIMEOUT) == 72


def test_a_signal_during_start_up_still_reaches_the_command(who, tools, spawn):
    # SIGTERM at 0 to 40 ms after the start: whatever the shell is doing (making namespaces, its init forking
    # the command...), the signal must end the command, or the shell itself if it came before the shell could
    # take signals over. A command that never sees it runs on (here for 30 s).
    for delay in range(0, 41, 2):
        shell = spawn(who, tools.delay("--isolated", 0, cmd=["sleep", "30"]))
        time.sleep(delay / 1000)
        os.kill(shell.pid, signal.SIGTERM)
        try:
            status = shell.wait(5)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"SIGTERM {delay} ms after the start was lost: the command runs on") from None
        assert status in (128 + signal.SIGTERM, -signal.SIGTERM), f"{delay} ms: exit status {status}"


def test_refused_user_namespace_exits_1_naming_the_limit(user, tools):
    r = user.run(["unshare", "--user", "--map-root-user",
                  *sh('echo 0 > /proc/sys/user/max_user_namespaces && exec "$@"', *tools.delay(0, cmd=["true"]))])
    assert r.returncode == 1, r.stderr
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("tm-delay: ") and "max_user_namespaces" in lines[0], r.stderr
