#!/bin/sh
# Runs an experiment as a Slurm job array: each task runs its share (tm-run reads K and N from
# SLURM_ARRAY_TASK_ID, SLURM_ARRAY_TASK_MIN and SLURM_ARRAY_TASK_COUNT), then one merge joins them:
#   sbatch --array=0-3 examples/slurm-array.sh examples/droptail-vs-codel.toml results/aqm
#   tm-run merge results/aqm.shard-* -o results/aqm
# A task that is preempted and requeued resumes where it stopped: finished runs are kept.
#SBATCH --job-name=tm-run
#SBATCH --cpus-per-task=2
#SBATCH --output=tm-run-%A_%a.out
set -eu
experiment=$1 out=$2
exec tm-run "$experiment" -q -o "$out.shard-$SLURM_ARRAY_TASK_ID"
