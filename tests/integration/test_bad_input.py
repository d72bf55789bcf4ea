"""Bad input, one class per test: each tool refuses it with exit 2 and one line naming the file and entry, the
option or the value at fault, before it writes anything; never a crash, a silent guess or garbage output. The raw
records are written here byte by byte (a few protobuf fields), as a recorder, another tool or a corrupt disk
would have left them."""
import os

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
    assert_refused(r, "tm-link", "--downlink-log", "names the same file as --uplink-log: each direction needs a log")
    copy = tmp_path / "up.trace"
    copy.write_text("1\n")
    r = root.run(tools.shell("tm-link", copy, trace, f"--downlink-log={copy}", cmd=["true"]))
    assert_refused(r, "tm-link", f"--downlink-log '{copy}' names the uplink trace: the log would overwrite it")
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


