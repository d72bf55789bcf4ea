"""The experiment model: an experiment file (TOML) read, checked and expanded into runs in a stable order.

    name = "droptail vs codel"      # required
    replications = 3                # runs per configuration (default 1)
    seed = 1                        # base seed (default 0)
    [[shell]]                       # the stack, outermost first; {names} come from the matrix
    run = "tm-delay 20"
    [matrix]                        # optional; a list's values are their own names, a table maps name = value
    rate = ["5mbit", "20mbit"]
    [workload]
    kind = "bulk"                   # bulk | maxrate | reqrep | web | command, each with its own keys
    [[assert]]                      # optional regression thresholds
    metric = "goodput_mbps"
    stat = "median"
    above = 1.0

Configurations are the matrix's cartesian product, the first name varying slowest; the runs are replication
1 of every configuration, then replication 2, ... so that slow drift of the machine spreads over all of them.
A run's identity is its configuration's name ("rate=5mbit,queue=codel") and replication; its seed follows from
the base seed and that identity only.
"""
import fnmatch
import hashlib
import itertools
import json
import math
import os
import re
import shlex
import tomllib
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

from . import seeds, values
from .errors import ConfigError, UsageError
from .workloads import registry

TOP_KEYS = {"name", "description", "replications", "seed", "common_random_numbers", "warmup", "timeout",
            "isolated", "shell", "matrix", "workload", "assert", "plot"}
ASSERT_STATS = ("median", "mean", "p10", "p90", "min", "max", "sd")
MAX_RUNS = 100000


@dataclass
class Shell:
    run: str  # with {names}
    index: int  # 1-based position in the stack


@dataclass
class Dimension:
    name: str
    choices: List[Tuple[str, object]]  # (label, value) in file order


@dataclass
class Assertion:
    metric: str
    stat: str
    below: Optional[float]
    above: Optional[float]
    config: Optional[str]  # a configuration name pattern (fnmatch), or all
    index: int


@dataclass
class Configuration:
    name: str
    values: Dict[str, str]  # matrix name -> label
    substitutions: Dict[str, str]  # matrix name -> value as text


@dataclass
class Run:
    config: Configuration
    replication: int
    seed: int

    @property
    def id(self):
        return f"{self.config.name}/r{self.replication}"

    @property
    def dirname(self):
        return re.sub(r"[^A-Za-z0-9._,=+-]", "_", self.config.name) + f".r{self.replication}"


@dataclass
class Experiment:
    path: str
    text: str
    name: str
    replications: int
    seed: int
    common_random_numbers: bool
    warmup: int
    timeout: Optional[float]
    isolated: bool
    shells: List[Shell]
    matrix: List[Dimension]
    workload: dict  # validated parameters, kind included
    asserts: List[Assertion]
    plot: dict
    data: dict = field(repr=False)

    @property
    def directory(self):
        return os.path.dirname(os.path.abspath(self.path))

    @property
    def hash(self):
        """The experiment's identity: a hash of its parsed content, so comments and layout do not count."""
        return hashlib.sha256(json.dumps(self.data, sort_keys=True, default=str).encode()).hexdigest()

    def configurations(self):
        return [self._configuration(combo) for combo in itertools.product(*(d.choices for d in self.matrix))]

    def _configuration(self, combo):
        values = {d.name: label for d, (label, _) in zip(self.matrix, combo)}
        subs = {d.name: _text(value) for d, (_, value) in zip(self.matrix, combo)}
        name = ",".join(f"{k}={v}" for k, v in values.items()) or "default"
        return Configuration(name, values, subs)

    def first_configuration(self):
        """configurations()[0], without making the others."""
        return self._configuration([d.choices[0] for d in self.matrix])

    def run_count(self):
        """len(runs()), counted without making them."""
        return math.prod(len(d.choices) for d in self.matrix) * self.replications

    def runs(self):
        configs = self.configurations()
        return [Run(c, rep, self.run_seed(c.name, rep)) for rep in range(1, self.replications + 1) for c in configs]

    def run_seed(self, config_name, replication):
        if self.common_random_numbers:
            return seeds.derive(self.seed, "replication", replication)
        return seeds.derive(self.seed, "run", config_name, replication)

    def shell_line(self, shell, config):
        return substitute(shell.run, config.substitutions, ("shell", shell.index - 1, "run"))

    def workload_for(self, config):
        return {k: substitute_value(v, config.substitutions, ("workload", k)) for k, v in self.workload.items()}


def _text(value):
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


_FIELD = re.compile(r"\{\{|\}\}|\{([A-Za-z_][A-Za-z0-9_-]*)\}|[{}]")


def substitute(text, values, where=None):
    """TEXT with each {name} replaced by VALUES[name]; {{ and }} stand for braces."""

    def replace(m):
        token = m.group(0)
        if token in ("{{", "}}"):
            return token[0]
        if m.group(1) is None:
            raise ConfigError(f"a lone '{token}' in '{text}': write {token}{token} for a brace", where)
        if m.group(1) not in values:
            known = ", ".join(values) or "none: there is no [matrix]"
            raise ConfigError(f"'{{{m.group(1)}}}' names no matrix entry (known: {known})", where)
        return values[m.group(1)]

    return _FIELD.sub(replace, text)


def substitute_value(value, values, where):
    if isinstance(value, str):
        return substitute(value, values, where)
    if isinstance(value, list):
        return [substitute_value(v, values, where) for v in value]
    return value


def names_used(text):
    return {m.group(1) for m in _FIELD.finditer(text) if m.group(1)}


# ---------------------------------------------------------------------------------------------------------
# Where a key is written, for errors that name the line: a small scanner of TOML's table headers and keys.


def key_lines(text):
    """{(table path..., key): line} for the keys of TEXT; arrays of tables count from 0, e.g. ("shell", 1,
    "run"). Multi-line strings are skipped; the result only serves error messages."""
    lines = {}
    table = ()
    counts = {}
    in_multiline = None
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if in_multiline:
            if stripped.count(in_multiline) % 2 == 1:
                in_multiline = None
            continue
        m = re.match(r"\[\[\s*([^\]]+?)\s*\]\]", stripped)
        if m:
            name = tuple(p.strip().strip('"') for p in m.group(1).split("."))
            counts[name] = counts.get(name, -1) + 1
            table = name + (counts[name],)
            lines.setdefault(table, number)
            continue
        m = re.match(r"\[\s*([^\]]+?)\s*\]", stripped)
        if m:
            table = tuple(p.strip().strip('"') for p in m.group(1).split("."))
            lines.setdefault(table, number)
            continue
        m = re.match(r"""("[^"]*"|'[^']*'|[A-Za-z0-9_-]+)\s*=""", stripped)
        if m:
            lines.setdefault(table + (m.group(1).strip("\"'"),), number)
            for quote in ('"""', "'''"):
                if stripped.count(quote) % 2 == 1:
                    in_multiline = quote
    return lines


def locate(path, text, where):
    """'PATH:LINE' for WHERE (a table path and key), falling back to the enclosing table, then PATH."""
    if where:
        lines = key_lines(text)
        where = tuple(where)
        while where:
            if where in lines:
                return f"{path}:{lines[where]}"
            where = where[:-1]
    return path


# ---------------------------------------------------------------------------------------------------------
# Loading


def _expect(value, types, what, where):
    if value is None and type(None) not in types:  # TOML has no null: the key is not there
        raise ConfigError(f"{what} is missing: it must be {' or '.join(t.__name__ for t in types)}", where)
    if isinstance(value, bool) and bool not in types:
        raise ConfigError(f"{what} must be {' or '.join(t.__name__ for t in types)}, not a boolean", where)
    if not isinstance(value, types):
        raise ConfigError(f"{what} must be {' or '.join(t.__name__ for t in types)}, not {type(value).__name__}",
                          where)
    if isinstance(value, float) and not math.isfinite(value):  # TOML's nan and inf
        raise ConfigError(f"{what} must be a finite number, not {value}", where)
    return value


def _int(data, key, default, low, high):
    value = _expect(data.get(key, default), (int,), f"'{key}'", (key,))
    if not low <= value <= high:
        raise ConfigError(f"'{key}' must be from {low} to {high}, not {value}", (key,))
    return value


def _timeout(value):
    """Seconds: a number, or a string read as the tools read durations ("900", "15min")."""
    if isinstance(value, str):
        try:
            value = values.seconds(value)
        except UsageError as e:
            raise ConfigError(f"'timeout': invalid value {values.quoted(value)}: {e}", ("timeout",)) from None
    if value is not None:
        _expect(value, (int, float), "'timeout'", ("timeout",))
        if value <= 0:
            raise ConfigError("'timeout' must be positive seconds", ("timeout",))
    return value


def _shells(data):
    shells = data.get("shell")
    if shells is None:
        raise ConfigError("no [[shell]]: the stack needs at least one tracemod shell, e.g. run = \"tm-delay 0\"")
    if not isinstance(shells, list) or not all(isinstance(s, dict) for s in shells):
        raise ConfigError("'shell' must be an array of tables: [[shell]] with run = \"...\"", ("shell",))
    out = []
    for i, s in enumerate(shells):
        unknown = set(s) - {"run"}
        if unknown:
            raise ConfigError(f"unknown key '{sorted(unknown)[0]}' in [[shell]] {i + 1} (known: run)",
                              ("shell", i, sorted(unknown)[0]))
        run = _expect(s.get("run"), (str,), f"[[shell]] {i + 1} 'run'", ("shell", i, "run"))
        try:
            words = shlex.split(run)
        except ValueError as e:
            raise ConfigError(f"[[shell]] {i + 1} 'run': {e}", ("shell", i, "run")) from None
        if not words or not words[0].startswith("tm-"):
            raise ConfigError(f"[[shell]] {i + 1} 'run' must start with a tracemod shell (tm-delay, tm-link, ...), "
                              f"not '{run}'", ("shell", i, "run"))
        if "--" in words:
            raise ConfigError(f"[[shell]] {i + 1} 'run' must not contain '--': tm-run nests the shells itself",
                              ("shell", i, "run"))
        for word in words:
            if word.split("=")[0] in ("--uplink-log", "--downlink-log", "--outside"):
                raise ConfigError(f"[[shell]] {i + 1} 'run' must not set {word.split('=')[0]}: tm-run sets it "
                                  "(logs go to each run's directory)", ("shell", i, "run"))
        out.append(Shell(run, i + 1))
    return out


def _matrix(data):
    matrix = data.get("matrix", {})
    _expect(matrix, (dict,), "'matrix'", ("matrix",))
    out = []
    for name, spec in matrix.items():
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_-]*", name):
            raise ConfigError(f"matrix name '{name}': letters, digits, '_' and '-' only", ("matrix", name))
        if isinstance(spec, list):
            choices = []
            for v in spec:
                _expect(v, (str, int, float, bool), f"a value of matrix '{name}'", ("matrix", name))
                choices.append((_text(v), v))
        elif isinstance(spec, dict):
            choices = []
            for label, v in spec.items():
                _expect(v, (str, int, float, bool), f"matrix '{name}' value '{label}'", ("matrix", name, label))
                choices.append((label, v))
        else:
            raise ConfigError(f"matrix '{name}' must be a list of values or a table of name = value",
                              ("matrix", name))
        if not choices:
            raise ConfigError(f"matrix '{name}' has no values", ("matrix", name))
        labels = [label for label, _ in choices]
        for label in labels:
            if labels.count(label) > 1:
                raise ConfigError(f"matrix '{name}' has the value '{label}' twice", ("matrix", name))
            if not label or re.search(r"[,/\s]", label):
                raise ConfigError(f"matrix '{name}': the name '{label}' of a value must be non-empty, without "
                                  "',', '/' or spaces (use a table: name = value)", ("matrix", name))
        out.append(Dimension(name, choices))
    return out


def _asserts(data):
    items = data.get("assert", [])
    if not isinstance(items, list) or not all(isinstance(a, dict) for a in items):
        raise ConfigError("'assert' must be an array of tables: [[assert]]", ("assert",))
    out = []
    for i, a in enumerate(items):
        where = ("assert", i)
        unknown = set(a) - {"metric", "stat", "below", "above", "config"}
        if unknown:
            key = sorted(unknown)[0]
            raise ConfigError(f"unknown key '{key}' in [[assert]] {i + 1} (known: metric, stat, below, above, "
                              "config)", where + (key,))
        metric = _expect(a.get("metric"), (str,), f"[[assert]] {i + 1} 'metric'", where + ("metric",))
        stat = _expect(a.get("stat", "median"), (str,), f"[[assert]] {i + 1} 'stat'", where + ("stat",))
        if stat not in ASSERT_STATS:
            raise ConfigError(f"[[assert]] {i + 1}: unknown stat '{stat}' (known: {', '.join(ASSERT_STATS)})",
                              where + ("stat",))
        bounds = {}
        for key in ("below", "above"):
            if key in a:
                bounds[key] = float(_expect(a[key], (int, float), f"[[assert]] {i + 1} '{key}'", where + (key,)))
        if not bounds:
            raise ConfigError(f"[[assert]] {i + 1} needs 'below' or 'above'", where)
        if len(bounds) == 2 and bounds["below"] <= bounds["above"]:
            raise ConfigError(f"[[assert]] {i + 1}: no value is below {bounds['below']:g} and above "
                              f"{bounds['above']:g}: it could never hold", where + ("below",))
        config = a.get("config")
        if config is not None:
            _expect(config, (str,), f"[[assert]] {i + 1} 'config'", where + ("config",))
        out.append(Assertion(metric, stat, bounds.get("below"), bounds.get("above"), config, i + 1))
    return out


def _plot(data):
    plot = data.get("plot", {})
    _expect(plot, (dict,), "'plot'", ("plot",))
    unknown = set(plot) - {"metrics", "timeseries"}
    if unknown:
        key = sorted(unknown)[0]
        raise ConfigError(f"unknown key '{key}' in [plot] (known: metrics, timeseries)", ("plot", key))
    if "metrics" in plot:
        _expect(plot["metrics"], (list,), "[plot] 'metrics'", ("plot", "metrics"))
        for m in plot["metrics"]:
            _expect(m, (str,), "each of [plot] 'metrics'", ("plot", "metrics"))
    if "timeseries" in plot:
        _expect(plot["timeseries"], (str,), "[plot] 'timeseries'", ("plot", "timeseries"))
    return plot


def _check_against_runs(exp):
    """What [[assert]] and [plot] name among the runs: every config pattern matches a configuration, the
    time series' run is one of the experiment's."""
    names = [c.name for c in exp.configurations()]
    for a in exp.asserts:
        if a.config is not None and not fnmatch.filter(names, a.config):
            raise ConfigError(f"[[assert]] {a.index}: 'config' {a.config!r} matches no configuration (they are "
                              f"{_some(names)})", ("assert", a.index - 1, "config"))
    chosen = exp.plot.get("timeseries")
    if chosen is not None:
        runs = [f"{n}/r{rep}" for rep in range(1, exp.replications + 1) for n in names]
        if chosen not in runs:
            raise ConfigError(f"[plot] 'timeseries' {chosen!r} is no run of the experiment (they are {_some(runs)})",
                              ("plot", "timeseries"))


def _some(names, most=5):
    """'a, b, c' or 'a, b, c, ... (N in all)'."""
    return ", ".join(names[:most]) + (f", ... ({len(names)} in all)" if len(names) > most else "")


def check_metrics(exp, link_metrics):
    """Before the first run: every metric an [[assert]] or [plot] names is one a run of EXP reports, i.e. one of
    the workload's (registry.outputs) or LINK_METRICS, those of the stack's link logs (the runner knows which
    levels log). A workload kind that does not list its outputs is not checked. Raises UsageError('FILE:LINE:
    why')."""
    outputs = registry.outputs(exp.workload)
    if outputs is None:
        return
    metrics, samples = set(outputs[0]) | set(link_metrics), set(outputs[1])
    try:
        for a in exp.asserts:
            if a.metric not in metrics:
                raise ConfigError(f"[[assert]] {a.index}: no run reports a metric '{a.metric}' (they report "
                                  f"{', '.join(sorted(metrics))})", ("assert", a.index - 1, "metric"))
        for m in exp.plot.get("metrics", ()):
            if m not in metrics | samples:
                raise ConfigError(f"[plot] 'metrics': no run reports '{m}' (metrics: {', '.join(sorted(metrics))}; "
                                  f"samples: {', '.join(sorted(samples)) or 'none'})", ("plot", "metrics"))
    except ConfigError as e:
        raise UsageError(f"{locate(exp.path, exp.text, e.where)}: {e}") from None


def _check_names_used(exp):
    used = set()
    for s in exp.shells:
        used |= names_used(s.run)
    for v in exp.workload.values():
        for text in (v if isinstance(v, list) else [v]):
            if isinstance(text, str):
                used |= names_used(text)
    for d in exp.matrix:
        if d.name not in used:
            raise ConfigError(f"matrix '{d.name}' is used by no [[shell]] run and no [workload] value: "
                              f"write {{{d.name}}} where its value goes", ("matrix", d.name))
    config = exp.first_configuration()  # every {name} must resolve
    for s in exp.shells:
        exp.shell_line(s, config)
    exp.workload_for(config)
    for config in exp.configurations():  # and every value must leave the line splittable as a shell's words
        for s in exp.shells:
            try:
                shlex.split(exp.shell_line(s, config))
            except ValueError as e:
                raise ConfigError(f"[[shell]] {s.index} 'run' with configuration {config.name}: {e} "
                                  f"(in '{exp.shell_line(s, config)}')", ("shell", s.index - 1, "run")) from None


def parse(text, path="experiment"):
    """Reads TEXT (the content of PATH) into an Experiment; raises UsageError('PATH:LINE: why')."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        m = re.search(r"\(at line (\d+), column (\d+)\)", str(e))
        where = f"{path}:{m.group(1)}" if m else path
        raise UsageError(f"{where}: {re.sub(r' [(]at line.*', '', str(e))}") from None
    try:
        unknown = set(data) - TOP_KEYS
        if unknown:
            key = sorted(unknown)[0]
            raise ConfigError(f"unknown key '{key}' (known: {', '.join(sorted(TOP_KEYS))})", (key,))
        name = _expect(data.get("name"), (str,), "'name'", ("name",))
        if "workload" not in data:
            raise ConfigError("no [workload]: say what runs behind the stack, e.g. kind = \"bulk\"")
        workload = registry.validate(_expect(data["workload"], (dict,), "'workload'", ("workload",)))
        timeout = _timeout(data.get("timeout"))
        exp = Experiment(
            path=path, text=text, name=name, replications=_int(data, "replications", 1, 1, 10000),
            seed=_int(data, "seed", 0, 0, 2 ** 63 - 1),
            common_random_numbers=_expect(data.get("common_random_numbers", False), (bool,),
                                          "'common_random_numbers'", ("common_random_numbers",)),
            warmup=_int(data, "warmup", 0, 0, 100), timeout=timeout,
            isolated=_expect(data.get("isolated", True), (bool,), "'isolated'", ("isolated",)),
            shells=_shells(data), matrix=_matrix(data), workload=workload, asserts=_asserts(data), plot=_plot(data),
            data=data)
        total = exp.run_count()  # before anything makes the configurations: 7 names of 10 values are 10^7
        if total > MAX_RUNS:
            sizes = " x ".join(str(len(d.choices)) for d in exp.matrix) or "1"
            raise ConfigError(f"the experiment has {total} runs ({sizes} configurations x {exp.replications} "
                              f"replications), more than {MAX_RUNS}", ("matrix",) if exp.matrix else None)
        _check_names_used(exp)
        _check_against_runs(exp)
        return exp
    except ConfigError as e:
        raise UsageError(f"{locate(path, text, e.where)}: {e}") from None


def load(path):
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise UsageError(f"{path}: cannot read: {e.strerror}") from None
    except UnicodeDecodeError:
        raise UsageError(f"{path}: not UTF-8 text") from None
    return parse(text, path)
