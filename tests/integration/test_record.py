"""tm-record: usage errors, a short recording through tm-delay as root and as the unprivileged user, the token
check, Ctrl-C keeping a valid trace, and distill rebuilding it. The acceptance test against tm-link is in
test_record_acceptance.py."""
import os
import re
import signal
import time

import pytest

from conftest import read_until, sh

TOKEN = "s3cret"

BAD_ARGUMENTS = [
    ([], "missing subcommand"),
    (["record"], "'record'"),
    (["client", "--token", TOKEN], "missing SERVER"),
    (["client", "127.0.0.1"], "missing --token"),
    (["client", "--token", TOKEN, "--direction", "sideways", "127.0.0.1"], "'sideways'"),
    (["client", "--token", TOKEN, "--duration", "-3", "127.0.0.1"], "'-3'"),
    (["client", "--token", TOKEN, "--packet-size", "40", "127.0.0.1"], "'40'"),
    (["client", "--token", TOKEN, "--max-rate", "fast", "127.0.0.1"], "'fast'"),
    (["client", "--token", TOKEN, "--profile", "dsl", "127.0.0.1"], "'dsl'"),
    (["client", "--token", TOKEN, "--low-delay", "90", "--high-delay", "10", "127.0.0.1"], "--low-delay"),
    (["server", "--token", TOKEN, "--data-port", "70000"], "'70000'"),
    (["server", "--token", TOKEN, "--feedback", "nowhere"], "'nowhere'"),
    (["server", "--token", TOKEN, "--bogus"], "--bogus"),
    (["distill"], "missing RAW"),
]


@pytest.mark.parametrize("args,named", BAD_ARGUMENTS, ids=[" ".join(a) or "nothing" for a, _ in BAD_ARGUMENTS])
def test_record_bad_usage_exits_2_naming_the_problem(root, tools, args, named):
    r = root.run(tools.tool("tm-record", *args))
    assert r.returncode == 2, r.stderr
    lines = r.stderr.splitlines()
    assert lines[0].startswith("tm-record: ") and named in lines[0], r.stderr
    assert lines[1].startswith("usage: tm-record "), r.stderr
    assert r.stdout == ""


@pytest.mark.parametrize("args", [["--help"], ["client", "--help"], ["--version"], ["server", "--version"]])
def test_record_help_and_version(root, tools, args):
    r = root.run(tools.tool("tm-record", *args))
    assert r.returncode == 0 and r.stderr == ""
    expected = "tm-record (tracemod) " if "--version" in args else "usage: tm-record "
    assert r.stdout.startswith(expected)


def server_then(tools, fb, out, *then, stop=False):
    """`tm-delay --isolated 0` running a tm-record server (feedback on the Unix socket FB) and then THEN; with
    STOP, the server gets SIGTERM once THEN is done (a refused client does not end a --once server)."""
    return tools.delay("--isolated", 0, cmd=sh(
        'rec=$1 fb=$2 out=$3; shift 3; "$rec" server --token "$TM_RECORD_TOKEN" --feedback "$fb" --once -o "$out" '
        '& s=$!; while [ ! -S "$fb" ]; do sleep 0.02; done; "$@"; st=$?; '
        f'{"kill $s; wait $s; echo server $?; " if stop else "wait; "}exit $st',
        tools.path("tm-record"), fb, out, *then))


def client_behind_delay(tools, fb, out, *args):
    """A client behind `tm-delay 1`, recording toward its $TM_OUTER."""
    return tools.delay(1, cmd=sh('exec "$@" "$TM_OUTER"', tools.path("tm-record"), "client", "--feedback", fb,
                                 "-o", out, *args))


def lines(path):
    with open(path) as f:
        return [int(x) for x in f.read().split("\n") if x]


def assert_valid_trace(path):
    t = lines(path)
    assert t and t == sorted(t) and t[-1] > 0, f"{path} is not a valid Mahimahi trace"
    return t


@pytest.mark.parametrize("direction", ["up", "down"])
def test_record_a_short_recording_writes_trace_and_raw(who, tools, public_tmp, direction):
    fb, srv, cli = public_tmp / "fb", public_tmp / "srv", public_tmp / "cli"
    r = who.run(server_then(tools, fb, srv, *client_behind_delay(
        tools, fb, cli, "--direction", direction, "--duration", 2, "--max-rate", "20mbit", "-q")),
        env={"TM_RECORD_TOKEN": TOKEN}, timeout=40)
    assert r.returncode == 0, r.stderr
    prefix = srv if direction == "up" else cli
    trace = assert_valid_trace(f"{prefix}.{direction}")
    assert trace[-1] < 2000 and len(trace) > 1000, f"{len(trace)} arrivals up to {trace[-1]} ms"
    summary = re.search(rf"tm-record: {direction}: .* (\d+) packets, .*trace {prefix}\.{direction} \((\d+) opport",
                        r.stderr)
    assert summary and int(summary.group(1)) == int(summary.group(2)) == len(trace), r.stderr
    d = who.run(tools.tool("tm-record", "distill", f"{prefix}.{direction}.raw", "-o", public_tmp / "again"))
    assert d.returncode == 0, d.stderr
    assert lines(public_tmp / "again") == trace
    assert len(lines_of(public_tmp / "again.delay")) == len(trace)
    assert not any(p.name.endswith(".part") for p in public_tmp.iterdir())


def lines_of(path):
    with open(path) as f:
        return f.read().splitlines()


def test_record_feedback_over_tcp_with_both_sockets_bound_to_the_interface(root, tools, public_tmp):
    srv = public_tmp / "srv"
    outer = tools.delay("--isolated", 0, cmd=sh(
        'rec=$1 out=$2; shift 2; "$rec" server --token t --once -q -o "$out" & sleep 0.5; "$@"; st=$?; wait; exit $st',
        tools.path("tm-record"), srv, *tools.delay(1, cmd=sh(
            'exec "$1" client --token t --feedback "$TM_OUTER:9474" --data-dev tm0 --feedback-dev tm0 '
            '--duration 2 --max-rate 5mbit -q "$TM_OUTER"', tools.path("tm-record")))))
    r = root.run(outer, timeout=40)
    assert r.returncode == 0, r.stderr
    trace = assert_valid_trace(f"{srv}.up")
    # The cap holds the rate: 5 Mbit/s is about 417 packets a second (the first burst and rounding aside).
    assert 750 <= len(trace) <= 900, f"{len(trace)} packets in 2 s under --max-rate 5mbit"
    assert "warning: --max-rate held the sender back" in r.stderr, r.stderr


def test_record_the_server_refuses_a_wrong_token(root, tools, public_tmp):
    fb = public_tmp / "fb"
    client = tools.delay(1, cmd=sh('exec "$@" "$TM_OUTER"', tools.path("tm-record"), "client", "--token", "wrong",
                                   "--feedback", fb, "--duration", 1))
    r = root.run(server_then(tools, fb, public_tmp / "srv", *client, stop=True), env={"TM_RECORD_TOKEN": TOKEN})
    assert r.returncode == 1
    assert "tm-record: the server refused: wrong token" in r.stderr, r.stderr
    assert "refused a client: wrong token" in r.stderr
    assert "server 143" in r.stdout, "the refusal ended the --once server"
    assert not os.path.exists(fb), "the server left its socket behind"
    assert not os.path.exists(public_tmp / "srv.up")


def test_record_ctrl_c_keeps_a_valid_trace(root, tools, public_tmp, spawn):
    fb, srv = public_tmp / "fb", public_tmp / "srv"
    client = tools.delay(1, cmd=sh('"$@" "$TM_OUTER" & pid=$!; sleep 2; kill -INT $pid; wait $pid; echo "client $?"',
                                   tools.path("tm-record"), "client", "--feedback", fb, "--duration", 60,
                                   "--max-rate", "20mbit", "-q"))
    r = root.run(server_then(tools, fb, srv, *client), env={"TM_RECORD_TOKEN": TOKEN}, timeout=40)
    assert r.returncode == 0, r.stderr
    assert "client 130" in r.stdout, r.stdout + r.stderr
    trace = assert_valid_trace(f"{srv}.up")
    assert 500 < trace[-1] < 3000
    assert "(peer left: interrupted)" in r.stderr, r.stderr
    d = root.run(tools.tool("tm-record", "distill", f"{srv}.up.raw"))
    assert d.returncode == 0 and lines(f"{srv}.up") == trace


def test_record_a_silent_feedback_path_stops_the_sender(root, tools, public_tmp):
    # A fake server welcomes the client (Control{welcome{session 7}}, length-delimited), swallows its data and
    # then says nothing more: the client must stop sending by itself.
    fb = public_tmp / "fb"
    mute = ("import socket,sys,time; u=socket.socket(socket.AF_INET,socket.SOCK_DGRAM); u.bind(('127.0.0.1',9473)); "
            "s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen(); c,_=s.accept(); c.recv(1000); "
            "c.sendall(bytes([11,0x12,9,9,7,0,0,0,0,0,0,0])); time.sleep(20)")
    start = time.monotonic()
    r = root.run(tools.delay("--isolated", 0, cmd=sh(
        'python3 -c "$1" "$2" & while [ ! -S "$2" ]; do sleep 0.02; done; '
        'exec "$3" client --token t --feedback "$2" --feedback-timeout 2 --duration 30 -q 127.0.0.1',
        mute, fb, tools.path("tm-record"))), timeout=40)
    assert r.returncode == 1, r.stderr
    assert "tm-record: error: no feedback for 2.0 s: stopping the sender" in r.stderr, r.stderr
    assert time.monotonic() - start < 10
