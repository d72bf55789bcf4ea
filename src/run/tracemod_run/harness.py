"""A test's own network: tracemod shells nested as a user writes them, around an agent (agent.py) that runs the
test's commands inside the innermost one (the pytest plugin's tracemod_stack fixture makes these).

    with Stack("tm-delay 40", "tm-link Verizon-LTE-short.up Verizon-LTE-short.down", directory=d,
               outside=["python3", "-m", "http.server", "8000"]) as stack:
        r = stack.run(["curl", "-sS", f"http://{stack.env['TM_OUTSIDE']}:8000/"], timeout=30)
    stack.summary()    # each tm-link level's log, as tm-graph --json summarises it

The stack starts at the first run()/popen() (or start()); its shells, their logs and every command it started
end at close(), also when the test failed; a stack whose test process dies is killed with it (PDEATHSIG), and
the shells leave nothing behind. An outermost `outside` command is the far end: started by the outermost shell's
--outside before the agent, reached at $TM_OUTSIDE through every level.
"""
import base64
import ctypes
import json
import os
import re
import select
import shlex
import shutil
import signal
import subprocess
import time

import tracemod_run

SHELLS = ("tm-delay", "tm-loss", "tm-link", "tm-onoff", "tm-modulate", "tm-multipath", "tm-webreplay")
START_TIMEOUT = 30.0  # seconds for the stack to start (a replay of a large recording takes a few)
PR_SET_PDEATHSIG = 1


class StackError(Exception):
    """The stack could not do what was asked: the one-line reason."""


class StackUnavailable(StackError):
    """This machine cannot make the stack's namespaces (user namespaces off, an AppArmor restriction): a test
    that needs one cannot run here, which is not a failure of the test."""


def _kill_with_parent():
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def tool_path(name, tools_dir=None):
    """Where the tracemod tool NAME is: TOOLS_DIR, $TM_TOOLS_DIR, the package's own, then PATH."""
    for d in (tools_dir, os.environ.get("TM_TOOLS_DIR"), tracemod_run.TOOLS_DIR):
        if d and os.access(os.path.join(d, name), os.X_OK):
            return os.path.join(d, name)
    found = shutil.which(name)
    if not found:
        raise StackError(f"{name} is not installed (not in PATH; set TM_TOOLS_DIR to the tools' directory)")
    return found


def _levels(levels):
    out = []
    for level in levels:
        words = shlex.split(level) if isinstance(level, str) else [str(w) for w in level]
        if not words or words[0] not in SHELLS:
            raise StackError(f"{level!r} is not a tracemod shell: each level starts with one of {', '.join(SHELLS)}")
        if "--" in words:
            raise StackError(f"{level!r}: a level is a shell and its options; the stack puts the '--' between them")
        out.append(words)
    return out


class Process:
    """A command the agent started in the background (Stack.popen): its output goes to files, read at will."""

    def __init__(self, stack, ident, pid, stdout, stderr):
        self.stack, self.id, self.pid, self.stdout_path, self.stderr_path = stack, ident, pid, stdout, stderr
        self.returncode = None

    def wait(self, timeout=None):
        if self.returncode is None:
            r = self.stack._ask(timeout, op="wait", id=self.id, timeout=timeout)
            self.returncode = r["returncode"]
            if self.returncode is None:
                raise subprocess.TimeoutExpired(self.stack.describe(), timeout)
        return self.returncode

    def poll(self):
        try:
            return self.wait(0)
        except subprocess.TimeoutExpired:
            return None

    def send_signal(self, sig):
        self.stack._ask(None, op="signal", id=self.id, signal=int(sig))

    def terminate(self):
        self.send_signal(signal.SIGTERM)

    def kill(self):
        self.send_signal(signal.SIGKILL)

    def output(self):
        """(stdout, stderr) so far, as text."""
        with open(self.stdout_path, errors="replace") as out, open(self.stderr_path, errors="replace") as err:
            return out.read(), err.read()


class Stack:
    def __init__(self, *levels, directory, outside=None, outside_wait=None, logs=True, env=None, tools_dir=None,
                 start_timeout=START_TIMEOUT):
        if not levels:
            raise StackError("a stack needs at least one shell, e.g. 'tm-delay 20'")
        self.levels, self.directory, self.outside = _levels(levels), str(directory), outside
        self.outside_wait, self.logs, self.extra_env = outside_wait, logs, dict(env or {})
        self.tools_dir, self.start_timeout = tools_dir, start_timeout
        self.proc, self.env, self.returncode, self._buffer, self._spawned = None, {}, None, b"", 0
        self.log_files = {}  # {level index: {"uplink": path, "downlink": path}}
        os.makedirs(self.directory, exist_ok=True)

    def describe(self):
        return " -- ".join(shlex.join(words) for words in self.levels)

    def argv(self):
        """The stack's command line, up to the agent: each level with its logs, the outermost with --outside."""
        argv = []
        for i, words in enumerate(self.levels, 1):
            level = [tool_path(words[0], self.tools_dir), *words[1:]]
            if i == 1 and self.outside:
                command = self.outside if isinstance(self.outside, str) else shlex.join(map(str, self.outside))
                level += ["--outside", command]
                if self.outside_wait is not None:
                    level += ["--outside-wait", str(self.outside_wait)]
            if words[0] == "tm-link" and self.logs and not any(w.endswith("-log") or "-log=" in w for w in words):
                paths = {d: os.path.join(self.directory, f"level{i}-{d}.log") for d in ("uplink", "downlink")}
                self.log_files[i] = paths
                level += ["--uplink-log", paths["uplink"], "--downlink-log", paths["downlink"]]
            argv += level + ["--"]
        with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "agent.py")) as f:
            return argv + ["python3", "-S", "-c", f.read()]  # -S: the standard library is all it needs

    def start(self):
        if self.proc is not None:
            return self
        self.stderr_path = os.path.join(self.directory, "stack.err")
        with open(self.stderr_path, "wb") as err:
            self.proc = subprocess.Popen(self.argv(), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err,
                                         env=dict(os.environ, **self.extra_env), start_new_session=True,
                                         preexec_fn=_kill_with_parent)
        self.started = time.monotonic()
        try:
            hello = self._reply(self.start_timeout)
        except StackError:
            self._end(kill=True)
            raise self._start_failure() from None
        self.env, self.agent_pid = hello["env"], hello["pid"]
        return self

    def _start_failure(self):
        """Why the stack did not start: the last line a tool said of itself ("tm-link: ..."; a usage error's
        "usage:" and "Try ..." lines after it are not the reason), else the last line, else the exit status."""
        lines = [line for line in self.stderr().splitlines() if line.strip()]
        own = [line for line in lines if re.match(r"tm-[a-z]+: ", line)]
        said = (own or lines or [f"exit status {self.returncode}"])[-1]
        if any("create user namespace" in line for line in lines):
            return StackUnavailable(f"{self.describe()}: {said}")
        return StackError(f"the stack did not start ({self.describe()}): {said}")

    def stderr(self):
        """What the shells said on standard error (their warnings, -v counters, a failure's reason)."""
        try:
            with open(self.stderr_path, errors="replace") as f:
                return f.read()
        except (OSError, AttributeError):
            return ""

    def _reply(self, timeout):
        """The agent's next reply; StackError if the stack ended or TIMEOUT seconds passed first."""
        deadline = None if timeout is None else time.monotonic() + timeout
        fd = self.proc.stdout.fileno()
        while b"\n" not in self._buffer:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            if not select.select([fd], [], [], left)[0]:
                raise StackError(f"the stack did not answer within {timeout} s")
            chunk = os.read(fd, 65536)
            if not chunk:
                raise StackError(f"the stack ended: {self.stderr().strip() or 'no word on standard error'}")
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        return json.loads(line)

    def _ask(self, wait_for, **request):
        """Sends REQUEST to the agent; its reply, waited for WAIT_FOR seconds more than the command may take."""
        self.start()
        try:
            self.proc.stdin.write((json.dumps(request) + "\n").encode())
            self.proc.stdin.flush()
        except BrokenPipeError:
            raise StackError(f"the stack ended: {self.stderr().strip()}") from None
        reply = self._reply(None if wait_for is None else wait_for + 10)
        if "error" in reply:
            raise StackError(f"{shlex.join(map(str, request.get('argv', [])))}: {reply['error']}")
        return reply

    def run(self, argv, *, timeout=60, input=None, env=None, cwd=None, check=False, text=True):
        """Runs ARGV inside the innermost shell to its end, as subprocess.run with capture_output."""
        data = input.encode() if isinstance(input, str) else (input or b"")
        r = self._ask(timeout, op="run", argv=[str(a) for a in argv], env=env, cwd=cwd, timeout=timeout,
                      input=base64.b64encode(data).decode())
        out, err = (base64.b64decode(r[k]) for k in ("stdout", "stderr"))
        if text:
            out, err = out.decode(errors="replace"), err.decode(errors="replace")
        if r.get("timeout"):
            raise subprocess.TimeoutExpired(argv, timeout, output=out, stderr=err)
        done = subprocess.CompletedProcess(argv, r["returncode"], out, err)
        if check:
            done.check_returncode()
        return done

    def popen(self, argv, *, env=None, cwd=None):
        """Starts ARGV inside the innermost shell in the background; its output goes to files in the directory."""
        self._spawned += 1
        out, err = (os.path.join(self.directory, f"process{self._spawned}.{k}") for k in ("out", "err"))
        r = self._ask(10, op="spawn", argv=[str(a) for a in argv], env=env, cwd=cwd, stdout=out, stderr=err)
        return Process(self, r["id"], r["pid"], out, err)

    def counters(self):
        """The live counters of every level (tm-top --json of the outermost shell and those inside it)."""
        self.start()
        r = subprocess.run([tool_path("tm-top", self.tools_dir), "--json", "--pid", str(self.proc.pid)],
                           capture_output=True, text=True, timeout=30)
        if r.returncode != 0:
            raise StackError(f"tm-top: {r.stderr.strip()}")
        return json.loads(r.stdout)["shells"]

    def summary(self):
        """{level number: {"uplink": tm-graph's JSON summary, "downlink": ...}} of each tm-link level's logs,
        without the per-bin series; after close()."""
        out = {}
        for level, paths in self.log_files.items():
            out[level] = {}
            for direction, path in paths.items():
                r = subprocess.run([tool_path("tm-graph", self.tools_dir), path, "--json"], capture_output=True,
                                   text=True, timeout=60)
                if r.returncode != 0:
                    raise StackError(f"tm-graph {path}: {r.stderr.strip()}")
                out[level][direction] = {k: v for k, v in json.loads(r.stdout).items() if k != "bins"}
        return out

    def close(self, timeout=20):
        """Ends every command, the agent and the shells; returns the outermost shell's exit status."""
        if self.proc is None or self.returncode is not None:
            return self.returncode
        try:
            self.proc.stdin.write(b'{"op": "exit"}\n')
            self.proc.stdin.flush()
            self.proc.stdin.close()
        except (BrokenPipeError, ValueError):
            pass
        return self._end(timeout=timeout)

    def _exited(self, timeout):
        """Whether the outermost shell ended within TIMEOUT seconds, seen the instant it did (a pidfd: Popen's own
        wait with a timeout polls, up to 50 ms late)."""
        try:
            fd = os.pidfd_open(self.proc.pid)
        except OSError:  # a kernel before 5.3
            try:
                self.proc.wait(timeout=timeout)
                return True
            except subprocess.TimeoutExpired:
                return False
        try:
            return bool(select.select([fd], [], [], timeout)[0])
        finally:
            os.close(fd)

    def _end(self, timeout=20, kill=False):
        try:
            if not self._exited(0 if kill else timeout):
                raise subprocess.TimeoutExpired(self.describe(), timeout)
            self.returncode = self.proc.wait()
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGTERM)  # the shells end their commands and clean up
            try:
                self.returncode = self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.returncode = self.proc.wait()
        self.proc.stdout.close()
        return self.returncode

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.close()
        return False
