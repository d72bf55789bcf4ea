"""tm-run on a real batch system: a single-node Slurm (Debian's slurm-wlm and munge) started by the test on
localhost, the shipped examples/slurm-array.sh submitted as an array of 2 tasks each running its share of an
experiment (K/N from SLURM_ARRAY_TASK_*), merged as the script says, and compared with a local run of the same
experiment. Everything the test starts is stopped at the end."""
import csv
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time

import pytest

from conftest import BINDIR, HERE
from test_run_experiment import assert_goodput_within_noise

EXPERIMENT = '''name = "slurm array"
replications = 2
seed = 5
[[shell]]
run = "tm-delay 5"
[[shell]]
run = "tm-link --uplink-rate 50mbit --downlink-rate {rate}"
[matrix]
rate = ["4mbit", "8mbit"]
[workload]
kind = "bulk"
seconds = 1
'''

SCRIPT = os.path.realpath(os.path.join(HERE, "..", "..", "examples", "slurm-array.sh"))

SLURM_CONF = """ClusterName=tmtest
SlurmctldHost={host}(127.0.0.1)
SlurmctldPort={ctld_port}
SlurmdPort={slurmd_port}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={dir}/munge.sock
StateSaveLocation={dir}/state
SlurmdSpoolDir={dir}/spool
SlurmctldPidFile={dir}/slurmctld.pid
SlurmdPidFile={dir}/slurmd.pid
SlurmctldLogFile={dir}/slurmctld.log
SlurmdLogFile={dir}/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
ReturnToService=2
SchedulerType=sched/builtin
InactiveLimit=0
KillWait=5
MinJobAge=300
NodeName={host} NodeAddr=127.0.0.1 CPUs={cpus} State=UNKNOWN
PartitionName=test Nodes={host} Default=YES MaxTime=INFINITE State=UP
"""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def need(program):
    path = shutil.which(program, path="/usr/sbin:/usr/bin:/sbin:/bin")
    assert path, f"{program} is missing: install slurm-wlm and munge (scripts/install-deps)"
    return path


class Cluster:
    """munged, slurmctld and slurmd in the foreground, as children of the test, in a private directory."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="tm-slurm.", dir="/tmp")
        os.chmod(self.dir, 0o755)
        for d in ("state", "spool"):
            os.mkdir(os.path.join(self.dir, d))
        self.procs = []
        self.conf = os.path.join(self.dir, "slurm.conf")
        self.host = socket.gethostname().split(".")[0]
        with open(self.conf, "w") as f:
            f.write(SLURM_CONF.format(host=self.host, dir=self.dir, ctld_port=free_port(), slurmd_port=free_port(),
                                      cpus=os.cpu_count()))
        self.env = dict(os.environ, SLURM_CONF=self.conf)

    def start(self):
        key = os.path.join(self.dir, "munge.key")
        with open(key, "wb") as f:
            f.write(os.urandom(1024))
        os.chmod(key, 0o400)
        d = self.dir
        self._spawn([need("munged"), "--foreground", "--force", f"--key-file={key}", f"--socket={d}/munge.sock",
                     f"--pid-file={d}/munged.pid", f"--log-file={d}/munged.log", f"--seed-file={d}/munge.seed"])
        self._wait(lambda: os.path.exists(f"{d}/munge.sock"), "munged's socket")
        self._spawn([need("slurmctld"), "-D", "-i"])
        self._spawn([need("slurmd"), "-D", "-N", self.host])
        self._wait(lambda: "idle" in self.sinfo(), "an idle node in sinfo")

    def _spawn(self, argv):
        log = open(os.path.join(self.dir, os.path.basename(argv[0]) + ".out"), "wb")
        self.procs.append(subprocess.Popen(argv, env=self.env, stdout=log, stderr=subprocess.STDOUT,
                                           stdin=subprocess.DEVNULL, start_new_session=True))

    def _wait(self, ready, what, timeout=30):
        deadline = time.monotonic() + timeout
        while not ready():
            for p in self.procs:
                assert p.poll() is None, f"{p.args[0]} exited with {p.returncode} waiting for {what}: {self.logs()}"
            assert time.monotonic() < deadline, f"no {what} within {timeout} s: {self.logs()}"
            time.sleep(0.1)

    def wait_job(self, job, timeout=120):
        """Polls (sbatch --wait's back-off is seconds long) until the job's tasks end; their (state, exit code)."""
        deadline = time.monotonic() + timeout
        while subprocess.run([need("squeue"), "-h", "-j", job], env=self.env, capture_output=True,
                             text=True).stdout.strip():
            assert time.monotonic() < deadline, f"job {job} did not end within {timeout} s: {self.logs()}"
            time.sleep(0.2)
        out = subprocess.run([need("scontrol"), "-o", "show", "job", job], env=self.env, capture_output=True,
                             text=True).stdout
        return [(re.search(r"JobState=(\S+)", l).group(1), re.search(r" ExitCode=(\S+)", l).group(1))
                for l in out.splitlines() if l.strip()]

    def sinfo(self):
        return subprocess.run([need("sinfo"), "-h", "-o", "%t"], env=self.env, capture_output=True, text=True).stdout

    def logs(self):
        out = []
        for name in sorted(os.listdir(self.dir)):
            if name.endswith((".log", ".out")):
                with open(os.path.join(self.dir, name), errors="replace") as f:
                    out.append(f"--- {name}\n" + f.read()[-2000:])
        return "\n".join(out)

    def stop(self):
        for p in reversed(self.procs):
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
            try:
                p.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


def table(directory):
    with open(os.path.join(directory, "results.csv"), newline="") as f:
        return {(r["run"], r["rate"], r["replication"], r["seed"], r["metric"]): float(r["value"])
                for r in csv.DictReader(f)}


def slurm_processes():
    out = subprocess.run(["ps", "-eo", "args="], capture_output=True, text=True).stdout
    return [l for l in out.splitlines() if l.split(" ")[0].rsplit("/", 1)[-1] in
            ("munged", "slurmctld", "slurmd", "slurmstepd")]


def test_slurm_array_merged_equals_a_local_run(root, public_tmp):
    exp = public_tmp / "exp.toml"
    exp.write_text(EXPERIMENT)
    before = slurm_processes()
    tm_run = os.path.join(BINDIR, "tm-run")
    cluster = Cluster()
    done = None
    try:
        started = time.monotonic()
        cluster.start()
        up = time.monotonic()
        # The example as its comment says to submit it, from the directory its output lands in; the task finds
        # tm-run on PATH, which sbatch passes on. The script asks 2 CPUs a task: on this 2-CPU node its tasks
        # would run one after the other, so the command line (which overrides #SBATCH) asks 1, as before.
        env = dict(cluster.env, PATH=f"{BINDIR}:{os.environ.get('PATH', '/usr/bin:/bin')}")
        r = subprocess.run([need("sbatch"), "--parsable", "--array=0-1", "--cpus-per-task=1", SCRIPT, str(exp),
                            f"{public_tmp}/res"], env=env, cwd=public_tmp, capture_output=True, text=True, timeout=30)
        assert r.returncode == 0, r.stdout + r.stderr + cluster.logs()
        job = r.stdout.strip().split(";")[0]
        states = cluster.wait_job(job)
        logs = [public_tmp / f"tm-run-{job}_{i}.out" for i in (0, 1)]  # the script's #SBATCH --output
        outputs = "".join(open(p).read() for p in logs if os.path.exists(p))
        assert states == [("COMPLETED", "0:0")] * 2, f"{states}: {outputs}{cluster.logs()}"
        assert all(os.path.exists(p) for p in logs), os.listdir(public_tmp)
        done = time.monotonic()
        print(f"Slurm: up in {up - started:.1f} s, the array of 2 tasks done {done - up:.1f} s later")
    finally:
        cluster.stop()
    if done:
        print(f"Slurm: stopped in {time.monotonic() - done:.1f} s")
    assert slurm_processes() == before, "Slurm or munge processes were left running"
    for i, k in ((0, 1), (1, 2)):
        manifest = open(public_tmp / f"res.shard-{i}" / "manifest.json").read()
        assert f'"shard": [\n  {k},\n  2\n ]' in manifest
    # The merge as the script's comment gives it: tm-run merge OUT.shard-* -o OUT.
    r = subprocess.run(["sh", "-c", 'exec "$0" merge "$1".shard-* -o "$1"', tm_run, public_tmp / "res"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    r = subprocess.run([tm_run, str(exp), "-q", "-o", public_tmp / "local"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    merged, local = table(public_tmp / "res"), table(public_tmp / "local")
    assert merged.keys() == local.keys()  # the same runs, replications, seeds and metrics
    for key in merged:
        if key[-1] == "link2_down_capacity_mbps":
            # The same trace; the log's window may hold one opportunity more or less at either edge (0.3% each).
            assert merged[key] == pytest.approx(local[key], rel=0.01), key
    assert_goodput_within_noise(root, public_tmp / "local", public_tmp / "res", 2)  # the tasks ran side by side
