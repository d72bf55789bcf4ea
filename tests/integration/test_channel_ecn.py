"""RED with ECN in tm-link's queue on a real TCP flow: an ECN-capable flow is marked, not dropped; the receiving
kernel sees every mark the queue made. A TCP flow that negotiated ECN still sends a few packets that are not
ECN-capable (pure ACKs, a bare FIN, retransmissions: RFC 3168 6.1), which RED drops when it picks them."""
import re

from channel import tcp_run

# 6 MB up a 20 Mbit/s link (2.4 s) whose queue is RED with thresholds of 10 and 30 packets and a hard limit of
# 1000 that an ECN flow never comes near.
LINK = ["--uplink-rate", "20mbit", "--downlink-rate", "1000mbit", "--uplink-queue", "red",
        "--uplink-queue-args", "packets=1000,min=10,max=30,probability=0.1,wq=0.01,ecn=1"]
NBYTES = 6 << 20


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
