"""Shells nest and sit side by side: IPv6 TCP and UDP (GSO included) through nested shells, sibling shells
started at once in one namespace, and the kernel's limit of 32 levels."""
import math
import re

from conftest import TooSlow, measured, python_script, sh

# The client, three levels in, reaches servers one level in, at the address the middle level calls its
# outer end ($TM_OUTER6 there): 8 MB each way over TCP, then 4000 numbered 1200-byte UDP datagrams sent
# as UDP_SEGMENT super-datagrams of 8, each echoed (4000, not fewer: enough for a lower bound on the loss too).
UDP_DATAGRAMS, UDP_PPS, LOSS = 4000, 4000, 0.01
CLIENT = ('python3 -c "$1" transfer "$SERVER6" 9400 8000000 8000000 && '
          f'exec python3 -c "$2" count "$SERVER6" 9300 {UDP_DATAGRAMS} {UDP_PPS} 1200 8')


def test_ipv6_tcp_and_udp_cross_nested_shells(root, tools):
    # Between them, tm-loss drops 1% each way: TSO and UDP GSO frames that lose some of their segments are
    # split in user space (src/packet/segmenter.cc), over IPv6 here; every byte that arrives is checked.
    tcp, udp = python_script("tcp_probe.py"), python_script("udp_probe.py")
    client = tools.delay(1, cmd=sh(CLIENT, tcp[2], udp[2]))
    middle = tools.loss("--uplink-loss", LOSS, "--downlink-loss", LOSS, "--seed", 3,
                        cmd=sh('SERVER6="$TM_OUTER6" exec "$@"', *client))
    outer = tools.delay("--isolated", 0, cmd=[*tcp, "serve", "9400", *udp, "echo", "9300", *middle])

    def run():
        r = root.run(outer, timeout=60)
        assert r.returncode == 0, r.stdout + r.stderr
        lines = r.stdout.splitlines()
        assert len(lines) == 2 and re.fullmatch(r"up ok down ok \d+", lines[0]), r.stdout
        m = re.fullmatch(r"reached ([01]+) echoed ([01]+) overflow (\d+) corrupt (\d+)", lines[1])
        assert m and m.group(4) == "0", lines[1]
        if m.group(3) != "0":
            raise TooSlow(f"the probe's sockets dropped {m.group(3)} datagrams on a full buffer")
        return m.group(1), m.group(2)

    reached, echoed = measured(run)
    # 1% of 4000 each way: 40, sigma 6.3, so 15 to 65 drops (4 sigma). A link that lost a whole super-datagram
    # for one lost segment would drop about 8%; a tm-loss that did nothing to IPv6 would drop none.
    def within(sent):
        mean, sigma = sent * LOSS, math.sqrt(sent * LOSS * (1 - LOSS))
        return mean - 4 * sigma, mean + 4 * sigma

    up_lost, down_lost = reached.count("0"), reached.count("1") - echoed.count("1")
    (up_low, up_high), (down_low, down_high) = within(UDP_DATAGRAMS), within(reached.count("1"))
    print(f"IPv6 UDP through 1% loss: {up_lost} lost up (of {UDP_DATAGRAMS}), {down_lost} down "
          f"(of {reached.count('1')})")
    assert up_low <= up_lost <= up_high and down_low <= down_lost <= down_high, \
        f"lost {up_lost} up, {down_lost} down of {UDP_DATAGRAMS}"


# Four shells started within milliseconds of each other in one namespace; none ends before all four have
# reached the outside, so all four links exist at once.
SIBLINGS = """
for i in 1 2 3 4; do
  (while [ ! -e "$1/go" ]; do sleep 0.005; done
   exec tm-delay 0 -- sh -c 'ping -n -q -c 1 -W 2 "$TM_BASE" >/dev/null && touch "$1/up-$TM_OUTER" || exit 1
     i=0; while [ "$(ls "$1" | grep -c ^up-)" -lt 4 ] && [ $i -lt 500 ]; do sleep 0.02; i=$((i + 1)); done
     echo "$TM_OUTER reached"' sh "$1") &
done
sleep 0.2; touch "$1/go"; wait
"""


def test_sibling_shells_started_at_once_each_claim_a_link(who, tools, public_tmp):
    # Each makes its own veth (claiming a name is atomic), gets its own addresses, and reaches the outside.
    env = {"PATH": f"{tools.dir}:/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"}
    r = who.run(tools.delay(0, cmd=sh(SIBLINGS, public_tmp)), env=env)
    assert r.returncode == 0, r.stderr
    outers = re.findall(r"^(\S+) reached$", r.stdout, re.M)
    assert len(outers) == 4 and len(set(outers)) == 4, r.stdout + r.stderr


LEVEL = 'echo "depth $TM_DEPTH"; [ "$TM_DEPTH" != 32 ] || ping -n -q -c 1 -W 5 "$TM_BASE" >/dev/null && exec "$@"'


def test_32_levels_work_and_the_33rd_says_why_not(who, tools):
    # The kernel nests at most 32 pid namespaces below the initial one (where the tests run), and each
    # level's command has its own.
    cmd = ["true"]
    for _ in range(33):
        cmd = tools.delay(0, cmd=sh(LEVEL, *cmd))
    r = who.run(cmd, timeout=60)
    assert r.stdout.split("\n")[:-1] == [f"depth {k}" for k in range(1, 33)], r.stdout + r.stderr
    assert r.returncode == 1, r.stderr
    last = r.stderr.splitlines()[-1]
    assert last == "tm-delay: create pid namespace (the kernel nests at most 32): No space left on device", r.stderr
