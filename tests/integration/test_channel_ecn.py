"""RED, CoDel and PIE with ECN in tm-link's queue: an ECN-capable flow is marked, not dropped; the receiving kernel
sees every mark the queue made. RED on a real TCP flow: one that negotiated ECN still sends a few packets that are
not ECN-capable (pure ACKs, a bare FIN, retransmissions: RFC 3168 6.1), which RED drops when it picks them. CoDel
and PIE on an ECN-capable stream that does not back off, so that they act within a second."""
import re

import pytest

from channel import tcp_run, udp_run

# 6 MB up a 20 Mbit/s link (2.4 s) whose queue is RED with thresholds of 10 and 30 packets and a hard limit of
# 1000 that an ECN flow never comes near.
LINK = ["--uplink-rate", "20mbit", "--downlink-rate", "1000mbit", "--uplink-queue", "red",
        "--uplink-queue-args", "packets=1000,min=10,max=30,probability=0.1,wq=0.01,ecn=1"]
NBYTES = 6 << 20
ECT0 = 2  # the TOS byte of an ECN-capable packet, ECT(0)


def marks(run):
    """(packets marked CE, packets picked but not ECN-capable, so dropped), as -v reports them."""
    found = re.search(r"(\d+) marked CE, (\d+) not ECN-capable dropped", run.summary("uplink"))
    return (int(found.group(1)), int(found.group(2))) if found else (0, 0)


def test_tcp_with_ecn_through_red_is_marked_not_dropped(who, tools):
    run = tcp_run(who, tools, [tools.path("tm-link"), "-v", *LINK], NBYTES,
                  before="echo 1 >/proc/sys/net/ipv4/tcp_ecn && ")
    assert f"tcp {NBYTES} intact" in run.stdout, run.stdout
    marked, unmarkable = marks(run)
    assert marked > 0, run.stderr
    assert run.counters()["uplink"].dropped == unmarkable <= 3, run.stderr  # no data segment dropped
    assert run.snmp["IpExt.InCEPkts"] == marked, f"{run.snmp} against {marked} marks"


# The same queue drops a flow that is not ECN-capable, and marks nothing.
def test_tcp_without_ecn_through_the_same_queue_is_dropped(root, tools):
    run = tcp_run(root, tools, [tools.path("tm-link"), "-v", *LINK], NBYTES // 2,  # losses make it slow
                  before="echo 0 >/proc/sys/net/ipv4/tcp_ecn && ")
    assert f"tcp {NBYTES // 2} intact" in run.stdout, run.stdout
    marked, unmarkable = marks(run)
    assert run.counters()["uplink"].dropped >= unmarkable > 0, run.stderr
    assert marked == 0 and run.snmp["IpExt.InCEPkts"] == 0


# CoDel and PIE with ecn=1 on a 20 Mbit/s link whose hard limit (1000 packets) is never reached: 2000 ECN-capable
# (ECT(0)) datagrams of 1400 bytes at 2500 a second, 28 Mbit/s, which do not slow down when marked, so the queue
# keeps growing (to some 570 packets). CoDel marks where it would drop, ever more often, and drops nothing. PIE
# marks while its probability is at most 10%; above it RFC 8033 (5.1) has it drop ECN-capable packets too, and
# -v counts those drops apart: nothing else is dropped. The receiving kernel counts every mark (InCEPkts).
@pytest.mark.parametrize("queue,args", [("codel", "packets=1000,target=5,interval=100,ecn=1"),
                                        ("pie", "packets=1000,qdelay_ref=15,max_burst=150,ecn=1")])
def test_ecn_capable_packets_through_codel_and_pie_are_marked(user, tools, queue, args):
    link = ["--uplink-rate", "20mbit", "--downlink-rate", "1000mbit", "--uplink-queue", queue,
            "--uplink-queue-args", args]
    n = 2000
    run = udp_run(user, tools, [tools.path("tm-link"), "-v", *link], n, 0.0004, size=1400, tos=ECT0)
    marked, unmarkable = marks(run)
    found = re.search(r"(\d+) dropped above the marking threshold", run.summary("uplink"))
    above = int(found.group(1)) if found else 0
    dropped = run.counters()["uplink"].dropped
    print(f"{queue}: {marked} marked CE, {dropped} dropped ({above} above the marking threshold)")
    assert marked > 0 and unmarkable <= 3, run.stderr  # the kernel's own few packets are not ECN-capable
    assert dropped == unmarkable + above, run.stderr
    assert n - len(run.up) <= dropped, f"{n - len(run.up)} datagrams lost, {dropped} packets dropped"
    assert run.snmp["IpExt.InCEPkts"] == marked, f"{run.snmp} against {marked} marks"
