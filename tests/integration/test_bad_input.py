"""Bad input, one class per test: each tool refuses it with exit 2 and one line naming the file and entry, the
option or the value at fault, before it writes anything; never a crash, a silent guess or garbage output. The raw
records are written here byte by byte (a few protobuf fields), as a recorder, another tool or a corrupt disk
would have left them."""
import os
import subprocess
import time

import pytest

from conftest import TRACES


def assert_refused(r, tool, *named):
    """Exit 2, the first line of stderr the tool's own naming NAMED, nothing on stdout."""
    assert r.returncode == 2, r
    first = r.stderr.splitlines()[0] if r.stderr else ""
    assert first.startswith(f"{tool}: ") and all(n in first for n in named), r.stderr
    assert r.stdout == "", r.stdout


# ---------------------------------------------------------------------------------------------------------
# Files that are not text


def test_a_binary_distribution_file_is_not_echoed_raw(root, tools, tmp_path):
    path = tmp_path / "garbage.bin"
    path.write_bytes(b"\x1b[2J\x1b]0;pwned\x07\x00\xff\xfe\n")
    r = root.run(tools.shell("tm-delay", "10", "--jitter", "5", "--distribution", path, cmd=["true"]))
    assert_refused(r, "tm-delay", f"{path}:1: '\\x1b[2J\\x1b]0;pwned\\x07\\x00\\xff\\xfe' is not a number")
    assert all(c == "\n" or " " <= c <= "~" for c in r.stderr), r.stderr


# ---------------------------------------------------------------------------------------------------------
# Raw records: protobuf by hand, varints, fields, length-delimited entries (src/record/record.proto,
# src/probe/probe.proto)

MS = 10 ** 6


def varint(n):
    n &= (1 << 64) - 1  # negative int64s are ten bytes of two's complement
    out = bytearray()
    while True:
        low, n = n & 0x7F, n >> 7
        out.append(low | (0x80 if n else 0))
        if not n:
            return bytes(out)


def message(*fields):
    """Fields (number, value): an int or bool as a varint, str or bytes length-delimited."""
    out = b""
    for number, value in fields:
        if isinstance(value, str):
            value = value.encode()
        if isinstance(value, bytes):
            out += varint(number << 3 | 2) + varint(len(value)) + value
        else:
            out += varint(number << 3) + varint(int(value))
    return out


def raw_file(path, *entries):
    """ENTRIES (each a RawEntry or ProbeEntry: message((1, header)), ...) length-delimited into PATH."""
    with open(path, "wb") as f:
        f.write(b"".join(varint(len(e)) + e for e in entries))
    return str(path)


def record_header(version=1, direction="up", kind="tm-record raw record"):
    fields = [(1, version), (2, "test"), (3, direction), (4, 1500)] + ([(15, kind)] if kind else [])
    return message((1, message(*fields)))


def arrival(seq, recv_ms, send_ms=None):
    send_ms = recv_ms - 10 if send_ms is None else send_ms
    return message((2, message((1, seq), (2, send_ms * MS), (3, recv_ms * MS), (4, 1500))))


def probe_header(kind="tm-probe raw record", target="192.0.2.1"):
    fields = [(1, 1), (2, "test"), (3, target), (4, "192.0.2.1"), (5, "udp"), (7, 64), (8, 1400),
              (9, 1000 * MS), (10, 5000 * MS)] + ([(15, kind)] if kind else [])
    return message((1, message(*fields)))


YEARS = 3 * 365 * 86400 * 1000  # ms
RECORDS = {
    "a tm-probe record": ([probe_header()], "not a tm-record raw record (its header says it is a 'tm-probe raw record')"),
    "an older tm-probe record": ([probe_header(kind="", target="up")],
                                 "not a tm-record raw record (its header holds fields unknown to a tm-record raw record)"),
    "format_version 99": ([record_header(version=99), arrival(0, 100)], "format_version 99 of a tm-record raw record"),
    "direction sideways": ([record_header(direction="sideways"), arrival(0, 100)],
                           "the header's direction 'sideways' is neither up nor down"),
    "a negative arrival": ([record_header(), arrival(0, 100), arrival(1, -5, 0)],
                           "entry 3: a negative time (sent at 0 ns, received at -5000000 ns)"),
    "arrivals out of order": ([record_header(), arrival(0, 10000), arrival(1, 10001), arrival(2, 5000)],
                              "entry 4: received 5.001 s before an earlier entry: arrivals are recorded in time order"),
    "arrivals years apart": ([record_header(), arrival(0, 100), arrival(1, YEARS)],
                             "entry 3: received 94607999.900 s after the first arrival: a recording lasts at most"),
}


@pytest.mark.parametrize("case", RECORDS)
def test_distill_refuses_what_a_recorder_does_not_write(root, tools, tmp_path, case):
    entries, named = RECORDS[case]
    raw = raw_file(tmp_path / "x.raw", *entries)
    r = root.run(tools.tool("tm-record", "distill", raw, "-o", tmp_path / "out"), timeout=10)
    assert_refused(r, "tm-record", f"{raw}: {named}")
    assert sorted(os.listdir(tmp_path)) == ["x.raw"], "it wrote something"


def test_distill_still_reads_a_record_from_before_headers_named_their_format(root, tools, tmp_path):
    raw = raw_file(tmp_path / "old.raw", record_header(kind=""), *(arrival(i, 1000 + i) for i in range(5)))
    r = root.run(tools.tool("tm-record", "distill", raw, "-o", tmp_path / "old"))
    assert r.returncode == 0 and r.stdout.startswith("up: 0.00 s, 5 packets"), r
    assert (tmp_path / "old").read_text() == "0\n1\n2\n3\n4\n"


@pytest.mark.parametrize("sub", ["print", "distill"])
@pytest.mark.parametrize("named", [True, False], ids=["named", "older"])
def test_probe_refuses_a_tm_record_record(root, tools, tmp_path, sub, named):
    raw = raw_file(tmp_path / "rec.raw", record_header(kind="tm-record raw record" if named else ""), arrival(0, 100))
    r = root.run(tools.tool("tm-probe", sub, raw))
    assert_refused(r, "tm-probe", f"{raw}: not a tm-probe raw record (its header "
                                  + ("says it is a 'tm-record raw record')" if named else "holds fields unknown"))


def test_a_corrupt_probe_header_is_one_line_of_the_tools_own(root, tools, tmp_path):
    raw = raw_file(tmp_path / "utf8.raw", message((1, message((1, 1), (3, b"\xff\xfe")))))  # target not UTF-8
    r = root.run(tools.tool("tm-probe", "print", raw))
    assert_refused(r, "tm-probe", f"{raw}: entry 1: not a tm-probe raw entry")  # no "[libprotobuf ERROR ...]" first



# ---------------------------------------------------------------------------------------------------------
# Sizes


def test_make_refuses_a_trace_of_petabytes_before_writing(root, tools, tmp_path):
    out = tmp_path / "huge.trace"
    r = root.run(tools.tool("tm-trace", "make", "--rate", "1000gbit", "--duration", "4294967295ms", "-o", out),
                 timeout=10)
    assert_refused(r, "tm-trace", "the trace would have 357913941250000 lines, about 3.94 PB: more than 100000000")
    assert not out.exists()

# ---------------------------------------------------------------------------------------------------------
# Options that contradict each other


def test_link_refuses_one_file_for_two_logs_or_a_log_over_a_trace(root, tools, tmp_path):
    trace = os.path.join(TRACES, "constant-12mbit")
    r = root.run(tools.shell("tm-link", trace, trace, f"--uplink-log={tmp_path}/x.log",
                             f"--downlink-log={tmp_path}/./x.log", cmd=["true"]))  # one file, two names
    assert_refused(r, "tm-link", "--downlink-log", "names the same file as --uplink-log: each output needs a file")
    copy = tmp_path / "up.trace"
    copy.write_text("1\n")
    r = root.run(tools.shell("tm-link", copy, trace, f"--downlink-log={copy}", cmd=["true"]))
    assert_refused(r, "tm-link", f"--downlink-log '{copy}' names the uplink trace: the output would overwrite it")
    assert copy.read_text() == "1\n"


CONFLICTS = {
    "schedule both and one": ("tm-onoff", ["--schedule", "s", "--uplink-schedule", "s"],
                              "--schedule (both directions) and --uplink-schedule (one) exclude each other"),
    "hold-packets, dropping": ("tm-onoff", ["--uplink-on", "exp:10s", "--uplink-off", "exp:1s", "--hold-packets", "10"],
                               "--hold-packets limits what --off-mode hold holds: with --off-mode drop nothing is held"),
    "hold-bytes, dropping": ("tm-onoff", ["--uplink-on", "exp:10s", "--uplink-off", "exp:1s", "--off-mode", "drop",
                                          "--hold-bytes", "1MB"], "--hold-bytes limits what --off-mode hold holds"),
    "token twice": ("tm-record", ["client", "--token", "t", "--token-file", "/etc/hostname", "192.0.2.1"],
                    "--token and --token-file exclude each other"),
}


@pytest.mark.parametrize("tool,args,named", CONFLICTS.values(), ids=CONFLICTS.keys())
def test_contradicting_options_are_refused(root, tools, tmp_path, tool, args, named):
    (tmp_path / "s").write_text("1 off\n2 on\n")
    argv = tools.tool(tool, *args) if tool == "tm-record" else tools.shell(tool, *args, cmd=["true"])
    r = subprocess_in(root, argv, tmp_path)
    assert_refused(r, tool, named)


def subprocess_in(who, argv, directory):
    """WHO runs ARGV in DIRECTORY (the run helpers run in /): relative file names resolve there."""
    return who.run(["sh", "-c", 'cd "$1" && shift && exec "$@"', "sh", str(directory), *map(str, argv)])



# ---------------------------------------------------------------------------------------------------------
# Values


VALUES = [
    ("tm-link", ["--uplink-rate", "1e30bit", "--downlink-rate", "1mbit"],
     "invalid rate '1e30bit': an exponent is not allowed: expected a number and a unit"),
    ("tm-onoff", ["--uplink-on", "pareto:10:1", "--uplink-off", "exp:1"],
     "invalid --uplink-on (pareto shape) '1': expected a shape above 1 (a Pareto of shape 1 or less has no mean)"),
]


@pytest.mark.parametrize("tool,args,named", VALUES, ids=[a[1] for _, a, _ in VALUES])
def test_values_say_what_is_wrong_with_them(root, tools, tool, args, named):
    assert_refused(root.run(tools.shell(tool, *args, cmd=["true"])), tool, named)


# ---------------------------------------------------------------------------------------------------------
# Inputs and outputs: an output that is an input or another output is refused before anything is read or
# written (util's check_outputs: by device and inode, or by real name for a file not yet made); a FIFO or a
# device is refused as an input before a read could block on it; a file of one gigantic line is refused after
# its first MiB (util's LineReader), not read into memory. In ARGS and the messages, {d} is the test's directory.

SHELLS = {"tm-link", "tm-modulate", "tm-multipath", "tm-onoff", "tm-delay", "tm-webreplay", "tm-webrecord"}


def argv_of(tools, tool, args, d):
    """TOOL's argv with ARGS in directory D; a shell runs `true`."""
    args = [a.format(d=d, traces=TRACES) for a in args]
    return [tools.path(tool), *args, *(["--", "true"] if tool in SHELLS else [])]


def state(directory):
    """Every file of DIRECTORY: its bytes and mtime, or for a FIFO its inode."""
    out = {}
    for name in sorted(os.listdir(directory)):
        path = os.path.join(directory, name)
        st = os.lstat(path)
        out[name] = (open(path, "rb").read(), st.st_mtime_ns) if os.path.isfile(path) else st.st_ino
    return out


def inputs(d):
    """The files the overwriting cases name, in D."""
    raw_file(d / "rec.raw", record_header(), arrival(0, 100), arrival(1, 101))
    os.link(d / "rec.raw", d / "r.delay")
    raw_file(d / "probe.raw", probe_header())
    (d / "s.sched").write_text("1s delay=10ms rate=10mbit\n")
    os.link(d / "s.sched", d / "hard.sched")  # one file, two names
    (d / "l.log").write_text("# base timestamp: 0\n0 # 1500\n0 + 1500\n5 - 1500 5\n10 # 1500\n")
    (d / "up.trace").write_text("1\n")
    (d / "on.sched").write_text("1s off\n2s on\n")


TRACE = "{traces}/constant-12mbit"
OVERWRITES = {
    "record distill over its record": ("tm-record", ["distill", "-o", "{d}/rec.raw", "{d}/rec.raw"],
                                       "the trace (-o PREFIX) '{d}/rec.raw' names the raw record: the output would overwrite it"),
    "record distill series over a hard link": ("tm-record", ["distill", "-o", "{d}/r", "{d}/rec.raw"],
                                               "the delay series (PREFIX.delay) '{d}/r.delay' names the raw record"),
    "probe distill over its record": ("tm-probe", ["distill", "-o", "{d}/probe.raw", "{d}/probe.raw"],
                                      "-o '{d}/probe.raw' names the raw record: the output would overwrite it"),
    "modulate log over its schedule": ("tm-modulate", ["--log", "{d}/s.sched", "{d}/s.sched"],
                                       "--log '{d}/s.sched' names the schedule: the output would overwrite it"),
    "modulate log over a hard link": ("tm-modulate", ["--log", "{d}/hard.sched", "{d}/s.sched"],
                                      "--log '{d}/hard.sched' names the schedule: the output would overwrite it"),
    "graph png over its log": ("tm-graph", ["--png", "{d}/l.log", "{d}/l.log"],
                               "--png '{d}/l.log' names the log '{d}/l.log': the output would overwrite it"),
    "graph png and svg one file": ("tm-graph", ["--png", "{d}/x", "--svg", "{d}/./x", "{d}/l.log"],
                                   "--png '{d}/x' names the same file as --svg: each output needs a file of its own"),
    "link log and capture one file": ("tm-link", [TRACE, TRACE, "--downlink-log", "{d}/f", "--pcap", "{d}/f"],
                                      "--downlink-log '{d}/f' names the same file as --pcap: each output needs"),
    "multipath log over a later trace": ("tm-multipath", ["--path", "rate=10mbit,up-log={d}/up.trace",
                                                          "--path", "trace={d}/up.trace"],
                                         "--path 1 (a path up-log=) '{d}/up.trace' names the trace of --path 2"),
    "onoff capture over its schedule": ("tm-onoff", ["--schedule", "{d}/on.sched", "--pcap", "{d}/on.sched"],
                                        "--pcap '{d}/on.sched' names the schedule of --schedule: the output would"),
}


@pytest.mark.parametrize("case", OVERWRITES)
def test_an_output_that_is_an_input_or_another_output_is_refused(root, tools, tmp_path, case):
    tool, args, named = OVERWRITES[case]
    inputs(tmp_path)
    before = state(tmp_path)
    r = root.run(argv_of(tools, tool, args, tmp_path), timeout=10)
    assert_refused(r, tool, named.format(d=tmp_path))
    assert state(tmp_path) == before, "it wrote, removed or touched a file"


FIFOS = {  # where each tool reads a file whole before it starts
    "webreplay recording": ("tm-webreplay", ["{d}/fifo"]),
    "webrecord upstream CA": ("tm-webrecord", ["--upstream-ca", "{d}/fifo", "{d}/rec"]),
    "record distill raw record": ("tm-record", ["distill", "{d}/fifo"]),
    "probe distill raw record": ("tm-probe", ["distill", "{d}/fifo"]),
    "link trace": ("tm-link", ["{d}/fifo", "{d}/fifo"]),
    "modulate schedule": ("tm-modulate", ["{d}/fifo"]),
    "onoff schedule": ("tm-onoff", ["--schedule", "{d}/fifo"]),
    "delay distribution": ("tm-delay", ["10", "--jitter", "5", "--distribution", "{d}/fifo"]),
    "graph link log": ("tm-graph", ["{d}/fifo"]),
}


@pytest.mark.parametrize("case", FIFOS)
def test_a_fifo_is_refused_not_waited_on(root, tools, tmp_path, case):
    tool, args = FIFOS[case]
    os.mkfifo(tmp_path / "fifo")
    before = state(tmp_path)
    r = root.run(argv_of(tools, tool, args, tmp_path), timeout=5)  # a tool blocked on it fails here, not the suite
    kind = "give a HAR file or a recording directory" if tool == "tm-webreplay" else "a FIFO"
    assert_refused(r, tool, f"{tmp_path}/fifo: not a regular file ({kind})")
    assert state(tmp_path) == before, "it left something behind"


DEVICES = {  # read whole, /dev/zero never ends
    "webreplay recording": ("tm-webreplay", ["/dev/zero"], "give a HAR file or a recording directory"),
    "modulate schedule": ("tm-modulate", ["/dev/zero"], "a character device"),
    "graph link log": ("tm-graph", ["/dev/zero"], "a character device"),
    "record distill raw record": ("tm-record", ["distill", "-o", "{d}/out", "/dev/zero"], "a character device"),
}


@pytest.mark.parametrize("case", DEVICES)
def test_a_device_is_refused_not_read_without_end(root, tools, tmp_path, case):
    tool, args, kind = DEVICES[case]
    r = root.run(["prlimit", f"--as={ADDRESS_SPACE}", "--", *argv_of(tools, tool, args, tmp_path)], timeout=10)
    assert_refused(r, tool, f"/dev/zero: not a regular file ({kind})")
    assert os.listdir(tmp_path) == []


NULS = {  # a text file read a line at a time
    "modulate schedule": ("tm-modulate", ["{d}/nul"]),
    "delay distribution": ("tm-delay", ["10", "--jitter", "5", "--distribution", "{d}/nul"]),
    "onoff schedule": ("tm-onoff", ["--schedule", "{d}/nul"]),
    "graph link log": ("tm-graph", ["{d}/nul"]),
    "link trace": ("tm-link", ["{d}/nul", "{d}/nul"]),
    "trace validate": ("tm-trace", ["validate", "{d}/nul"]),
}
ADDRESS_SPACE = 512 << 20  # a tool reading the 2 GB whole fails under this cap instead of swapping


@pytest.mark.parametrize("case", NULS)
def test_a_gigantic_line_is_refused_at_once_in_little_memory(root, tools, tmp_path, case):
    tool, args = NULS[case]
    with open(tmp_path / "nul", "wb") as f:
        f.truncate(2 << 30)  # 2 GB of NULs, sparse: no disk
    start = time.monotonic()
    r = root.run(["prlimit", f"--as={ADDRESS_SPACE}", "--", *argv_of(tools, tool, args, tmp_path)], timeout=10)
    took = time.monotonic() - start
    line = f"{tmp_path}/nul:1: a line of more than 1048575 bytes"
    if tool == "tm-trace":  # validate's own form: the error alone, as for any bad trace
        assert (r.returncode, r.stdout, r.stderr) == (2, "", line + "\n"), r
    else:
        assert_refused(r, tool, line)
    assert took < 2, f"{took:.2f} s: it read far more than the first MiB"
    assert os.listdir(tmp_path) == ["nul"]


# std::filesystem throws on '' and, for a relative path, when the current directory is gone (getcwd fails in a
# directory removed under it): a usage error naming the option, never an uncaught filesystem_error (SIGABRT).
ABORTS = {
    "an empty upstream CA": ("tm-webrecord", ["--upstream-ca", "", "{d}/rec"], False,
                             "--upstream-ca: give a file of CA certificates (PEM), not ''"),
    "an empty CA directory": ("tm-webreplay", ["--ca-dir", "", "{d}/site.har"], False,
                              "--ca-dir: give a directory, not ''"),
    "a relative CA in a removed directory": ("tm-webrecord", ["--upstream-ca", "ca.pem", "{d}/rec"], True,
                                             "--upstream-ca 'ca.pem': cannot make it absolute: "),
}
HAR = '{"log": {"entries": [{"request": {"method": "GET", "url": "http://a.example/"}, "response": {"status": 200}}]}}'


@pytest.mark.parametrize("case", ABORTS)
def test_a_path_std_filesystem_cannot_take_is_refused_not_aborted(root, tools, tmp_path, case):
    tool, args, removed, named = ABORTS[case]
    (tmp_path / "site.har").write_text(HAR)
    (tmp_path / "gone").mkdir()
    before = state(tmp_path)
    script = 'cd "$1" && rmdir "$1" && shift && exec "$@"' if removed else 'shift && exec "$@"'
    r = root.run(["sh", "-c", script, "sh", str(tmp_path / "gone"), *argv_of(tools, tool, args, tmp_path)])
    assert_refused(r, tool, named)
    after = state(tmp_path)
    if removed:
        del before["gone"]
    assert after == before, "it left something behind"
