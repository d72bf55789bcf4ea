"""tm-run's value reader against the grammar the tools read (tests/data/values.tsv, which tests/unit/test_parse.cc
checks util/parse against), and the places of tm-run that read values through it."""
import math
import os

import pytest

from tracemod_run import experiment, values
from tracemod_run.errors import UsageError
from tracemod_run.workloads import registry

VALUES_TSV = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "values.tsv")

READERS = {
    "duration": values.parse_duration,
    "duration_ms": lambda t: values.parse_duration(t, values.MILLISECOND),
    "duration_s": lambda t: values.parse_duration(t, values.SECOND),
    "delay": values.parse_delay,
    "rate": values.parse_rate,
    "probability": values.parse_probability,
    "number": lambda t: _number(values.parse_double(t)),
    "whole": lambda t: values.parse_whole_number(t, 0, 2 ** 64 - 1),
    "port": values.parse_port,
    "bytes": lambda t: values.parse_bytes(t, 0, values.MAX_QUEUE_LIMIT),
    "packets_limit": lambda t: values.parse_queue_limit(t, values.PACKETS),
    "bytes_limit": lambda t: values.parse_queue_limit(t, values.BYTES),
    "queue_size": lambda t: "%d,%d" % values.parse_queue_size(t),
}
DECIMALS = ("probability", "number")


def _number(v):
    if v is None:
        raise UsageError("not a number")
    return v


def vectors():
    with open(VALUES_TSV, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if line and not line.startswith("#"):
                fields = line.split("\t")
                assert len(fields) == 3, f"values.tsv:{n}: expected KIND, INPUT and EXPECTED separated by tabs"
                kind, text, expected = fields
                yield pytest.param(kind, "" if text == "<empty>" else text, expected, id=f"{n}:{kind}:{text}")


def read_as(kind, text):
    try:
        return READERS[kind](text)
    except values.OutOfRange:
        return "!range"
    except UsageError:
        return "!syntax"


@pytest.mark.parametrize("kind,text,expected", list(vectors()))
def test_every_vector_of_values_tsv(kind, text, expected):
    got = read_as(kind, text)
    if kind in DECIMALS and not expected.startswith("!") and not isinstance(got, str):
        assert math.isclose(got, float(expected), rel_tol=1e-15, abs_tol=0), (got, expected)
    else:
        assert str(got) == expected


def test_every_kind_is_covered():
    assert {v.values[0] for v in vectors()} == set(READERS)


def test_named_errors_keep_their_class_and_name_the_option():
    with pytest.raises(values.OutOfRange, match=r"^invalid --port '70000': expected a port from 1 to 65535$"):
        values.named("--port", "70000", values.parse_port)
    with pytest.raises(UsageError, match=r"^invalid --x '5 s': expected a duration \(a unit is optional\)"):
        values.named("--x", "5 s", values.parse_delay)


def test_tm_delays_value_is_exact_to_the_nanosecond():
    assert values.parse_delay("2.007") == 2007000


# --- Where tm-run reads values ---

def workload(**params):
    return registry.validate(dict(kind=params.pop("kind", "bulk"), **params))


def test_workload_durations_sizes_and_ports_take_the_tools_grammar():
    assert workload(seconds="500ms")["seconds"] == 0.5
    assert workload(seconds="5")["seconds"] == 5.0  # a bare number is in the key's unit
    assert workload(seconds="2min", sample_ms="0.02s")["sample_ms"] == 20.0
    assert workload(bytes="100kB")["bytes"] == 100000
    assert workload(bytes="64KiB", port="5301")["port"] == 5301
    web = workload(kind="web", seconds="1min", think_median="1500ms", request_large="1KiB",
                   request_large_fraction="15%", reply_cap="1MB")
    assert (web["seconds"], web["think_median"], web["request_large"]) == (60.0, 1.5, 1024.0)
    assert (web["request_large_fraction"], web["reply_cap"]) == (0.15, 1e6)
    reqrep = workload(kind="reqrep", pairs=[[1, "2KiB"], ["1kB", 1]], interval_ms="1s")
    assert reqrep["pairs"] == [[1, 2048], [1000, 1]] and reqrep["interval_ms"] == 1000.0
    assert workload(kind="command", client="true", server="x", server_port="8000")["server_port"] == 8000


def test_numbers_keep_their_old_meaning():
    assert workload(seconds=5, sample_ms=10, port=5301) == {"kind": "bulk", "direction": "down", "seconds": 5.0,
                                                             "flows": 1, "sample_ms": 10.0, "port": 5301}
    assert workload(bytes=100000)["bytes"] == 100000


@pytest.mark.parametrize("params,message", [
    ({"seconds": "5 s"}, "[workload] 'seconds': invalid value '5 s': expected a duration (a unit is optional)"),
    ({"seconds": "1e3"}, "[workload] 'seconds': invalid value '1e3': an exponent is not allowed: expected a duration"),
    ({"bytes": "1.5kB"}, "[workload] 'bytes': invalid value '1.5kB': expected bytes"),
    ({"bytes": "100pkts"}, "[workload] 'bytes': invalid value '100pkts': expected bytes"),
    ({"seconds": 1, "port": "70000"}, "[workload] 'port': invalid value '70000': expected a port from 1 to 65535"),
    ({"seconds": "100000s"}, "[workload] 'seconds' must be from 0.01 to 86400"),
])
def test_bad_values_name_the_key(params, message):
    with pytest.raises(UsageError) as e:
        workload(**params)
    assert str(e.value).startswith(message), str(e.value)


def test_the_timeout_takes_a_duration():
    base = 'name = "x"\n[[shell]]\nrun = "tm-delay 1"\n[workload]\nkind = "bulk"\nbytes = 1\n'
    assert experiment.parse('timeout = "15min"\n' + base).timeout == 900.0
    assert experiment.parse("timeout = 900\n" + base).timeout == 900
    with pytest.raises(UsageError, match=r"^x.toml:1: 'timeout': invalid value '15 min'"):
        experiment.parse('timeout = "15 min"\n' + base, "x.toml")


def test_the_workload_command_line_reads_its_port():
    with pytest.raises(UsageError, match=r"^invalid --port '0': expected a port from 1 to 65535$"):
        registry.main(["bulk", "--client", "--port", "0"])
    with pytest.raises(UsageError, match=r"^--param 'port': invalid value '53o1': expected a port"):
        registry.main(["bulk", "--server", "--param", "port=53o1"])
    with pytest.raises(UsageError, match=r"^--param 'port' must be from 1 to 65535, not 0$"):
        registry.main(["bulk", "--server", "--param", "port=0"])
