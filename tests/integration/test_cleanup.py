"""When the command ends, or the shell is killed (even with SIGKILL), nothing of the shell remains: no process,
namespace, interface, firewall table or temporary file.

The shell runs with empty directories of the test's own mounted over /tmp, /var/tmp and /dev/shm, so that a
file another program on the machine writes there meanwhile (a compiler, another test run) is not taken for
one of the shell's."""
import os
import re
import signal
import subprocess
import time

import pytest

from conftest import TIMEOUT, read_until, sh

NAMESPACE_KINDS = ("net", "pid", "mnt", "user", "uts", "ipc", "cgroup")
SETTLE = 3  # seconds the kernel may take to tear down what a dead shell held
HOST_SETTLE = 15  # ... and other tests on a shared machine may keep an interface or table of theirs
LINGERER = "sleep 1000 & setsid sleep 1000 & (sleep 1000 &); "  # background, new session, orphaned


# An --outside TCP sender that the command never reads from: when the shell dies its socket is orphaned with
# data unacknowledged, and keeps the outer namespace (on the kernel path, with the host's veth) for minutes.
OUTSIDE_SENDER = ("python3 -c 'import socket; c = socket.create_server((\"\", 9611)).accept()[0]; "
                  "[c.send(bytes(65536)) for _ in iter(int, 1)]'")
STALLED_RECEIVER = """python3 -c '
import os, socket, time
for _ in range(200):
    try:
        c = socket.create_connection((os.environ["TM_OUTER"], 9611))
        break
    except OSError:
        time.sleep(0.05)
else:
    raise SystemExit("the --outside sender never listened")
time.sleep(0.5)
print("ready", flush=True)
time.sleep(1000)'"""


def scenarios(tools):
    """What runs in the shell: each prints "ready" once everything has started."""
    return {
        "outside-sender": tools.delay("--outside", OUTSIDE_SENDER, 0, cmd=sh(STALLED_RECEIVER)),
        "command": tools.delay(0, cmd=sh("echo ready; exec sleep 1000")),
        "background-children": tools.delay(0, cmd=sh(LINGERER + "echo ready; exec sleep 1000")),
        "nested-shells": tools.delay(0, cmd=tools.loss("uplink", 0, cmd=tools.delay(
            0, cmd=sh(LINGERER + "echo ready; exec sleep 1000")))),
        # Two paths with an MPTCP transfer across them (a subflow each) when the shell dies.
        "multipath": tools.shell("tm-multipath", "--path", "rate=10mbit,delay=5", "--path", "rate=20mbit,delay=10",
                                 "--outside", "mptcpize run " + OUTSIDE_SENDER,
                                 cmd=["mptcpize", "run", *sh(STALLED_RECEIVER)]),
    }


def process_table():
    """{pid: (ppid, start time)} of every live process now. Zombies are dead: this machine's pid 1 reaps the
    orphans of a killed shell only after a second or so."""
    table = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if fields[0] != "Z":
                table[int(entry)] = (int(fields[1]), int(fields[19]))
    return table


def descendants(pid):
    """{pid: start time} of PID and every process below it."""
    table = process_table()
    found, todo = {}, [pid]
    while todo:
        p = todo.pop()
        found[p] = table[p][1]
        todo += [child for child, (parent, _) in table.items() if parent == p]
    return found


def namespaces(pid):
    ids = set()
    for kind in NAMESPACE_KINDS:
        try:
            ids.add(os.readlink(f"/proc/{pid}/ns/{kind}"))
        except OSError:
            pass
    return ids


def namespace_holders(ids):
    """Processes that are in, or hold a file descriptor to, any of the namespaces IDS ("net:[4026532...]")."""
    holders = set()
    for pid in process_table():
        try:
            fds = [os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")]
        except OSError:
            fds = []
        if ids & (namespaces(pid) | set(fds)):
            holders.add(pid)
    return holders


def host_state(private):
    """What the host holds that a shell could leave behind: interfaces, named namespaces, nftables tables in
    the host's namespaces, and the files in the shell's own /tmp, /var/tmp and /dev/shm (PRIVATE: see
    `private_tmp`; other programs on the machine write to the real ones)."""
    def lines(*argv):
        return set(subprocess.run(argv, capture_output=True, text=True, timeout=TIMEOUT, check=True).stdout.splitlines())

    return {
        "interfaces": {re.match(r"\d+: ([^:@]+)", line).group(1) for line in lines("ip", "-o", "link")},
        "named netns": lines("ip", "netns", "list"),
        "nft tables": lines("nft", "list", "tables"),
        **{f"files in {d}": {os.path.join(r, f) for r, ds, fs in os.walk(private[d]) for f in ds + fs}
           for d in private},
    }


def leftovers(processes, namespace_ids, killed_at, before, private):
    """What remains of the shell: live processes among PROCESSES, processes that held its namespaces before it
    was killed (a namespace id may be reused by others later), additions to the host."""
    table = process_table()
    now = host_state(private)
    found = {
        "processes": sorted(p for p, start in processes.items() if p in table and table[p][1] == start),
        "namespace holders": sorted(p for p in namespace_holders(namespace_ids) if p in table and table[p][1] <= killed_at),
        **{what: sorted(now[what] - before[what]) for what in before},
    }
    return {what: items for what, items in found.items() if items}


def assert_nothing_left(processes, namespace_ids, killed_at, before, private):
    # Other tests on a shared machine may add interfaces, namespaces or tables of their own to the host for a
    # while: there, only what stays counts.
    start = time.monotonic()
    while left := leftovers(processes, namespace_ids, killed_at, before, private):
        waited = time.monotonic() - start
        if waited > HOST_SETTLE or (waited > SETTLE and set(left) - {"interfaces", "named netns", "nft tables"}):
            break
        time.sleep(0.1)
    assert not left, f"left behind: {left}"


def clock_ticks_now():
    """The current time in the unit of /proc/PID/stat's start time (clock ticks since boot)."""
    with open("/proc/uptime") as f:
        return int(float(f.read().split()[0]) * os.sysconf("SC_CLK_TCK")) + 1


# Mounts each private directory over its place (the tools, if they live below one, stay reachable at their
# path). Arguments: the tools' directory, then PLACE PRIVATE pairs, the place that holds the private
# directories last.
PRIVATE_TMP = """bindir=$1; shift
while [ $# -gt 2 ] && [ "$1" != -- ]; do
  case $bindir in "$1"/*) mkdir -p "$2${bindir#"$1"}" && mount --bind "$bindir" "$2${bindir#"$1"}" || exit 1;; esac
  mount --rbind "$2" "$1" || exit 1
  shift 2
done
shift; exec "$@"
"""


@pytest.fixture
def private_tmp(tmp_path, tools):
    """{"/tmp": dir, "/var/tmp": dir, "/dev/shm": dir}: empty world-writable directories, and `wrap(who, argv)`
    that runs ARGV as WHO with them mounted over those places, in a mount namespace of its own."""
    dirs = {}
    for d in ("/tmp", "/var/tmp", "/dev/shm"):
        dirs[d] = tmp_path / d.strip("/").replace("/", "-")
        dirs[d].mkdir()
        os.chmod(dirs[d], 0o1777)
        if tools.dir.startswith(d + "/"):  # where the tools will be mounted: made now, so it is not new later
            os.makedirs(str(dirs[d]) + tools.dir[len(d):])
    for p in tmp_path.parents:
        if str(p) in ("/", "/tmp", "/var/tmp"):
            break
        os.chmod(p, os.stat(p).st_mode | 0o711)
    holds_ours = lambda d: str(tmp_path).startswith(d + "/")
    pairs = [x for d in sorted(dirs, key=holds_ours) for x in (d, str(dirs[d]))]

    def wrap(who, argv):
        return ["unshare", "--mount", "--propagation", "private", "sh", "-c", PRIVATE_TMP, "sh", tools.dir, *pairs,
                "--", *who.argv(argv)]

    return dirs, wrap


def start_and_survey(who, argv, spawn, private_tmp, root):
    """Starts the shell (unshare, setpriv and the shell are one process, each exec'ing the next); once ready,
    returns it with its processes and the namespaces they live in, and what the host held before."""
    private, wrap = private_tmp
    before = host_state(private)
    shell = spawn(root, wrap(who, argv))
    read_until(shell, "ready")
    processes = descendants(shell.pid)
    namespace_ids = set().union(*map(namespaces, processes)) - namespaces("self")
    assert len(processes) >= 3 and namespace_ids, f"no sandbox under the shell: {processes}"
    return shell, processes, namespace_ids, before


@pytest.mark.parametrize("scenario", ["command", "background-children", "nested-shells", "outside-sender",
                                      "multipath"])
def test_sigkill_of_the_shell_leaves_nothing(who, root, tools, spawn, private_tmp, scenario):
    shell, processes, namespace_ids, before = start_and_survey(who, scenarios(tools)[scenario], spawn, private_tmp,
                                                               root)
    killed_at = clock_ticks_now()
    shell.kill()
    assert shell.wait(TIMEOUT) == -signal.SIGKILL
    assert_nothing_left(processes, namespace_ids, killed_at, before, private_tmp[0])


def test_command_exit_leaves_nothing(who, root, tools, spawn, private_tmp):
    # The command leaves background children behind when it exits; they go with the shell.
    argv = tools.delay(0, cmd=sh(f'trap "exit 5" TERM; {LINGERER} echo ready; while :; do sleep 0.05; done'))
    shell, processes, namespace_ids, before = start_and_survey(who, argv, spawn, private_tmp, root)
    killed_at = clock_ticks_now()
    shell.terminate()
    assert shell.wait(TIMEOUT) == 5
    assert_nothing_left(processes, namespace_ids, killed_at, before, private_tmp[0])


# What a namespace holds, as seen from inside it: interfaces, nftables tables, processes (its /proc is private).
STATE = ("state() { ip -o link | sed 's/^[0-9]*: \\([^:@]*\\).*/\\1/'; nft list tables; "
         "ps -e -o comm= | grep -vx -e ps -e sh -e sed -e grep -e ip -e nft; }; ")
NESTED_KILLED = STATE + """
marker=$1; shift
before=$(state); echo "== before"; echo "$before"
"$@" & nested=$!
i=0; while [ ! -e "$marker" ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i + 1)); done
echo "== during"; state
kill -KILL $nested; wait $nested
i=0; while [ "$(state)" != "$before" ] && [ $i -lt 60 ]; do sleep 0.05; i=$((i + 1)); done
echo "== after"; state
"""


def test_sigkill_of_a_nested_shell_leaves_nothing_in_its_parent(who, tools, public_tmp):
    # The parent lives on: what the nested shell made in the parent's namespace (its end of the veth, its NAT
    # table) and what it ran must go by themselves. The parent's command looks from inside.
    marker = public_tmp / "nested-ready"
    nested = tools.delay(0, cmd=sh('touch "$1" && exec sleep 1000', marker))
    r = who.run(tools.delay(0, cmd=sh(NESTED_KILLED, marker, *nested)))
    assert r.returncode == 0, r.stderr
    sections = dict(re.findall(r"^== (\w+)\n(.*?)(?=^== |\Z)", r.stdout, re.M | re.S))
    before, during, after = (set(sections[k].split("\n")) - {""} for k in ("before", "during", "after"))
    assert {"tm2-0", "table inet tracemod_2_0"} <= during - before, f"no nested shell seen: {during}; {r.stderr}"
    assert after == before, f"left in the parent: {sorted(after - before)}"


def test_sigterm_with_an_outside_sender_mid_transfer_leaves_nothing(who, root, tools, spawn, private_tmp):
    # The shell passes SIGTERM to the command and ends in order; the --outside sender's orphaned socket must
    # not keep the host's end of the kernel path.
    argv = scenarios(tools)["outside-sender"]
    shell, processes, namespace_ids, before = start_and_survey(who, argv, spawn, private_tmp, root)
    killed_at = clock_ticks_now()
    shell.terminate()
    assert shell.wait(TIMEOUT) == 128 + signal.SIGTERM
    assert_nothing_left(processes, namespace_ids, killed_at, before, private_tmp[0])
