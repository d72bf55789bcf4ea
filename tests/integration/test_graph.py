"""tm-graph: the summary of a link log in either dialect (Mahimahi's whole milliseconds and 1504-byte
opportunities, or tracemod's decimals and 1500), its SVG and PNG pictures through gnuplot, input errors with
FILE:LINE, and a machine without gnuplot."""
import os
import re
import struct
import xml.etree.ElementTree as ET

import pytest

from conftest import DATA, python_script, sh

# What the log below holds, over exactly 1000 ms from its first event to its last: 1000 opportunities (one per
# ms), 500 departures (every other ms) whose delays run 0..99 ms five times over, and 3 drops.
DIALECTS = {
    "mahimahi": {"size": 1504, "time": "{:d}", "capacity": "12.03", "throughput": "6.02"},
    "tracemod": {"size": 1500, "time": "{:.3f}", "capacity": "12.00", "throughput": "6.00"},
}
BASE = 12


def write_log(path, dialect):
    d = DIALECTS[dialect]
    size, fmt = d["size"], d["time"].format
    if dialect == "mahimahi":
        header = ["# mahimahi mm-link (Uplink) [/tmp/12mbit] > /tmp/up.log", "# command line: mm-link ...",
                  "# queue: infinite", "# init timestamp: 10", f"# base timestamp: {BASE}"]
    else:
        header = ["# command line: tm-link ...", "# version: 0.1.0", "# queue: infinite", "# seed: 1",
                  f"# base timestamp: {BASE:.3f}"]
    events = [(0, 2, f"+ {size}")]
    for ms in range(1, 1001):
        events.append((ms, 0, f"# {size}"))
        if ms % 2 == 0:
            delay = (ms // 2 - 1) % 100
            events.append((ms - delay, 2, f"+ {size}"))
            events.append((ms, 1, f"- {size} {fmt(delay)}"))
    for _ in range(3):
        events += [(500, 2, f"+ {size}"), (500, 3, f"d 1 {size}")]
    lines = [f"{fmt(BASE + t)} {text}" for t, _, text in sorted(events)]
    path.write_text("\n".join(header + lines) + "\n")
    return path


def expected_summary(dialect):
    d = DIALECTS[dialect]
    return (f"Average capacity: {d['capacity']} Mbits/s\n"
            f"Average throughput: {d['throughput']} Mbits/s (50.0% utilization)\n"
            "95th percentile per-packet queueing delay: 95.000 ms\n"
            "50th percentile per-packet queueing delay: 50.000 ms\n"
            "99th percentile per-packet queueing delay: 99.000 ms\n"
            f"Drops: 3 packets, {3 * d['size']} bytes\n")


@pytest.mark.parametrize("dialect", DIALECTS)
def test_summary_of_either_dialect(root, tools, public_tmp, dialect):
    log = write_log(public_tmp / f"{dialect}.log", dialect)
    r = root.run(tools.tool("tm-graph", log))
    assert r.returncode == 0, r.stderr
    assert r.stdout == expected_summary(dialect)
    assert r.stderr == ""


def summary_by_mahimahis_definitions(lines):
    """What mm-throughput-graph prints for a log (and tm-graph's added lines), computed here from the log's
    lines: times relative to the base timestamp, averages over the first to the last event, the P-th
    percentile the delay at index floor(P/100 * n) of the sorted delays."""
    base, times, capacity, departed, delays, drops = None, [], 0, 0, [], [0, 0]
    for line in lines:
        if line.startswith("#"):
            m = re.match(r"# base timestamp: ([\d.]+)$", line)
            base = float(m.group(1)) if m else base
            continue
        f = line.split()
        times.append(float(f[0]) - base)
        if f[1] == "#":
            capacity += int(f[2])
        elif f[1] == "-":
            departed += int(f[2])
            delays.append(float(f[3]))
        elif f[1] == "d":
            drops = [drops[0] + int(f[2]), drops[1] + int(f[3])]
    span_ns = round((max(times) - min(times)) * 1e6)
    cap, thr = capacity * 8e3 / span_ns, departed * 8e3 / span_ns
    delays.sort()
    text = f"Average capacity: {cap:.2f} Mbits/s\nAverage throughput: {thr:.2f} Mbits/s ({100 * thr / cap:.1f}% utilization)\n"
    for p in (95, 50, 99):
        text += f"{p}th percentile per-packet queueing delay: {delays[int(p / 100 * len(delays))]:.3f} ms\n"
    return text + f"Drops: {drops[0]} packets, {drops[1]} bytes\n"


@pytest.mark.parametrize("name", ["up.log", "down.log"])
def test_summary_of_a_log_written_by_mahimahis_own_mm_link(root, tools, public_tmp, name):
    # tests/data/README: mm-link 12m 12m (12 Mbit/s both ways), ping then a 2 s iperf3 download.
    log = os.path.join(DATA, "mahimahi-logs", name)
    with open(log) as f:
        lines = f.read().splitlines()
    assert lines[0].startswith("# mahimahi mm-link") and "# init timestamp: " in lines[3], lines[:5]
    svg = public_tmp / "mm.svg"
    r = root.run(tools.tool("tm-graph", log, "--svg", svg))
    assert r.returncode == 0 and r.stderr == "", r.stderr
    assert r.stdout == summary_by_mahimahis_definitions(lines)
    # 1504 bytes a millisecond over (last - first) ms, both ends holding an opportunity: 12.032 * (n + 1) / n
    assert r.stdout.startswith("Average capacity: 12.04 Mbits/s\n")
    texts = " ".join("".join(e.itertext()) for e in ET.parse(svg).getroot().iter("{http://www.w3.org/2000/svg}text"))
    assert "capacity (mean 12.04 Mbit/s)" in texts, texts


def test_svg_and_png_hold_both_plots(root, tools, public_tmp):
    log = write_log(public_tmp / "up.log", "mahimahi")
    svg, png = public_tmp / "up.svg", public_tmp / "up.png"
    r = root.run(tools.tool("tm-graph", log, "--bin", 100, "--svg", svg, "--png", png, "--title", "uplink <test>"))
    assert r.returncode == 0, r.stderr
    assert r.stdout == expected_summary("mahimahi")

    root_element = ET.parse(svg).getroot()
    assert root_element.tag == "{http://www.w3.org/2000/svg}svg"
    texts = " ".join("".join(e.itertext()) for e in root_element.iter("{http://www.w3.org/2000/svg}text"))
    for label in ("uplink <test>", "throughput (Mbit/s)", "queueing delay (ms)", "time (s)",
                  "capacity (mean 12.03 Mbit/s)", "delivered (mean 6.02 Mbit/s)", "maximum per bin"):
        assert label in texts, f"{label!r} not in the SVG's text: {texts!r}"
    plots = {e.get("id") for e in root_element.iter("{http://www.w3.org/2000/svg}g")
             if re.fullmatch(r"gnuplot_plot_\d+[a-z]", e.get("id") or "")}
    assert {p[-1] for p in plots} == {"a", "b"}, f"not two panels: {sorted(plots)}"

    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    assert (width, height) == (1024, 720)
    assert len(data) > 10000


def test_log_shorter_than_a_bin_is_drawn(root, tools, public_tmp):
    log = public_tmp / "short.log"
    log.write_text("# base timestamp: 100.000\n100.500 + 1500\n101.000 # 1500\n101.000 - 1500 0.500\n")
    r = root.run(tools.tool("tm-graph", log, "--bin", 1000, "--png", public_tmp / "short.png"))
    assert r.returncode == 0, r.stderr
    assert "Average capacity: 24.00 Mbits/s\n" in r.stdout


BAD_LOGS = [
    ("# base timestamp: 0\n1 # 1500\n\n", 3, "empty line"),
    ("# base timestamp: 0\n1 # 1500\n2 x 1500\n", 3, "unknown event 'x'"),
    ("1 + 1500\n# base timestamp: 0\n", 1, "before the '# base timestamp:' line"),
    ("# base timestamp: 0\n1 - 1500\n", 2, "too few fields"),
    ("# base timestamp: 0\n1 - 1500 fast\n", 2, "bad queueing delay 'fast'"),
    ("# base timestamp: 0\r\n", 1, "carriage return"),
]


@pytest.mark.parametrize("text,line,what", BAD_LOGS, ids=[w for _, _, w in BAD_LOGS])
def test_bad_log_exits_2_naming_file_and_line(root, tools, public_tmp, text, line, what):
    log = public_tmp / "bad.log"
    log.write_text(text)
    r = root.run(tools.tool("tm-graph", log))
    assert r.returncode == 2, r.stderr
    assert r.stdout == ""
    assert re.fullmatch(rf"tm-graph: {re.escape(str(log))}:{line}: [^\n]*{re.escape(what)}[^\n]*\n", r.stderr), r.stderr


@pytest.mark.parametrize("text,what", [("", "empty log"), ("# base timestamp: 1\n", "no events")],
                         ids=["empty", "header only"])
def test_log_without_events_is_an_error(root, tools, public_tmp, text, what):
    log = public_tmp / "empty.log"
    log.write_text(text)
    r = root.run(tools.tool("tm-graph", log))
    assert r.returncode == 2 and r.stdout == ""
    assert re.fullmatch(rf"tm-graph: {re.escape(str(log))}: {what}[^\n]*\n", r.stderr), r.stderr


def test_without_gnuplot_the_summary_still_prints(root, tools, public_tmp):
    log = write_log(public_tmp / "up.log", "tracemod")
    no_gnuplot = {"PATH": str(public_tmp)}
    r = root.run(tools.tool("tm-graph", log), env=no_gnuplot)
    assert r.returncode == 0 and r.stdout == expected_summary("tracemod"), r.stderr

    png = public_tmp / "up.png"
    r = root.run(tools.tool("tm-graph", log, "--png", png), env=no_gnuplot)
    assert r.returncode == 1
    assert r.stdout == expected_summary("tracemod")
    assert r.stderr == "tm-graph: --png needs gnuplot, which is not on PATH (Debian: gnuplot-nox)\n"
    assert not png.exists()


@pytest.mark.parametrize("args,named", [(["x.log", "--bin", "0"], "'0'"), (["x.log", "--bin", "x"], "'x'"),
                                        ([], "missing LOG"), (["--bogus"], "--bogus"),
                                        (["a", "b", "--json"], "--json reads one LOG")],
                         ids=["bin 0", "bin x", "no log", "unknown option", "json of two logs"])
def test_bad_usage_exits_2(root, tools, args, named):
    r = root.run(tools.tool("tm-graph", *args))
    assert r.returncode == 2 and r.stdout == ""
    lines = r.stderr.splitlines()
    assert lines[0].startswith("tm-graph: ") and named in lines[0], r.stderr
    assert lines[1].startswith("usage: tm-graph LOG "), r.stderr


def test_help_and_version(root, tools):
    r = root.run(tools.tool("tm-graph", "--help"))
    assert r.returncode == 0 and r.stdout.startswith("usage: tm-graph LOG ") and "--png" in r.stdout
    r = root.run(tools.tool("tm-graph", "--version"))
    assert r.returncode == 0 and re.fullmatch(r"tm-graph \(tracemod\) \S+\n", r.stdout)


def test_saturated_tm_link_log_shows_the_configured_rate(root, tools, public_tmp):
    """UDP at twice 12 Mbit/s for 3 s into tm-link's uplink (droptail, 100 packets), received outside."""
    log = public_tmp / "up.log"
    probe = python_script("link_probe.py")
    sender = sh('exec "$@" send "$TM_OUTER" 9100 2000 3 1500', *probe)
    link = tools.shell("tm-link", "--uplink-rate", "12mbit", "--downlink-rate", "12mbit", "--uplink-queue=droptail",
                       "--uplink-queue-args=packets=100", f"--uplink-log={log}", cmd=sender)
    r = root.run(tools.delay("--isolated", 0, cmd=[*probe, "recv", "9100", "30", "-", *link]), timeout=60)
    assert r.returncode == 0, r.stderr
    received = len(r.stdout.splitlines())

    r = root.run(tools.tool("tm-graph", log))
    assert r.returncode == 0, r.stderr
    lines = log.read_text().splitlines()
    assert r.stdout == summary_by_mahimahis_definitions(lines)
    numbers = dict(re.findall(r"^(Average capacity|95th percentile[^:]*): ([\d.]+)", r.stdout, re.M))
    # An opportunity every ms from the first event to the last (3 s or more): 12 * (1 +- 1/3000) Mbit/s.
    assert abs(float(numbers["Average capacity"]) - 12.0) <= 0.01, r.stdout
    # Once full, the queue holds 100 packets that leave one a ms: all but the packets of the first 100 ms
    # (about 200 of 3000) wait 99 to 101 ms.
    assert 95 <= float(numbers["95th percentile per-packet queueing delay"]) <= 101, r.stdout
    # What the summary counts is what crossed: the log's 1500-byte departures are the datagrams received
    # (the few others are the kernel's own small packets), and every arrival left, was dropped or was
    # among the 100 still queued at the end.
    count = lambda pattern: sum(1 for line in lines if re.fullmatch(pattern, line))
    arrived, departed = count(r"[\d.]+ \+ 1500"), count(r"[\d.]+ - 1500 [\d.]+")
    dropped = count(r"[\d.]+ d 1 1500")
    assert received == departed, f"{received} datagrams received, {departed} departures in the log"
    assert dropped > 1000 and 0 <= arrived - departed - dropped <= 100, (arrived, departed, dropped)
