"""tm-delay adds its delay to every packet, in each direction, and nested shells add up."""
import pytest

from conftest import TooSlow, assert_ping_rtt, measured, ping_cmd, python_script, sh


@pytest.mark.parametrize("target", ["TM_BASE", "TM_BASE6"])
def test_rtt_through_tm_delay_10_is_20_to_22_ms(who, tools, target):
    assert_ping_rtt(who, tools.delay(10, cmd=ping_cmd(target=target)), 20.0, 22.0)


def test_asymmetric_delays_add_up(who, tools):
    assert_ping_rtt(who, tools.delay("--uplink-delay", 5, "--downlink-delay", 15, cmd=ping_cmd()), 20.0, 22.0)


def test_each_direction_gets_its_own_delay(who, tools):
    # A UDP server in an outer shell stamps arrival and answer times; the probe, behind the asymmetric shell,
    # measures each direction alone (namespaces share CLOCK_MONOTONIC). Python's own scheduling delays show
    # in single samples, so the upper bound is on the median: what proves the direction is the difference.
    probe = python_script("udp_probe.py")
    inner = tools.delay("--uplink-delay", 3, "--downlink-delay", 12,
                        cmd=sh('exec "$@" probe "$TM_OUTER" 9000 20', *probe))

    def check():
        r = who.run(tools.delay(0, cmd=[*probe, "serve", "9000", *inner]))
        assert r.returncode == 0, r.stderr
        fields = r.stdout.split()
        assert len(fields) == 6, f"unexpected probe output: {r.stdout!r}"
        up, down = (float(fields[1]), float(fields[2])), (float(fields[4]), float(fields[5]))
        verdict = f"uplink (min, median) {up}, downlink {down} ms; configured 3 and 12"
        assert up[0] >= 3.0 and down[0] >= 12.0, verdict
        if up[1] > 4.0 or down[1] > 13.0:
            raise TooSlow(verdict)

    measured(check)


def test_eight_nested_shells_add_their_delays(who, tools):
    cmd = sh('echo "depth $TM_DEPTH"; exec "$@"', *ping_cmd(count=10))
    for _ in range(8):
        cmd = tools.delay(2, cmd=cmd)
    r = assert_ping_rtt(who, cmd, 32.0, 40.0, timeout=60)
    assert "depth 8" in r.stdout


# The delay is integer nanoseconds read from the text, never through a double (2.007 ms was 2007001 ns): the
# prompt prints it to the nanosecond.
@pytest.mark.parametrize("args,prompt", [
    (["2.007"], "[delay 2.007]"),
    (["250us"], "[delay 0.25]"),
    (["--uplink-delay", "0.0000001", "--downlink-delay", "1.5s"], "[delay up 0.000001 down 1500]"),
])
def test_delays_are_exact_to_the_nanosecond(root, tools, args, prompt):
    r = root.run(tools.delay(*args, cmd=sh('echo "$TM_PROMPT"')))
    assert r.returncode == 0, r.stderr
    assert r.stdout == prompt + " \n", r.stdout


@pytest.mark.parametrize("args,named", [
    (["2.5 ms"], "invalid delay '2.5 ms'"),
    (["3600001"], "invalid delay '3600001': longer than the largest allowed, 1 h"),
    (["5", "--jitter", "-1"], "invalid --jitter '-1'"),
])
def test_bad_delays_exit_2_naming_them(root, tools, args, named):
    r = root.run(tools.delay(*args, cmd=["true"]))
    assert r.returncode == 2 and named in r.stderr.splitlines()[0], r.stderr
