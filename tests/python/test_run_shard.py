"""--shard K/N and the batch systems' indices."""
import pytest

from tracemod_run import shard
from tracemod_run.errors import UsageError


def test_parse():
    assert shard.parse("1/2") == (1, 2)
    assert shard.parse("4/4") == (4, 4)
    for bad in ("0/2", "3/2", "1", "a/b", "1/0", "-1/2"):
        with pytest.raises(UsageError, match="invalid --shard"):
            shard.parse(bad)


@pytest.mark.parametrize("n", [1, 2, 3, 5, 13])
def test_shares_are_disjoint_complete_and_balanced(n):
    runs = list(range(12))
    shares = [shard.select(runs, k, n) for k in range(1, n + 1)]
    assert sorted(sum(shares, [])) == runs
    assert max(map(len, shares)) - min(map(len, shares)) <= 1
    assert shard.select(runs, 1, 2) == [0, 2, 4, 6, 8, 10]


def test_slurm_array_indices():
    assert shard.from_environment({"SLURM_ARRAY_TASK_ID": "0", "SLURM_ARRAY_TASK_MIN": "0",
                                   "SLURM_ARRAY_TASK_COUNT": "2"}) == (1, 2)
    assert shard.from_environment({"SLURM_ARRAY_TASK_ID": "4", "SLURM_ARRAY_TASK_MIN": "1",
                                   "SLURM_ARRAY_TASK_COUNT": "4"}) == (4, 4)
    with pytest.raises(UsageError, match="contiguous"):
        shard.from_environment({"SLURM_ARRAY_TASK_ID": "7", "SLURM_ARRAY_TASK_MIN": "1", "SLURM_ARRAY_TASK_COUNT": "2"})


def test_kubernetes_indexed_job():
    assert shard.from_environment({"JOB_COMPLETION_INDEX": "0", "JOB_COMPLETIONS": "3"}) == (1, 3)
    assert shard.from_environment({"JOB_COMPLETION_INDEX": "2", "JOB_COMPLETIONS": "3"}) == (3, 3)
    with pytest.raises(UsageError, match="JOB_COMPLETIONS is not"):
        shard.from_environment({"JOB_COMPLETION_INDEX": "0"})
    with pytest.raises(UsageError, match="not below"):
        shard.from_environment({"JOB_COMPLETION_INDEX": "3", "JOB_COMPLETIONS": "3"})


def test_outside_a_batch_system():
    assert shard.from_environment({}) is None
