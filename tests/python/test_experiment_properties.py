"""Property-based tests (Hypothesis) of tm-run's experiment files: whatever a TOML document holds -- a valid
experiment, one with a value of the wrong type or out of range, a key or a line too many or too few, or bytes that
are no TOML at all -- loading it either gives an Experiment or raises UsageError (ConfigError is one) with a
message; never another exception. A loaded experiment's runs, shell lines and workload parameters can
then be derived for every configuration without error, as the runner derives them before it starts.

The examples are bounded (a fixed number, a fixed seed: derandomized) so the suite stays deterministic and
takes seconds; `TM_HYPOTHESIS_EXAMPLES=N` explores further (e.g. 20000) and a new random seed each run with
`TM_HYPOTHESIS_RANDOM=1`."""
import math
import os
import re

import pytest

hypothesis = pytest.importorskip("hypothesis")  # python3-hypothesis (scripts/install-deps)
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from tracemod_run import experiment  # noqa: E402
from tracemod_run.errors import UsageError  # noqa: E402
from tracemod_run.workloads import registry  # noqa: E402

EXAMPLES = int(os.environ.get("TM_HYPOTHESIS_EXAMPLES", "300"))
PROFILE = settings(max_examples=EXAMPLES, derandomize=not os.environ.get("TM_HYPOTHESIS_RANDOM"), deadline=None,
                   database=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
                   print_blob=True)


# ---------------------------------------------------------------------------------------------------------
# A small TOML writer for the documents generated (tomllib only reads).

def _key(k):
    return k if re.fullmatch(r"[A-Za-z0-9_-]+", k) else _string(k)


def _string(s):
    out = []
    for c in s:
        if c in '"\\':
            out.append("\\" + c)
        elif ord(c) < 0x20 or ord(c) == 0x7f or 0xd800 <= ord(c) <= 0xdfff:
            out.append(f"\\u{ord(c):04x}" if ord(c) < 0xd800 else "?")
        else:
            out.append(c)
    return '"' + "".join(out) + '"'


def _value(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return repr(v)
    if isinstance(v, str):
        return _string(v)
    if isinstance(v, list):
        return "[" + ", ".join(_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{_key(k)} = {_value(x)}" for k, x in v.items()) + "}"
    raise TypeError(v)


def to_toml(doc):
    """DOC (a dict) as TOML: plain keys first, then tables, then arrays of tables."""
    lines = []
    tables, arrays = [], []
    for k, v in doc.items():
        if isinstance(v, dict):
            tables.append((k, v))
        elif isinstance(v, list) and v and all(isinstance(x, dict) for x in v):
            arrays.append((k, v))
        else:
            lines.append(f"{_key(k)} = {_value(v)}")
    for k, v in tables:
        lines.append(f"[{_key(k)}]")
        lines += [f"{_key(kk)} = {_value(vv)}" for kk, vv in v.items()]
    for k, items in arrays:
        for item in items:
            lines.append(f"[[{_key(k)}]]")
            lines += [f"{_key(kk)} = {_value(vv)}" for kk, vv in item.items()]
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------------------------
# Documents: mostly valid experiments, each part sometimes replaced by something it must refuse.

SCALARS = st.one_of(st.integers(-2 ** 70, 2 ** 70), st.floats(allow_nan=True, allow_infinity=True),
                    st.booleans(), st.text(max_size=12))
ANY = st.recursive(SCALARS, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                    st.dictionaries(st.text(max_size=6), inner, max_size=3)),
                   max_leaves=6)
VALUE_WORDS = ["5mbit", "20mbit", "0", "1%", "10ms", "5s", "64KiB", "1.5", "-1", "", "abc", "1e3", "9" * 25,
               "0.01", "100", "2min", "15%", "{rate}", "{{", "}}", "{nope}", "'", '"']
WORDS = st.sampled_from(VALUE_WORDS)


def sometimes(valid, invalid=ANY):
    """VALID mostly, else anything at all (the wrong type, out of range, nonsense)."""
    return st.one_of(valid, valid, valid, invalid)


def workload_params(kind):
    """Parameters of KIND: its own keys with plausible values of their type, as strings as the tools read
    them, or anything; now and then a key it does not know."""
    params = getattr(registry.module(kind), "PARAMS")
    keys = sorted(params)

    def value(key):
        p = params[key]
        options = []
        if int in p.types:
            options.append(st.integers(-5, 100000))
        if float in p.types:
            options += [st.floats(-1, 1e5, allow_nan=False), st.integers(0, 1000)]
        if str in p.types:
            options.append(st.sampled_from(list(p.choices)) if p.choices else st.text(max_size=20))
        if list in p.types:
            options.append(st.lists(st.one_of(st.lists(st.one_of(st.integers(-1, 5000), WORDS), max_size=3),
                                              st.dictionaries(st.sampled_from(["name", "regex", "json", "scale",
                                                                               "source", "other"]),
                                                              st.one_of(st.text(max_size=8), WORDS,
                                                                        st.sampled_from(["(", "[0-9]+", "stdout"])),
                                                              max_size=4)), max_size=3))
        if p.read:
            options.append(WORDS)
        return sometimes(st.one_of(options))

    chosen = st.lists(st.sampled_from(keys), max_size=len(keys), unique=True) if keys else st.just([])
    extra = st.dictionaries(st.sampled_from(["nope", "Seconds", "kind2"]), ANY, max_size=1)
    return chosen.flatmap(lambda ks: st.fixed_dictionaries({k: value(k) for k in ks})).flatmap(
        lambda d: st.one_of(st.just(d), st.just(d), extra.map(lambda e: {**d, **e})))


WORKLOADS = st.one_of(
    st.sampled_from(registry.KINDS).flatmap(lambda k: workload_params(k).map(lambda p: {"kind": k, **p})),
    st.dictionaries(st.text(max_size=6), ANY, max_size=3))

MATRIX_NAMES = st.sampled_from(["rate", "queue", "d", "x_1", "bad name", "", "1st"])
MATRIX_VALUES = st.one_of(st.text(max_size=6), WORDS, st.integers(-3, 3), st.floats(allow_nan=True), st.booleans())
# A matrix stays small: its runs are expanded in full.
MATRIX = st.dictionaries(MATRIX_NAMES, sometimes(st.one_of(
    st.lists(MATRIX_VALUES, max_size=4),
    st.dictionaries(st.text(max_size=5), MATRIX_VALUES, max_size=3))), max_size=3)

SHELL_RUNS = st.one_of(
    st.sampled_from(["tm-delay 20", "tm-link --uplink-rate {rate} --downlink-rate 10mbit", "tm-loss uplink {d}",
                     "tm-delay {{literal}} 5", "tm-delay '5", "tm-delay 5 -- true", "tm-link --uplink-log=x",
                     "delay 5", "", "tm-delay {nope}", "tm-delay {"]),
    st.text(max_size=20).map(lambda t: "tm-delay " + t))
SHELLS = st.lists(st.fixed_dictionaries({"run": sometimes(SHELL_RUNS)}, optional={"extra": ANY}), max_size=3)

ASSERTS = st.lists(st.fixed_dictionaries(
    {"metric": sometimes(st.sampled_from(["goodput_mbps", "rtt_ms", "elapsed_s"]))},
    optional={"stat": sometimes(st.sampled_from(experiment.ASSERT_STATS + ("p50",))),
              "below": sometimes(st.floats()), "above": sometimes(st.integers(-10, 10)),
              "config": sometimes(st.text(max_size=8)), "other": ANY}), max_size=2)

DOCUMENTS = st.fixed_dictionaries(
    {"name": sometimes(st.text(max_size=20))},
    optional={"description": ANY, "replications": sometimes(st.integers(-2, 12000)),
              "seed": sometimes(st.integers(-1, 2 ** 64)), "common_random_numbers": sometimes(st.booleans()),
              "warmup": sometimes(st.integers(-1, 101)),
              "timeout": sometimes(st.one_of(st.floats(), st.integers(-5, 10 ** 6), WORDS)),
              "isolated": sometimes(st.booleans()), "shell": sometimes(SHELLS), "matrix": MATRIX,
              "workload": sometimes(WORKLOADS), "assert": sometimes(ASSERTS),
              "plot": sometimes(st.fixed_dictionaries({}, optional={"metrics": ANY, "timeseries": ANY})),
              "unknown_key": ANY})


@st.composite
def mutated(draw):
    """A generated document's text with a few edits of the text itself: lines dropped, repeated or swapped,
    characters inserted or removed; now and then bytes that are not TOML at all."""
    if draw(st.integers(0, 9)) == 0:
        return draw(st.text(max_size=200))
    lines = to_toml(draw(DOCUMENTS)).splitlines()
    for _ in range(draw(st.integers(1, 3))):
        if not lines:
            break
        i = draw(st.integers(0, len(lines) - 1))
        op = draw(st.sampled_from(["drop", "repeat", "swap", "insert", "cut"]))
        if op == "drop":
            del lines[i]
        elif op == "repeat":
            lines.insert(i, lines[i])
        elif op == "swap":
            j = draw(st.integers(0, len(lines) - 1))
            lines[i], lines[j] = lines[j], lines[i]
        elif op == "insert":
            at = draw(st.integers(0, len(lines[i])))
            stray = draw(st.sampled_from(list("[]{}=\"'#,.\\ \t") + ["\n", "[[", "]]"]))
            lines[i] = lines[i][:at] + stray + lines[i][at:]
        else:
            at = draw(st.integers(0, len(lines[i])))
            lines[i] = lines[i][:at]
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------------------------
# The property


def load_or_refuse(text):
    """Loads TEXT; returns the Experiment, or None if it was refused with a UsageError that says why. Anything
    else fails the test (it propagates)."""
    try:
        return experiment.parse(text, "exp.toml")
    except UsageError as e:
        assert str(e), "a refusal without a message"
        return None


def derive_everything(exp):
    """What the runner derives from a loaded experiment before any run starts: the runs and their seeds, each
    configuration's shell lines and workload parameters, the experiment's identity."""
    runs = exp.runs()
    assert len(runs) == len(exp.configurations()) * exp.replications
    assert len({r.id for r in runs}) == len(runs)
    assert all(0 <= r.seed < 2 ** 64 for r in runs)
    for config in exp.configurations():
        for shell in exp.shells:
            assert isinstance(exp.shell_line(shell, config), str)
        params = exp.workload_for(config)
        assert params["kind"] in registry.KINDS
    assert registry.duration(exp.workload) >= 0
    assert re.fullmatch(r"[0-9a-f]{64}", exp.hash)


@PROFILE
@given(DOCUMENTS)
def test_a_generated_document_loads_or_is_refused(doc):
    exp = load_or_refuse(to_toml(doc))
    if exp is not None:
        derive_everything(exp)


@PROFILE
@given(mutated())
def test_a_mutated_document_loads_or_is_refused(text):
    exp = load_or_refuse(text)
    if exp is not None:
        derive_everything(exp)


@settings(PROFILE, max_examples=max(20, EXAMPLES // 10))
@given(st.binary(max_size=300))
def test_any_bytes_in_a_file_load_or_are_refused(tmp_path_factory, data):
    path = tmp_path_factory.mktemp("exp") / "exp.toml"
    path.write_bytes(data)
    try:
        exp = experiment.load(str(path))
    except UsageError as e:
        assert str(e), "a refusal without a message"
        return
    derive_everything(exp)


def test_the_generator_makes_valid_experiments_too():
    """The strategies are worth something only if some documents load: the examples shipped must, and so must
    a minimal document written by to_toml."""
    doc = {"name": "x", "shell": [{"run": "tm-delay {d}"}], "matrix": {"d": ["5", "10"]},
           "workload": {"kind": "bulk", "seconds": "2s"}, "assert": [{"metric": "goodput_mbps", "above": 1}]}
    exp = load_or_refuse(to_toml(doc))
    assert exp is not None and len(exp.runs()) == 2
    derive_everything(exp)
