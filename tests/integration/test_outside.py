"""The outermost shell reaches the host through pasta where it can, and otherwise says in one line that it
runs isolated."""
import shutil
import socket
import threading

import pytest

from conftest import sh

NOTICE = "running isolated"
# Connects to $TM_BASE:PORT from inside, sends a line and prints the answer.
CLIENT = ("import os, socket, sys\n"
          "c = socket.create_connection((os.environ['TM_BASE'], int(sys.argv[1])), timeout=10)\n"
          "c.sendall(b'hello\\n')\n"
          "print(c.makefile().readline().strip())\n")


def pasta_usable(who):
    """What the shell checks: pasta installed, and /dev/net/tun openable by WHO."""
    return bool(shutil.which("pasta")) and who.run(sh(": <> /dev/net/tun")).returncode == 0


@pytest.fixture
def loopback_server():
    """A TCP server on the host's 127.0.0.1 that answers one line with "answer to <line>"; yields its port."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(20)

    def answer_one():
        try:
            conn, _ = server.accept()
        except OSError:
            return
        with conn:
            conn.sendall(b"answer to " + conn.makefile("rb").readline())

    thread = threading.Thread(target=answer_one, daemon=True)
    thread.start()
    yield server.getsockname()[1]
    server.close()
    thread.join(5)


@pytest.mark.parametrize("depth", [1, 2])
def test_host_loopback_service_reachable_at_tm_base(root, tools, loopback_server, depth):
    if not pasta_usable(root):
        pytest.skip("pasta (package passt) is not installed")
    cmd = ["python3", "-c", CLIENT, str(loopback_server)]
    for _ in range(depth):
        cmd = tools.delay(1, cmd=cmd)
    r = root.run(cmd)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "answer to hello\n"
    assert NOTICE not in r.stderr


def test_notice_says_whether_the_shell_runs_isolated(who, tools):
    r = who.run(tools.delay(0, cmd=["true"]))
    assert r.returncode == 0, r.stderr
    if pasta_usable(who):
        assert r.stderr == ""
    else:
        assert len(r.stderr.splitlines()) == 1 and NOTICE in r.stderr, r.stderr


def test_notice_when_pasta_is_missing(who, tools):
    r = who.run(tools.delay(0, cmd=["/bin/true"]), env={"PATH": "/nonexistent"})
    assert r.returncode == 0, r.stderr
    assert len(r.stderr.splitlines()) == 1 and NOTICE in r.stderr and "pasta" in r.stderr, r.stderr


def test_isolated_option_is_silent(who, tools):
    r = who.run(tools.delay("--isolated", 0, cmd=["true"]))
    assert (r.returncode, r.stderr) == (0, "")
