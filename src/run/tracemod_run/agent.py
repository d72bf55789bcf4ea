"""The agent a test's stack runs as its command (harness.Stack): it starts the test's commands inside the
innermost shell, where the emulated link lies between them and the rest of the machine.

It speaks JSON lines: requests on its standard input, one reply each on its standard output, the first reply
(unasked) {"ready": true, "pid": ..., "env": {TM_* variables}}. Requests:
  {"op": "run", "argv", "env", "cwd", "input" (base64), "timeout"}
      -> {"returncode", "stdout", "stderr"} (base64), or {"timeout": true, ...} once the command was killed
  {"op": "spawn", "argv", "env", "cwd", "stdout", "stderr"} (file paths) -> {"id", "pid"}
  {"op": "wait", "id", "timeout"} -> {"returncode"} (null while it runs)
  {"op": "signal", "id", "signal"} -> {} (to its process group)
  {"op": "exit"} -> {} and the agent ends, its spawned commands killed first
A failure to start a command is {"error": "..."}. Standard library only: the harness passes this file's source
on the command line (python3 -c), so nothing inside needs to read the package's directory.
"""
import base64
import json
import os
import signal
import subprocess
import sys


def _b64(data):
    return base64.b64encode(data or b"").decode()


class Agent:
    def __init__(self, out):
        self.out, self.procs, self.next_id = out, {}, 1

    def reply(self, **fields):
        self.out.write(json.dumps(fields) + "\n")
        self.out.flush()

    @staticmethod
    def _env(req):
        return dict(os.environ, **(req.get("env") or {}))

    def run(self, req):
        try:
            r = subprocess.run(req["argv"], input=base64.b64decode(req.get("input") or ""), capture_output=True,
                               env=self._env(req), cwd=req.get("cwd"), timeout=req.get("timeout"),
                               start_new_session=True)
        except subprocess.TimeoutExpired as e:
            return self.reply(timeout=True, stdout=_b64(e.stdout), stderr=_b64(e.stderr))
        return self.reply(returncode=r.returncode, stdout=_b64(r.stdout), stderr=_b64(r.stderr))

    def spawn(self, req):
        with open(req["stdout"], "wb") as out, open(req["stderr"], "wb") as err:
            p = subprocess.Popen(req["argv"], stdin=subprocess.DEVNULL, stdout=out, stderr=err, env=self._env(req),
                                 cwd=req.get("cwd"), start_new_session=True)
        self.procs[self.next_id] = p
        self.next_id += 1
        return self.reply(id=self.next_id - 1, pid=p.pid)

    def wait(self, req):
        try:
            return self.reply(returncode=self.procs[req["id"]].wait(timeout=req.get("timeout")))
        except subprocess.TimeoutExpired:
            return self.reply(returncode=None)

    def signal(self, req):
        p = self.procs[req["id"]]
        if p.poll() is None:
            try:
                os.killpg(p.pid, req["signal"])
            except ProcessLookupError:
                pass
        return self.reply()

    def stop_all(self):
        for p in self.procs.values():
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                p.wait()

    def serve(self, requests):
        for line in requests:
            req = json.loads(line)
            if req["op"] == "exit":
                break
            try:
                getattr(self, req["op"])(req)
            except (OSError, KeyError, ValueError) as e:
                self.reply(error=f"{type(e).__name__}: {e}")
        self.stop_all()
        self.reply()


def main():
    out = os.fdopen(os.dup(1), "w")  # the replies' own descriptor
    os.dup2(2, 1)  # so that nothing else the agent prints can be taken for a reply
    agent = Agent(out)
    agent.reply(ready=True, pid=os.getpid(), env={k: v for k, v in os.environ.items()
                                                   if k.startswith(("TM_", "MAHIMAHI_"))})
    agent.serve(sys.stdin)
    os._exit(0)  # its reply is written: the interpreter's own teardown would only delay the stack's end


if __name__ == "__main__":
    main()
