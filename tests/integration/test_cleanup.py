"""When the command ends, or the shell is killed (even with SIGKILL), nothing of the shell remains: no process,
namespace, interface, firewall table or temporary file."""
import os
import re
import signal
import subprocess
import time

import pytest

from conftest import TIMEOUT, read_until, sh

NAMESPACE_KINDS = ("net", "pid", "mnt", "user", "uts", "ipc", "cgroup")
SETTLE = 3  # seconds the kernel may take to tear down what a dead shell held
LINGERER = "sleep 1000 & setsid sleep 1000 & (sleep 1000 &); "  # background, new session, orphaned


def scenarios(tools):
    """What runs in the shell: each prints "ready" once everything has started."""
    return {
        "command": tools.delay(0, cmd=sh("echo ready; exec sleep 1000")),
        "background-children": tools.delay(0, cmd=sh(LINGERER + "echo ready; exec sleep 1000")),
        "nested-shells": tools.delay(0, cmd=tools.loss("uplink", 0, cmd=tools.delay(
            0, cmd=sh(LINGERER + "echo ready; exec sleep 1000")))),
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


def host_state():
    def lines(*argv):
        return set(subprocess.run(argv, capture_output=True, text=True, timeout=TIMEOUT, check=True).stdout.splitlines())

    return {
        "interfaces": {re.match(r"\d+: ([^:@]+)", line).group(1) for line in lines("ip", "-o", "link")},
        "named netns": lines("ip", "netns", "list"),
        "nft tables": lines("nft", "list", "tables"),
        **{f"files in {d}": set(os.listdir(d)) for d in ("/tmp", "/var/tmp", "/dev/shm")},
    }


def leftovers(processes, namespace_ids, before):
    """What remains of the shell: live processes among PROCESSES, holders of its namespaces, host additions."""
    table = process_table()
    now = host_state()
    found = {
        "processes": sorted(p for p, start in processes.items() if p in table and table[p][1] == start),
        "namespace holders": sorted(namespace_holders(namespace_ids)),
        **{what: sorted(now[what] - before[what]) for what in before},
    }
    return {what: items for what, items in found.items() if items}


def assert_nothing_left(processes, namespace_ids, before):
    deadline = time.monotonic() + SETTLE
    while (left := leftovers(processes, namespace_ids, before)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not left, f"left behind: {left}"


def start_and_survey(who, argv, spawn):
    """Starts the shell; once ready, returns it with its processes and the namespaces they live in."""
    shell = spawn(who, argv)
    read_until(shell, "ready")
    processes = descendants(shell.pid)
    namespace_ids = set().union(*map(namespaces, processes)) - namespaces("self")
    assert len(processes) >= 3 and namespace_ids, f"no sandbox under the shell: {processes}"
    return shell, processes, namespace_ids


@pytest.mark.parametrize("scenario", ["command", "background-children", "nested-shells"])
def test_sigkill_of_the_shell_leaves_nothing(who, tools, spawn, scenario):
    before = host_state()
    shell, processes, namespace_ids = start_and_survey(who, scenarios(tools)[scenario], spawn)
    shell.kill()
    assert shell.wait(TIMEOUT) == -signal.SIGKILL
    assert_nothing_left(processes, namespace_ids, before)


def test_command_exit_leaves_nothing(who, tools, spawn):
    # The command leaves background children behind when it exits; they go with the shell.
    before = host_state()
    argv = tools.delay(0, cmd=sh(f'trap "exit 5" TERM; {LINGERER} echo ready; while :; do sleep 0.05; done'))
    shell, processes, namespace_ids = start_and_survey(who, argv, spawn)
    shell.terminate()
    assert shell.wait(TIMEOUT) == 5
    assert_nothing_left(processes, namespace_ids, before)
