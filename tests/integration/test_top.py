"""tm-top and --meter: the live counters every shell publishes, read while a known load crosses a known link.

The terminal view is driven in a real terminal (tmux: keys sent, the pane captured); its figures are checked
against the link's own log (tm-graph --json over the same run). --json and --once give the tree by nesting;
--web serves the page and the figures; --meter draws a status line on a terminal and prints one off it."""
import json
import os
import re
import shutil
import signal
import subprocess
import time
import urllib.error
import urllib.request

import pytest

from conftest import TIMEOUT, python_script, read_until, sh

TMUX = shutil.which("tmux")
RATE_MBIT = 8
QUEUE_PACKETS = 60
DATAGRAM = 1400  # UDP payload: 1428 IP bytes
SEND_PPS = 1000  # 11.4 Mbit/s of IP into an 8 Mbit/s link: the queue fills and drops the excess

# Paced UDP datagrams from inside the shells to the outermost one's outer end for SECONDS (nobody listens there:
# the datagrams only have to cross the links). Absolute send times, so a late wake-up does not lower the rate.
SENDER = f"""
import os, socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 20)
to, seconds, payload = (os.environ["TM_OUTSIDE"], 9), float(sys.argv[1]), b"x" * {DATAGRAM}
start = time.monotonic()
for i in range(int(seconds * {SEND_PPS})):
    wait = start + i / {SEND_PPS} - time.monotonic()
    if wait > 0:
        time.sleep(wait)
    try:
        s.sendto(payload, to)
    except OSError:
        pass
"""


def sender(seconds):
    return ["python3", "-c", SENDER, str(seconds)]


def link_argv(tools, log, seconds, *extra):
    return tools.shell("tm-link", "--uplink-rate", f"{RATE_MBIT}mbit", "--downlink-rate", f"{RATE_MBIT}mbit",
                       "--uplink-queue", "droptail",
                       "--uplink-queue-args", f"packets={QUEUE_PACKETS}", "--uplink-log", log, *extra,
                       cmd=sender(seconds))


class Tmux:
    """A tmux server of its own (its socket in a private directory), as WHO, with one 80-column window."""

    def __init__(self, who, socket_dir, command, width=80, height=30, env=None):
        self.who, self.socket = who, os.path.join(socket_dir, "tmux.sock")
        self.run("new-session", "-d", "-x", str(width), "-y", str(height), *command, env=env)

    def run(self, *args, env=None):
        r = self.who.run([TMUX, "-S", self.socket, "-f", "/dev/null", *args], env=env)
        assert r.returncode == 0, r.stderr
        return r.stdout

    def screen(self):
        return self.run("capture-pane", "-p")

    def keys(self, *keys):
        self.run("send-keys", *keys)

    def alive(self):
        return self.who.run([TMUX, "-S", self.socket, "has-session"]).returncode == 0

    def kill(self):
        self.who.run([TMUX, "-S", self.socket, "kill-server"])


def private_dir(who, public_tmp, name):
    d = public_tmp / name
    d.mkdir()
    os.chown(d, who.uid, who.gid)
    os.chmod(d, 0o700)
    return str(d)


def steady_log_figures(tools, log):
    """The link log's medians over the saturated middle of the run, per 1 s bin: delivered Mbit/s, capacity
    Mbit/s, mean delay ms, drops per second."""
    r = subprocess.run(tools.tool("tm-graph", log, "--json", "--bin", "1000"), capture_output=True, text=True,
                       timeout=TIMEOUT)
    assert r.returncode == 0, r.stderr
    bins = json.loads(r.stdout)["bins"]
    middle = slice(3, len(bins["start_ms"]) - 2)

    def median(key):
        values = sorted(v for v in bins[key][middle] if v is not None)
        assert values, (key, bins)
        return values[len(values) // 2]

    return {"delivered": median("throughput_mbps"), "capacity": median("capacity_mbps"),
            "delay": median("mean_delay_ms"), "drops": median("drop_packets"),
            "slowest": min(bins["throughput_mbps"][middle])}


UP_LINE = re.compile(r"^\s+up\s+([\d.]+) /\s+([\d.]+) Mbit/s\s+q\s+(\d+)p\s+(\S+)\s+([\d.]+)ms\s+drop\s+(\d+)/s", re.M)


def within(value, reference, share):
    return abs(value - reference) <= share * reference


@pytest.mark.skipif(TMUX is None, reason="tmux is not installed")
def test_the_terminal_view_agrees_with_the_link_log(who, tools, public_tmp, spawn):
    log = str(public_tmp / f"{who.name}-up.log")
    shell = spawn(who, link_argv(tools, log, 9))
    time.sleep(4)  # the queue has filled: a steady state
    # --pid: this test's shell alone, whatever else runs on the machine.
    term = Tmux(who, private_dir(who, public_tmp, "tmux"), [tools.path("tm-top"), "--pid", str(shell.pid)])
    try:
        time.sleep(2)
        screen = term.screen()
        assert len(max(screen.splitlines(), key=len)) <= 80, screen
        shown = UP_LINE.search(screen)
        assert "tm-link --uplink-rate" in screen and shown, screen
        term.keys("s")  # the sparkline of the (only, so selected) shell's last minute
        time.sleep(0.6)
        spark = term.screen()
        assert re.search(r"^\s+up\s+\S+ max [\d.]+ Mbit/s$", spark, re.M), spark
        # A reader that stalls never holds a shell up: the link's log below shows no dip while it is stopped.
        reader = int(term.run("list-panes", "-F", "#{pane_pid}").split()[0])
        os.kill(reader, signal.SIGSTOP)
        time.sleep(1.5)
        os.kill(reader, signal.SIGCONT)
        assert shell.wait(timeout=TIMEOUT) == 0, shell.stderr.read()
        time.sleep(0.25 + 0.3)  # one refresh, and time to draw it
        gone = term.screen()
        assert "no tracemod shell is running" in gone, gone
        term.keys("q")
        deadline = time.monotonic() + 5
        while term.alive() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not term.alive(), "q did not quit tm-top"
    finally:
        term.kill()
    delivered, capacity, queued, _, delay, drops = shown.groups()
    log_figures = steady_log_figures(tools, log)
    seen = {"delivered": float(delivered), "capacity": float(capacity), "delay": float(delay),
            "drops": float(drops)}
    for key, value in seen.items():
        assert within(value, log_figures[key], 0.05), (key, seen, log_figures, screen)
    assert abs(int(queued) - QUEUE_PACKETS) <= 3, screen  # a full droptail queue
    assert log_figures["slowest"] >= 0.95 * RATE_MBIT, log_figures  # the reader's stop included


def wait_for_shells(who, tools, count, timeout=10, pid=None):
    """tm-top --json as WHO (of the shell PID and those it encloses, if given), until it shows COUNT shells."""
    deadline = time.monotonic() + timeout
    while True:
        r = who.run(tools.tool("tm-top", "--json", *(["--pid", pid] if pid else [])))
        assert r.returncode == 0, r.stderr
        shells = json.loads(r.stdout)["shells"]
        if len(shells) >= count or time.monotonic() > deadline:
            return shells
        time.sleep(0.2)


def test_json_and_once_show_nested_shells_as_a_tree(who, tools, spawn):
    link = tools.shell("tm-link", "--uplink-rate", "12mbit", "--downlink-rate", "12mbit", cmd=["sleep", "8"])
    stack = spawn(who, tools.shell("tm-delay", 30, cmd=link))
    shells = wait_for_shells(who, tools, 2, pid=stack.pid)
    assert [s["tool"] for s in shells] == ["tm-delay", "tm-link"], shells
    outer, inner = shells
    assert outer["pid"] == stack.pid and outer["depth"] == 0
    assert outer["parent"] == 0 and outer["level"] == 0  # no shell of this user encloses it
    assert inner["parent"] == outer["pid"] and inner["level"] == 1 and inner["depth"] == 1
    assert outer["tag"] == "[delay 30]" and outer["arguments"] == "30" and inner["command"] == "sleep 8", shells
    assert outer["uplink"]["offered_bps"] is None  # a delay line has no capacity
    for d in ("uplink", "downlink"):  # an idle link offers its capacity all the same
        assert within(inner[d]["offered_bps"], 12e6, 0.05), inner[d]
        assert inner[d]["delivered_bps"] < 0.1e6, inner[d]
    text = who.run(tools.tool("tm-top", "--once", "--width", "80", "--pid", stack.pid))
    assert text.returncode == 0, text.stderr
    lines = text.stdout.splitlines()
    assert len(lines) == 6 and all(len(line) <= 80 for line in lines), text.stdout
    assert re.match(rf"\s*{stack.pid} tm-delay 30 -- ", lines[0]), lines[0]
    # Indented: it runs inside tm-delay.
    assert re.match(r"\s{2}\s*\d+ tm-link --uplink-rate 12mbit", lines[3]), lines[3]
    stack.kill()  # SIGKILL: its page goes with it
    stack.wait(timeout=TIMEOUT)
    pids = {s["pid"] for s in shells}
    seen = {s["pid"] for s in wait_for_shells(who, tools, 0, timeout=0)}
    assert not pids & seen, (pids, seen)  # gone as it ended, the shell inside with it


def test_a_user_sees_only_their_own_shells(root, user, tools, spawn):
    shell = spawn(root, tools.shell("tm-delay", 5, cmd=["sleep", "6"]))
    assert [s["pid"] for s in wait_for_shells(root, tools, 1, pid=shell.pid)] == [shell.pid]
    assert wait_for_shells(user, tools, 1, timeout=1, pid=shell.pid) == []
    assert shell.pid not in {s["pid"] for s in wait_for_shells(user, tools, 0, timeout=0)}


def web(tools, who, spawn, *args):
    proc = spawn(who, tools.tool("tm-top", "--web", *args))
    line = read_stderr_line(proc)
    m = re.search(r"serving (http://\S+/)", line)
    assert m, line
    return m.group(1)


def read_stderr_line(proc, timeout=10):
    import select
    fd, buf = proc.stderr.fileno(), b""
    deadline = time.monotonic() + timeout
    while b"\n" not in buf and time.monotonic() < deadline:
        if select.select([fd], [], [], 0.2)[0]:
            chunk = os.read(fd, 4096)
            if not chunk:
                break
            buf += chunk
    return buf.decode()


def get(url):
    with urllib.request.urlopen(url, timeout=10) as r:
        return r.status, r.headers.get("Content-Type"), r.read().decode()


def test_the_web_page_serves_the_figures_and_refuses_a_public_address(who, tools, spawn, public_tmp):
    log = str(public_tmp / f"{who.name}-web.log")
    shell = spawn(who, link_argv(tools, log, 6))
    url = web(tools, who, spawn, "127.0.0.1:0", "--interval", "100ms", "--pid", shell.pid)
    time.sleep(3)
    status, kind, page = get(url)
    assert status == 200 and kind.startswith("text/html"), kind
    assert "<canvas" in page or "createElement(\"canvas\")" in page
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", page) and "https://" not in page  # no outside asset
    ups = []
    for _ in range(3):  # the median of three: one instant's figure missed by 10% once, unmodified
        status, kind, body = get(url + "shells.json")
        figures = json.loads(body)["shells"]
        assert status == 200 and kind == "application/json" and len(figures) == 1, body
        ups.append(figures[0]["uplink"])
        time.sleep(0.3)
    up = sorted(ups, key=lambda u: u["delivered_bps"])[1]
    assert within(up["delivered_bps"], RATE_MBIT * 1e6, 0.05) and within(up["offered_bps"], RATE_MBIT * 1e6, 0.05)
    assert len(up["history_delivered_bps"]) >= 2 and len(up["history_delay_ms"]) == len(up["history_offered_bps"])
    with pytest.raises(urllib.error.HTTPError):
        get(url + "elsewhere")
    r = who.run(tools.tool("tm-top", "--web", "0.0.0.0:0"))
    assert r.returncode == 2 and "--expose-to-network" in r.stderr and len(r.stderr.splitlines()) == 3, r.stderr


CHROMIUM = shutil.which("chromium")


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed")
def test_the_page_in_a_browser_redraws_twice_a_second_with_the_json_figures(root, tools, spawn, public_tmp, tmp_path):
    shell = spawn(root, link_argv(tools, str(public_tmp / "browser-up.log"), 14))
    url = web(tools, root, spawn, "127.0.0.1:0", "--pid", shell.pid)
    time.sleep(3)  # the link is saturated, and tm-top has a few seconds of history

    def chromium(*args):
        r = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", f"--user-data-dir={tmp_path}",
                            "--window-size=1100,700", *args, url], capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr[-2000:]
        return r.stdout

    dom = chromium("--virtual-time-budget=4000", "--dump-dom")
    figures = json.loads(root.run(tools.tool("tm-top", "--json", "--pid", shell.pid)).stdout)["shells"][0]["uplink"]
    m = re.search(r'data-updates="(\d+)"', dom)
    assert m and int(m.group(1)) >= 8, dom[-2000:]  # 4 s at twice a second, and the first at once
    shown = re.search(r"up\s+([\d.]+) /\s+([\d.]+) Mbit/s\s+q\s+(\d+)p", dom)  # the JSON's "text", drawn
    assert shown and "tm-link --uplink-rate 8mbit" in dom, dom[-2000:]
    assert within(float(shown.group(1)), figures["delivered_bps"] / 1e6, 0.05), (shown.groups(), figures)
    assert within(float(shown.group(2)), figures["offered_bps"] / 1e6, 0.05), (shown.groups(), figures)
    assert int(shown.group(3)) > 0 and figures["queued_packets"] > 0  # a queue is an instant's: both non-empty
    artifacts = os.environ.get("TM_TEST_ARTIFACTS") or str(tmp_path)
    os.makedirs(artifacts, exist_ok=True)
    shot = os.path.join(artifacts, "tm-top-web.png")
    chromium("--virtual-time-budget=3000", f"--screenshot={shot}")
    with open(shot, "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n", shot
    print(f"screenshot: {shot}")


def test_meter_prints_a_line_a_second_off_a_terminal(who, tools, public_tmp):
    log = str(public_tmp / f"{who.name}-meter.log")
    r = who.run(link_argv(tools, log, 4, "--meter"), timeout=TIMEOUT)
    assert r.returncode == 0, r.stderr
    lines = [line for line in r.stderr.splitlines() if line.startswith("tm-link up ")]
    assert len(lines) >= 2, r.stderr
    rates = [float(re.match(r"tm-link up ([\d.]+) / ([\d.]+) Mbit/s", line).group(1)) for line in lines[1:]]
    assert all(within(rate, RATE_MBIT, 0.05) for rate in rates[1:]) and rates[0] <= RATE_MBIT * 1.05, r.stderr


@pytest.mark.skipif(TMUX is None, reason="tmux is not installed")
def test_meter_keeps_the_last_line_of_a_terminal_while_output_scrolls_above(who, tools, public_tmp):
    script = "i=0; while [ $i -lt 60 ]; do i=$((i+1)); echo output $i; sleep 0.03; done; sleep 2"
    term = Tmux(who, private_dir(who, public_tmp, "tmux"), [*tools.shell("tm-delay", 5, "--meter", cmd=sh(script))],
                height=20)
    try:
        time.sleep(3)
        rows = term.screen().split("\n")[:20]
    finally:
        term.kill()
    assert rows[19].startswith("tm-delay up "), rows
    assert "output 60" in "\n".join(rows[:19]) and "output 1\n" not in "\n".join(rows), rows  # scrolled above it


def test_drops_are_told_apart_by_cause_and_a_schedule_shows_its_state(who, tools, spawn, public_tmp):
    """tm-loss's drops count as loss, tm-onoff's while off as an outage, and tm-onoff shows its state."""
    schedule = public_tmp / "off-after-half-a-second.sched"
    schedule.write_text("0.5s off\n")  # on until 0.5 s, then off for good
    os.chmod(schedule, 0o644)
    stack = spawn(who, tools.shell("tm-onoff", "--schedule", str(schedule),
                                   cmd=tools.shell("tm-loss", "uplink", "30%", "--seed", 1, cmd=sender(6))))
    time.sleep(2)
    onoff, loss = wait_for_shells(who, tools, 2, pid=stack.pid)
    assert (onoff["tool"], loss["tool"]) == ("tm-onoff", "tm-loss")
    lost, off = loss["uplink"]["drops_per_s"], onoff["uplink"]["drops_per_s"]
    assert 200 <= lost["loss"] <= 400 and lost["queue"] == lost["outage"] == lost["aqm"] == 0, loss["uplink"]
    assert 600 <= off["outage"] <= 800 and off["loss"] == off["queue"] == 0, onoff["uplink"]  # what tm-loss left
    assert onoff["uplink"]["state"] == "off" and loss["uplink"]["state"] == "", (onoff, loss)
    assert loss["uplink"]["totals"]["dropped_packets"]["loss"] > 0


@pytest.mark.parametrize("args,said", [
    (["--once", "foo"], "unexpected argument 'foo': tm-top takes options only"),
    (["--json", "--width", "40"], "--width cuts --once's lines: JSON and the live views are not cut"),
    (["--once", "--interval", "100ms"], "--interval is the live view's refresh: a snapshot reads the shells for"),
    (["--web", "0", "--json"], "--web shows the live view: give it without --once or --json"),
])
def test_an_option_tm_top_cannot_honour_is_refused(who, tools, args, said):
    """Found accepted and ignored (exit 0)."""
    r = who.run(tools.tool("tm-top", *args))
    assert r.returncode == 2 and r.stdout == "" and r.stderr.startswith(f"tm-top: {said}"), r.stderr


def test_a_snapshot_of_a_pid_that_is_no_shell_says_so_and_once_with_json_is_json(who, tools):
    r = who.run(tools.tool("tm-top", "--once", "--pid", "1"))
    assert (r.returncode, r.stdout, r.stderr) == (1, "", "tm-top: no tracemod shell of this user has pid 1\n")
    r = who.run(tools.tool("tm-top", "--once", "--json"))
    assert r.returncode == 0 and "shells" in json.loads(r.stdout), r.stderr


# Both directions loaded at once, each past a capacity of its own: 11.4 Mbit/s of datagrams up into 8 Mbit/s and
# down into 3 Mbit/s (channel_probe: the outer namespace sends the downlink stream back to the first datagram's
# sender). Every other load here is an uplink sender, so a row showing the other direction's figures passed.
BOTH_WAYS = {"uplink": 8, "downlink": 3}  # Mbit/s


def test_each_row_shows_its_own_direction_while_both_carry_a_load(who, tools, spawn):
    probe = python_script("channel_probe.py")
    count, spacing, size, port = 12 * SEND_PPS, 1 / SEND_PPS, DATAGRAM + 28, 9401
    queues = [arg for d in ("uplink", "downlink") for arg in (f"--{d}-queue", "droptail", f"--{d}-queue-args",
                                                              f"packets={QUEUE_PACKETS}")]
    link = tools.shell("tm-link", "--uplink-rate", f"{BOTH_WAYS['uplink']}mbit",
                       "--downlink-rate", f"{BOTH_WAYS['downlink']}mbit", *queues,
                       cmd=sh(f'exec "$@" send "$TM_OUTER" {port} {count} {spacing} {size}', *probe))
    stack = spawn(who, tools.delay("--isolated", 0, cmd=[*probe, *map(str, ("serve", port, count, spacing, size)), *link]))
    time.sleep(4)  # both queues full: a steady state
    text = who.run(tools.tool("tm-top", "--once", "--width", "100", "--pid", stack.pid))
    samples = []
    for _ in range(3):  # the median of three, not one instant's figures
        samples.append(next(s for s in wait_for_shells(who, tools, 2, pid=stack.pid) if s["tool"] == "tm-link"))
        time.sleep(0.7)
    stack.kill()
    assert text.returncode == 0, text.stderr
    for direction, mbit in BOTH_WAYS.items():
        delivered, offered = (sorted(s[direction][key] / 1e6 for s in samples)[1]
                              for key in ("delivered_bps", "offered_bps"))
        assert within(delivered, mbit, 0.1) and within(offered, mbit, 0.05), (direction, samples)
        assert all(s[direction]["queued_packets"] > QUEUE_PACKETS / 2 for s in samples), (direction, samples)
        label = direction[:-4]  # "up", "down"
        rows = text.stdout.split(" tm-link ", 1)[-1]  # tm-link's rows: tm-delay's, above, carry no capacity
        row = re.search(rf"^\s+{label}\s+([\d.]+) /\s+([\d.]+) Mbit/s", rows, re.M)
        assert row and within(float(row.group(2)), mbit, 0.05), (direction, text.stdout)
        assert within(float(row.group(1)), mbit, 0.15), (direction, text.stdout)
