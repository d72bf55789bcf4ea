"""Names resolve inside as they do outside, also when the host's resolver listens on loopback (as
systemd-resolved's 127.0.0.53 does): the shell points the command's /etc/resolv.conf at an address that the
outside path (the kernel path's NAT on the host, or pasta) maps to that resolver. The "host" here is a namespace of the test's own, with a fake resolver on 127.0.0.53
that answers every A query itself, so no query leaves the machine."""
import os
import shutil
import subprocess
import tempfile

import pytest

from conftest import TIMEOUT, read_until

ANSWER = "198.18.5.5"
RESOLVER = r"""
import socket, struct
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("127.0.0.53", 53))
print("ready", flush=True)
while True:
    q, peer = s.recvfrom(512)
    end = 12
    while q[end]:
        end += q[end] + 1
    is_a = q[end + 1:end + 3] == b"\x00\x01"
    reply = q[:2] + struct.pack("!HHHHH", 0x8180, 1, int(is_a), 0, 0) + q[12:end + 5]
    if is_a:
        reply += struct.pack("!HHHLH", 0xC00C, 1, 1, 60, 4) + socket.inet_aton("%s")
    s.sendto(reply, peer)
""" % ANSWER


def ip(*args):
    subprocess.run(["ip", *args], check=True, timeout=TIMEOUT)


@pytest.fixture
def host_with_loopback_resolver():
    """A namespace with a default route (pasta needs one) and a resolver on 127.0.0.53; yields
    (namespace name, resolv.conf path naming 127.0.0.53). Needs no pasta: the kernel path's cases run without."""
    tag = str(os.getpid())
    host, gw = f"tmdns-host-{tag}", f"tmdns-gw-{tag}"
    ip("netns", "add", host)
    ip("netns", "add", gw)
    resolver = None
    conf = tempfile.NamedTemporaryFile("w", prefix="tmdns-", suffix=".conf", delete=False)
    try:
        conf.write("nameserver 127.0.0.53\noptions edns0\n")
        conf.close()
        ip("-n", host, "link", "set", "lo", "up")
        ip("link", "add", "name", "up0", "netns", host, "type", "veth", "peer", "name", "gw0", "netns", gw)
        ip("-n", host, "addr", "add", "198.18.9.2/24", "dev", "up0")
        ip("-n", gw, "addr", "add", "198.18.9.1/24", "dev", "gw0")
        ip("-n", host, "link", "set", "up0", "up")
        ip("-n", gw, "link", "set", "gw0", "up")
        ip("-n", host, "route", "add", "default", "via", "198.18.9.1")
        resolver = subprocess.Popen(["ip", "netns", "exec", host, "python3", "-c", RESOLVER], stdout=subprocess.PIPE)
        read_until(resolver, "ready")
        yield host, conf.name
    finally:
        if resolver:
            resolver.kill()
            resolver.wait()
        subprocess.run(["ip", "netns", "del", host], timeout=TIMEOUT)
        subprocess.run(["ip", "netns", "del", gw], timeout=TIMEOUT)
        os.unlink(conf.name)


@pytest.mark.parametrize("path,depth", [("kernel", 1), ("kernel", 2), ("pasta", 1)])
def test_names_resolve_through_a_loopback_resolver(root, tools, path, depth, request):
    if path == "pasta" and not shutil.which("pasta"):  # only this case needs it (before the fixture is built)
        pytest.skip("pasta (package passt) is not installed")
    host, conf = request.getfixturevalue("host_with_loopback_resolver")
    cmd = ["sh", "-c", "cat /etc/resolv.conf; getent hosts tracemod.test"]
    for level in range(depth):
        cmd = tools.delay(*(["--pasta"] if path == "pasta" and level == depth - 1 else []), 0, cmd=cmd)
    inner = "mount --bind \"$0\" /etc/resolv.conf && exec \"$@\""
    r = root.run(["ip", "netns", "exec", host, "unshare", "-m", "sh", "-c", inner, conf, *cmd])
    assert r.returncode == 0, r.stdout + r.stderr
    assert "nameserver 127.0.0.53" not in r.stdout  # the command does not see the unreachable loopback resolver
    assert f"{ANSWER} tracemod.test" in " ".join(r.stdout.split())  # getent pads with spaces
    assert "running isolated" not in r.stderr


def test_host_resolv_conf_is_untouched(root, tools):
    before = open("/etc/resolv.conf").read()
    r = root.run(tools.delay(0, cmd=["true"]))
    assert r.returncode == 0, r.stderr
    assert open("/etc/resolv.conf").read() == before
