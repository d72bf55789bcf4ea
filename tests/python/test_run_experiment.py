"""The experiment model: the issue's file as written, matrix expansion in a stable order, seeds that follow a
run's identity, and errors that name the file and line."""
import pytest

from tracemod_run import experiment, seeds
from tracemod_run.errors import UsageError

ISSUE_EXAMPLE = '''name = "droptail vs codel"
replications = 3
seed = 1
[[shell]]                  # outermost first; {names} come from the matrix
run = "tm-delay 20"
[[shell]]
run = "tm-link --uplink-rate 10mbit --downlink-rate {rate} {queue}"
[matrix]
rate = ["5mbit", "20mbit"]          # a list: each value is also its name in the results
[matrix.queue]                      # a table: name = value; the results show the name
droptail = "--downlink-queue=droptail --downlink-queue-args=packets=100"
codel = "--downlink-queue=codel --downlink-queue-args=packets=100,target=5,interval=100"
[workload]
kind = "bulk"
direction = "down"
seconds = 5
[[assert]]
metric = "goodput_mbps"
stat = "median"
above = 1.0
'''


def parse(text):
    return experiment.parse(text, "exp.toml")


def test_the_issues_example_as_written():
    exp = parse(ISSUE_EXAMPLE)
    assert [c.name for c in exp.configurations()] == [
        "rate=5mbit,queue=droptail", "rate=5mbit,queue=codel", "rate=20mbit,queue=droptail", "rate=20mbit,queue=codel"]
    runs = exp.runs()
    assert len(runs) == 12
    # Replication-major: every configuration's first replication, then the second...
    assert [r.id for r in runs[:5]] == ["rate=5mbit,queue=droptail/r1", "rate=5mbit,queue=codel/r1",
                                         "rate=20mbit,queue=droptail/r1", "rate=20mbit,queue=codel/r1",
                                         "rate=5mbit,queue=droptail/r2"]
    config = exp.configurations()[1]
    assert exp.shell_line(exp.shells[1], config) == ("tm-link --uplink-rate 10mbit --downlink-rate 5mbit "
                                                      "--downlink-queue=codel --downlink-queue-args=packets=100,target=5,interval=100")
    assert exp.workload == {"kind": "bulk", "direction": "down", "seconds": 5.0, "flows": 1, "sample_ms": 10.0}
    assert exp.asserts[0].metric == "goodput_mbps" and exp.asserts[0].above == 1.0


def test_seeds_follow_the_runs_identity_not_its_position():
    exp = parse(ISSUE_EXAMPLE)
    runs = exp.runs()
    assert len({r.seed for r in runs}) == 12
    assert [r.seed for r in runs] == [r.seed for r in parse(ISSUE_EXAMPLE).runs()]
    assert runs[0].seed == seeds.derive(1, "run", "rate=5mbit,queue=droptail", 1)
    # A new matrix value (runs move in the list) leaves every existing run's seed as it was.
    grown = parse(ISSUE_EXAMPLE.replace('["5mbit", "20mbit"]', '["2mbit", "5mbit", "20mbit"]'))
    by_id = {r.id: r.seed for r in grown.runs()}
    assert all(by_id[r.id] == r.seed for r in runs)
    # Another base seed changes them all.
    assert not {r.seed for r in runs} & {r.seed for r in parse(ISSUE_EXAMPLE.replace("seed = 1", "seed = 2")).runs()}


def test_common_random_numbers_share_a_seed_per_replication():
    exp = parse(ISSUE_EXAMPLE.replace("seed = 1", "seed = 1\ncommon_random_numbers = true"))
    runs = exp.runs()
    assert len({r.seed for r in runs}) == 3
    assert runs[0].seed == runs[3].seed != runs[4].seed


def test_the_hash_ignores_comments_and_layout():
    a = parse(ISSUE_EXAMPLE).hash
    assert parse(ISSUE_EXAMPLE.replace("# outermost first", "# another comment")).hash == a
    assert parse(ISSUE_EXAMPLE.replace("replications = 3", "replications = 4")).hash != a


def test_no_matrix_is_one_configuration():
    exp = parse('name = "x"\n[[shell]]\nrun = "tm-delay 5"\n[workload]\nkind = "bulk"\nbytes = 1000\n')
    assert [r.id for r in exp.runs()] == ["default/r1"]
    assert exp.runs()[0].dirname == "default.r1"


def test_braces_and_workload_substitution():
    exp = parse('name = "x"\n[[shell]]\nrun = "tm-delay {{d}} {d}"\n[matrix]\nd = [1, 2.5]\n'
                '[workload]\nkind = "command"\nclient = "echo {d}"\n')
    c = exp.configurations()[1]
    assert c.name == "d=2.5"
    assert exp.shell_line(exp.shells[0], c) == "tm-delay {d} 2.5"
    assert exp.workload_for(c)["client"] == "echo 2.5"


@pytest.mark.parametrize("change,message", [
    (("seconds = 5", "seconds = 5\nsecs = 1"), "exp.toml:17: unknown key 'secs' in [workload] of kind bulk"),
    (("seconds = 5", "seconds = [5]"), "exp.toml:16: [workload] 'seconds' must be a number, not [5]"),
    (("seconds = 5", 'seconds = "5 s"'), "exp.toml:16: [workload] 'seconds': invalid value '5 s': expected a duration "
                                         "(a unit is optional): ns, us, ms, s, min or h"),
    (("seconds = 5", 'seconds = "-5"'), "exp.toml:16: [workload] 'seconds': invalid value '-5': expected a duration"),
    (("seconds = 5", 'seconds = "100000s"'), "exp.toml:16: [workload] 'seconds' must be from 0.01 to 86400, not 100000"),
    (("{queue}", "{queue} {delay}"), "exp.toml:7: '{delay}' names no matrix entry (known: rate, queue)"),
    (("{queue}", ""), "exp.toml:10: matrix 'queue' is used by no [[shell]] run"),
    (('"tm-delay 20"', '"tm-delay 20 -- sh"'), "exp.toml:5: [[shell]] 1 'run' must not contain '--'"),
    (('"tm-delay 20"', '"tm-delay 20 --uplink-log=x"'), "exp.toml:5: [[shell]] 1 'run' must not set --uplink-log"),
    (('"tm-delay 20"', '"delay 20"'), "exp.toml:5: [[shell]] 1 'run' must start with a tracemod shell"),
    (('kind = "bulk"', 'kind = "ftp"'), "exp.toml:14: unknown workload kind 'ftp'"),
    (('direction = "down"', 'direction = "sideways"'), "exp.toml:15: [workload] 'direction' must be one of"),
    (("replications = 3", "replications = 0"), "exp.toml:2: 'replications' must be from 1 to 10000, not 0"),
    (('stat = "median"', 'stat = "mode"'), "exp.toml:19: [[assert]] 1: unknown stat 'mode'"),
    (("above = 1.0", "abov = 1.0"), "exp.toml:20: unknown key 'abov' in [[assert]] 1"),
    (("seed = 1", "seed = 1\nseeds = 2"), "exp.toml:4: unknown key 'seeds'"),
    (('rate = ["5mbit", "20mbit"]', 'rate = ["5mbit", "5mbit"]'), "exp.toml:9: matrix 'rate' has the value '5mbit' twice"),
    (('rate = ["5mbit", "20mbit"]', 'rate = "5mbit"'), "exp.toml:9: matrix 'rate' must be a list"),
    (("seed = 1", "seed = = 1"), "exp.toml:3: Invalid value"),
])
def test_errors_name_the_file_and_line(change, message):
    with pytest.raises(UsageError) as e:
        parse(ISSUE_EXAMPLE.replace(*change))
    assert str(e.value).startswith(message), str(e.value)


def test_missing_parts():
    with pytest.raises(UsageError, match="no \\[\\[shell\\]\\]"):
        parse('name = "x"\n[workload]\nkind = "bulk"\nseconds = 1\n')
    with pytest.raises(UsageError, match="no \\[workload\\]"):
        parse('name = "x"\n[[shell]]\nrun = "tm-delay 1"\n')
    with pytest.raises(UsageError, match="exactly one of 'seconds' and 'bytes'"):
        parse('name = "x"\n[[shell]]\nrun = "tm-delay 1"\n[workload]\nkind = "bulk"\n')


def test_load_names_an_unreadable_file(tmp_path):
    with pytest.raises(UsageError, match="nope.toml: cannot read"):
        experiment.load(str(tmp_path / "nope.toml"))
