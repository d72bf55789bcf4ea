"""--shard K/N: the K-th of N deterministic shares of an experiment's runs, and where batch systems put K and N.

Runs are dealt round-robin in the experiment's stable order (run i goes to share i mod N + 1), so every share
holds a similar mix of configurations and replications, and the shares of one experiment are disjoint and
together complete, whatever machine computes them.
"""
import os

from .errors import UsageError


def parse(text):
    """'K/N' -> (K, N), 1 <= K <= N."""
    k, sep, n = text.partition("/")
    try:
        k, n = int(k), int(n)
    except ValueError:
        raise UsageError(f"invalid --shard '{text}': K/N with whole numbers, e.g. 1/4") from None
    if not sep or n < 1 or not 1 <= k <= n:
        raise UsageError(f"invalid --shard '{text}': K/N with 1 <= K <= N, e.g. 1/4")
    return k, n


def _int_env(env, name):
    try:
        return int(env[name])
    except (KeyError, ValueError):
        raise UsageError(f"${name} is '{env.get(name, '')}': expected a whole number") from None


def from_environment(env=None):
    """(K, N) from a Slurm job array or a Kubernetes Indexed Job, or None outside them.

    Slurm: SLURM_ARRAY_TASK_ID, SLURM_ARRAY_TASK_MIN and SLURM_ARRAY_TASK_COUNT, for a contiguous array
    (--array=0-3 or 1-4). Kubernetes: JOB_COMPLETION_INDEX (0-based) and JOB_COMPLETIONS, which the Job's
    manifest sets to its spec.completions (Kubernetes does not expose that count to the pod by itself)."""
    env = os.environ if env is None else env
    if env.get("SLURM_ARRAY_TASK_ID"):
        task, count = _int_env(env, "SLURM_ARRAY_TASK_ID"), _int_env(env, "SLURM_ARRAY_TASK_COUNT")
        low = _int_env(env, "SLURM_ARRAY_TASK_MIN") if env.get("SLURM_ARRAY_TASK_MIN") else 0
        k = task - low + 1
        if not 1 <= k <= count:
            raise UsageError(f"Slurm array task {task} (min {low}, count {count}) is not in a contiguous array: "
                             "use --array=0-N-1 or give --shard K/N")
        return k, count
    if env.get("JOB_COMPLETION_INDEX"):
        index = _int_env(env, "JOB_COMPLETION_INDEX")
        if not env.get("JOB_COMPLETIONS"):
            raise UsageError("$JOB_COMPLETION_INDEX is set but $JOB_COMPLETIONS is not: set it in the Job's "
                             "manifest to spec.completions, or give --shard K/N")
        count = _int_env(env, "JOB_COMPLETIONS")
        if not 0 <= index < count:
            raise UsageError(f"$JOB_COMPLETION_INDEX {index} is not below $JOB_COMPLETIONS {count}")
        return index + 1, count
    return None


def select(runs, k, n):
    """The runs of share K of N (1-based), in the experiment's order."""
    return [run for i, run in enumerate(runs) if i % n == k - 1]
