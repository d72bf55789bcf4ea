"""The workload kinds, their parameters (checked the same way from an experiment file and a command line),
and `tm-run workload KIND --server|--client`."""
import argparse
import importlib
import json
import math
import sys
import tomllib

from .. import values
from ..errors import ConfigError, RunError, UsageError

KINDS = ("bulk", "maxrate", "reqrep", "web", "command", "browser")
REQUIRED = object()


class Param:
    """One parameter: accepted TYPES, a DEFAULT (or REQUIRED), allowed CHOICES, a range LOW..HIGH. With a reader
    of values.py (READ), a string is read as the tools read values ("5s", "64KiB", "15%"; a bare number in the
    key's unit) into a number in the key's unit, then checked as a number written as such."""

    def __init__(self, types, default=REQUIRED, choices=None, low=None, high=None, help="", read=None):
        self.types, self.default, self.choices, self.low, self.high, self.help = types, default, choices, low, high, help
        self.read = read

    def check(self, key, value):
        if self.read and isinstance(value, str):
            try:
                value = self.read(value)
            except UsageError as e:
                raise ConfigError(f"[workload] '{key}': invalid value {values.quoted(value)}: {e}",
                                  ("workload", key)) from None
        types = self.types
        if float in types and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if isinstance(value, bool) != (bool in types) or not isinstance(value, types):
            names = " or ".join({int: "a whole number", float: "a number", str: "a string", bool: "true or false",
                                 list: "an array"}[t] for t in types)
            raise ConfigError(f"[workload] '{key}' must be {names}, not {value!r}", ("workload", key))
        if isinstance(value, float) and not math.isfinite(value):  # TOML's nan and inf
            raise ConfigError(f"[workload] '{key}' must be a finite number, not {value}", ("workload", key))
        if self.choices and value not in self.choices:
            raise ConfigError(f"[workload] '{key}' must be one of {', '.join(self.choices)}, not '{value}'",
                              ("workload", key))
        if self.low is not None and value < self.low or self.high is not None and value > self.high:
            raise ConfigError(f"[workload] '{key}' must be from {self.low:g} to {self.high:g}, not {value}",
                              ("workload", key))
        return value


def module(kind):
    if kind not in KINDS:
        raise ConfigError(f"unknown workload kind '{kind}' (known: {', '.join(KINDS)})", ("workload", "kind"))
    return importlib.import_module(f".{kind}", __package__)


def validate(params):
    """PARAMS (a [workload] table) checked and completed with defaults; raises ConfigError."""
    kind = params.get("kind")
    if not isinstance(kind, str):
        raise ConfigError("[workload] needs kind = \"bulk\", \"maxrate\", \"reqrep\", \"web\", \"command\" or "
                          "\"browser\"",
                          ("workload",))
    mod = module(kind)
    out = {"kind": kind}
    for key in params:
        if key != "kind" and key not in mod.PARAMS:
            raise ConfigError(f"unknown key '{key}' in [workload] of kind {kind} "
                              f"(known: {', '.join(sorted(mod.PARAMS))})", ("workload", key))
    for key, spec in mod.PARAMS.items():
        if key in params:
            out[key] = spec.check(key, params[key])
        elif spec.default is REQUIRED:
            raise ConfigError(f"[workload] of kind {kind} needs '{key}': {spec.help}", ("workload",))
        elif spec.default is not None:
            out[key] = spec.default
    if hasattr(mod, "check"):
        mod.check(out)
    return out


def duration(params):
    """Seconds a run of PARAMS is expected to take (progress bar, default timeout)."""
    return module(params["kind"]).duration(params)


def headline(params):
    return module(params["kind"]).HEADLINE


def default_port(params):
    return params.get("port") or module(params["kind"]).DEFAULT_PORT


def outputs(params):
    """(metric names, sample names) a client of PARAMS reports, so that what an experiment asserts and plots is
    checked before its first run; None for a kind that does not say (its module has no outputs())."""
    mod = module(params["kind"])
    return mod.outputs(params) if hasattr(mod, "outputs") else None


# ---------------------------------------------------------------------------------------------------------
# tm-run workload KIND --server|--client


def _param_value(text):
    """A --param value: any TOML value (5, 1.5, true, [1, 2], "x"), else the text as a string."""
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text


def _given(mod, params):
    """The parameters a server was given, each checked as [workload] checks it (a server needs none of them, so
    none is required): a bad one is a usage error, not a traceback when the server uses it."""
    out = dict(params)
    try:
        for key, value in params.items():
            if key == "kind":
                continue
            if key not in mod.PARAMS:
                raise ConfigError(f"'{key}' is no parameter of kind {params.get('kind')} (known: "
                                  f"{', '.join(sorted(mod.PARAMS))})")
            out[key] = mod.PARAMS[key].check(key, value)
    except ConfigError as e:
        raise UsageError("--param " + str(e).replace("[workload] ", "")) from None
    return out


def main(argv):
    p = argparse.ArgumentParser(prog="tm-run workload", description="Run one side of a workload alone.")
    p.add_argument("kind", choices=KINDS)
    side = p.add_mutually_exclusive_group(required=True)
    side.add_argument("--server", action="store_true", help="serve clients (run it outside the shells)")
    side.add_argument("--client", action="store_true", help="run the workload against a server")
    p.add_argument("--host", help="client: the server's address (default $TM_RUN_SERVER, $TM_BASE, 127.0.0.1); "
                                  "server: the address to listen on (default all)")
    p.add_argument("--port", type=lambda text: values.named("--port", text, values.parse_port),
                   help="the server's TCP port (default per kind)")
    p.add_argument("--param", action="append", default=[], metavar="KEY=VALUE",
                   help="a workload parameter, as in the experiment file's [workload] (repeatable)")
    p.add_argument("--params-json", help="all parameters as one JSON object (tm-run passes them so)")
    p.add_argument("--seed", type=int, default=0, help="seed of the workload's random choices")
    p.add_argument("--output", help="client: write the JSON result to this file instead of a summary")
    p.add_argument("--ready-file", help="server: create this file once listening; client: wait for it")
    p.add_argument("--once", action="store_true", help="server: exit once it has served one client whole (a "
                                                       "refused or broken client does not count)")
    p.add_argument("--chdir", help="client: the directory to run in (the command workload's files land there)")
    args = p.parse_args(argv)
    if args.chdir:
        import os

        os.chdir(args.chdir)
    params = json.loads(args.params_json) if args.params_json else {}
    params["kind"] = args.kind
    for item in args.param:
        key, sep, value = item.partition("=")
        if not sep:
            raise UsageError(f"invalid --param '{item}': KEY=VALUE")
        params[key] = _param_value(value)
    mod = module(args.kind)
    if args.once and not args.server:
        raise UsageError("--once is an option of --server")
    if args.server:  # a server takes what each client asks for, but what it was given must make sense
        params = _given(mod, params)
        port = args.port or params.get("port") or mod.DEFAULT_PORT
        mod.serve(params, port, host=args.host, ready_file=args.ready_file, once=args.once)
        return 0
    try:
        params = validate(params)
    except ConfigError as e:
        raise UsageError(str(e).replace("[workload] ", "--param ")) from None
    port = args.port or default_port(params)
    from . import common

    common.wait_ready(args.ready_file)
    start = common.now()
    host = getattr(mod, "server_host", common.server_host)(args.host)  # a kind may look for its server elsewhere
    result = mod.run_client(params, host, port, args.seed)
    common.check_server(args.ready_file)
    result.update({"kind": args.kind, "params": params, "seed": args.seed, "elapsed_s": common.now() - start})
    if args.output:
        write_json_atomic(args.output, result)
    else:
        print_summary(result)
    return result.get("status", 0)


def write_json_atomic(path, obj):
    import os

    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w") as f:
        json.dump(obj, f)
    os.rename(tmp, path)


def print_summary(result):
    for name, value in result["metrics"].items():
        print(f"{name:32} {value:.6g}" if isinstance(value, float) else f"{name:32} {value}")
    sys.stdout.flush()
