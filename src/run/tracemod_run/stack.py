"""A run's command line: the experiment's shells nested outermost first, each given its seed and (where it
logs) its link logs in the run's directory, the workload's client innermost, and its server end to end.

Servers: the outermost shell's --outside starts the server in that shell's own outer namespace before the
client starts, and stops it when the client ends; the client reaches it at $TM_BASE, end to end through every
shell of the stack. Each run's outermost shell makes private namespaces, so parallel runs use the same ports.
"""
import functools
import hashlib
import json
import os
import shlex
import shutil
import subprocess
from dataclasses import dataclass, field
from typing import Dict, List, Optional

from . import seeds, tools_env
from .errors import RunError, UsageError
from .workloads import common, registry


@dataclass
class Level:
    index: int  # 1 = outermost of the experiment's stack (0: tm-webreplay or tm-webrecord, put around it by a
    #              workload's replay or record)
    tool: str
    argv: List[str]  # this level's own words, with what tm-run adds
    seed: Optional[int]
    logs: Dict[str, str] = field(default_factory=dict)  # "uplink"/"downlink" -> path


@dataclass
class Plan:
    argv: List[str]
    levels: List[Level]
    client: List[str]
    server: Optional[List[str]]
    traces: Dict[str, str]  # resolved path -> SHA-256
    workload: dict
    workload_seed: int


def find_tool(name):
    for d in filter(None, [tools_env.tools_dir()]):
        path = os.path.join(d, name)
        if os.access(path, os.X_OK) and os.path.isfile(path):
            return path
    path = shutil.which(name)
    if not path:
        raise UsageError(f"{name}: no such tool next to tm-run or on PATH")
    return path


@functools.lru_cache(maxsize=64)
def tool_help(path):
    try:
        out = subprocess.run([path, "--help"], capture_output=True, text=True, timeout=20, stdin=subprocess.DEVNULL)
    except OSError as e:
        raise UsageError(f"{path}: cannot run: {e.strerror}") from None
    return out.stdout + out.stderr


def takes(path, option):
    return f"{option} " in tool_help(path) or f"{option}=" in tool_help(path) or tool_help(path).rstrip().endswith(option)


@functools.lru_cache(maxsize=1024)
def _sha256(path, mtime_ns, size):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def sha256(path):
    st = os.stat(path)
    return _sha256(path, st.st_mtime_ns, st.st_size)


def resolve_file(word, base):
    """The file WORD names as a shell of the stack would find it (relative to BASE, or a bare trace name in
    $TM_TRACE_PATH and the installed traces), or None."""
    candidates = [word if os.path.isabs(word) else os.path.join(base, word)]
    if "/" not in word:
        candidates += [os.path.join(d, word) for d in tools_env.trace_path()]
    for c in candidates:
        if os.path.isfile(c):
            return os.path.realpath(c)
    return None


def values_of(word):
    """What a word may name a file with: the word, the value of --option=VALUE, and each VALUE of a comma-separated
    KEY=VALUE list (a tm-multipath --path SPEC: trace=FILE,delay=20)."""
    value = word.split("=", 1)[1] if word.startswith("--") and "=" in word else word
    if not value or value.startswith("-"):
        return []
    return [value] + [item.split("=", 1)[1] for item in value.split(",") if "=" in item]


def traces_of(words, base):
    """{path: sha256} of every file a level's words name (traces, schedules, ...)."""
    out = {}
    for value in (v for word in words for v in values_of(word)):
        path = resolve_file(value, base)
        if path:
            out[path] = sha256(path)
    return out


def _levels(exp, run, rundir):
    levels = []
    for shell in exp.shells:
        words = shlex.split(exp.shell_line(shell, run.config))
        tool = find_tool(words[0])
        argv = [tool] + words[1:]
        seed = None
        if takes(tool, "--seed"):
            if any(w == "--seed" or w.startswith("--seed=") for w in words):
                seed = "as given"
            else:
                seed = seeds.derive(run.seed, "shell", shell.index)
                argv += ["--seed", str(seed)]
        level = Level(shell.index, words[0], argv, seed)
        if takes(tool, "--uplink-log") and takes(tool, "--downlink-log"):
            for direction in ("uplink", "downlink"):
                level.logs[direction] = os.path.join(rundir, f"{direction}-{shell.index}.log")
                argv.append(f"--{direction}-log={level.logs[direction]}")
        levels.append(level)
    return levels


def wrap_server(levels, client, server_cmd, isolated):
    """The whole command line: the stack around CLIENT, with SERVER_CMD (a sh command line, or None) run end to
    end by the outermost shell's --outside, in its outer namespace, where the client reaches it at $TM_BASE."""
    first = levels[0]
    if not takes(first.argv[0], "--outside"):
        raise UsageError(f"{first.tool} has no --outside: tm-run needs it for the outermost shell, which runs the "
                         "workload's server end to end")
    argv = first.argv + (["--isolated"] if isolated else [])
    if server_cmd:
        argv += ["--outside", server_cmd]
        if takes(first.argv[0], "--outside-wait"):  # the client waits for the server's own ready file instead
            argv += ["--outside-wait", "0"]
    for level in levels[1:]:
        argv = argv + ["--"] + level.argv
    return argv + ["--"] + client


def check_paths(exp, params):
    """Refuses a browser workload's site, replay, ca or record path (each relative to the experiment's directory)
    that cannot be what it names, before anything starts: a missing one would fail every run, late."""
    if params["kind"] != "browser":
        return
    path = {k: os.path.join(exp.directory, os.path.expanduser(params[k])) for k in ("site", "replay", "ca", "record")
            if params.get(k)}
    wrong = {"site": ("a directory", os.path.isdir), "replay": ("a recording (file or directory)", os.path.exists),
             "ca": ("a file", os.path.isfile)}
    for key, (what, ok) in wrong.items():
        if key in path and not ok(path[key]):
            why = f"not {what}" if os.path.exists(path[key]) else "no such file or directory"
            raise UsageError(f"[workload] {key} {path[key]}: {why}")
    if "record" in path and not os.path.isdir(os.path.dirname(os.path.abspath(path["record"]))):
        raise UsageError(f"[workload] record {path['record']}: its directory does not exist")


def plan_run(exp, run, rundir):
    levels = _levels(exp, run, rundir)
    params = exp.workload_for(run.config)
    kind = params["kind"]
    check_paths(exp, params)
    wseed = seeds.derive(run.seed, "workload")
    ready = os.path.join(rundir, "server.ready")
    has_server = kind != "command" or bool(params.get("server"))
    params_json = json.dumps(params, separators=(",", ":"))
    launcher = tools_env.launcher()
    client = [launcher, "workload", kind, "--client", "--output", os.path.join(rundir, "client.json"),
              "--seed", str(wseed), "--params-json", params_json, "--chdir", rundir]
    replay = params.get("replay") if kind == "browser" else None
    if replay:  # the recorded site is the far side of the whole stack, and the only server
        replay = os.path.join(exp.directory, os.path.expanduser(replay))
        ca_dir = os.path.join(rundir, "webreplay-ca")  # a CA of the run's own, which the browser trusts
        argv = [find_tool("tm-webreplay"), "--ca-dir", ca_dir, *params.get("replay_options", []), replay]
        levels.insert(0, Level(0, "tm-webreplay", argv, None))
        params.update(replay=replay, ca=os.path.join(ca_dir, "ca.pem"))
        params_json = json.dumps(params, separators=(",", ":"))
        client[client.index("--params-json") + 1] = params_json
        has_server = False
    record = params.get("record") if kind == "browser" else None
    if record:  # the recorder is outermost: it sees the browser's traffic to the live server beyond the stack
        if exp.isolated:
            raise UsageError("[workload] record records a live site beyond the stack: set isolated = false")
        record = os.path.join(exp.directory, os.path.expanduser(record))
        argv = [find_tool("tm-webrecord")]
        if params.get("ca"):  # the server's CA checks the server; the browser trusts the recording's
            argv += ["--upstream-ca", os.path.join(exp.directory, os.path.expanduser(params["ca"]))]
        levels.insert(0, Level(0, "tm-webrecord", argv + [record], None))
        params.update(record=record, ca=os.path.join(record, "ca.pem"))
        params_json = json.dumps(params, separators=(",", ":"))
        client[client.index("--params-json") + 1] = params_json
        has_server = False
    server = server_cmd = None
    if has_server:
        client += ["--ready-file", ready]
        server = [launcher, "workload", kind, "--server", "--ready-file", ready, "--params-json", params_json]
        out, err, status = (shlex.quote(common.beside(ready, name)) for name in ("server.out", "server.err",
                                                                                 "server.status"))
        # Its exit status, once it exits, tells a client still waiting for it (common.wait_ready) not to wait.
        server_cmd = f"{shlex.join(server)} >{out} 2>{err}; s=$?; echo $s >{status}.tmp; mv {status}.tmp {status}; exit $s"
    argv = wrap_server(levels, client, server_cmd, exp.isolated)
    traces = {}
    for level in levels:
        traces.update(traces_of(level.argv[1:], exp.directory))
    return Plan(argv, levels, client, server, traces, params, wseed)


def environment():
    """The stack's environment: bare trace names also resolve in the traces tm-run knows of."""
    return dict(os.environ, TM_TRACE_PATH=":".join(tools_env.trace_path()))
