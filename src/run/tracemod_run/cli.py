"""tm-run's command line.

    tm-run EXPERIMENT -o DIR [--jobs N] [-q] [--shard K/N] [--junit FILE] [--dry-run]
    tm-run report DIR [--junit FILE]
    tm-run compare DIR_A DIR_B [--config-a NAME] [--config-b NAME] [--json]
    tm-run merge DIR... -o DIR
    tm-run workload KIND --server|--client [...]

Exit status: 0; 1 if a run failed or an assertion was violated (each printed on a line of its own); 2 for bad
input (an option, an experiment file, a results directory); 130 when interrupted.
"""
import argparse
import shlex
import sys

import tracemod_run
from .errors import RunError, UsageError

SUBCOMMANDS = ("report", "compare", "merge", "workload")

# Each subcommand imports what it uses when it runs, not at the top. Nothing imports cli, so this dodges no cycle:
# it is for start-up time. `tm-run workload`, which every run starts inside its shells, then loads the workload
# registry alone (about 10 ms here) rather than the runner, stacks and experiment files too (about 38 ms).


class Parser(argparse.ArgumentParser):
    def error(self, message):
        raise UsageError(f"{message}\nusage: {self.format_usage().split(': ', 1)[1].strip()}")


def run_main(argv):
    p = Parser(prog="tm-run", description="Run an experiment (a TOML file) through tracemod shells.",
               epilog="Also: tm-run report DIR | compare DIR_A DIR_B | merge DIR... -o DIR | workload KIND ...")
    p.add_argument("experiment", help="the experiment file (TOML)")
    p.add_argument("-o", "--output", required=True, metavar="DIR", help="results directory (resumed if it exists)")
    p.add_argument("-j", "--jobs", type=int, default=1, help="runs at once (default 1)")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar or summary")
    p.add_argument("--shard", metavar="K/N", help="run the K-th of N shares (default: from Slurm or Kubernetes)")
    p.add_argument("--junit", metavar="FILE", help="also write the results as JUnit XML (for a CI's test report)")
    p.add_argument("--dry-run", action="store_true", help="print the runs, their seeds and command lines")
    p.add_argument("--version", action="version", version=f"tm-run (tracemod) {tracemod_run.VERSION}")
    args = p.parse_args(argv)
    if args.jobs < 1:
        raise UsageError(f"invalid --jobs {args.jobs}: at least 1")
    from . import experiment, junit, results, shard

    if args.junit and args.dry_run:
        raise UsageError("--junit writes a run's results: a dry run has none")
    if args.junit:
        junit.check_path(args.junit)
    from .runner import Interrupted, Runner

    exp = experiment.load(args.experiment)
    k_n = shard.parse(args.shard) if args.shard else shard.from_environment()
    runner = Runner(exp, args.output, args.jobs, args.quiet, k_n, argv=["tm-run", *argv])
    if args.dry_run:
        return dry_run(runner)
    try:
        done, failed, skipped = runner.run_all()
    except Interrupted as e:
        print(f"tm-run: {e}", file=sys.stderr)
        results.report(args.output, plots=False)
        if args.junit:
            junit.write(args.output, args.junit)
        return 130
    res, _, violations = results.report(args.output)
    if args.junit:
        junit.write(args.output, args.junit)
    if not args.quiet:
        from .workloads import registry

        for line in results.terminal_summary(res, registry.headline(exp.workload)):
            print(line)
        print(f"results: {args.output}/summary.md, results.csv, results.json, plots/")
    for run, error in failed:
        print(f"run {run.id} failed: {error}")
    for v in violations:
        print(v)
    return 1 if failed or violations else 0


def dry_run(runner):
    from . import stack

    runner.check_stacks()
    exp = runner.exp
    for run in runner.my_runs():
        plan = stack.plan_run(exp, run, runner.rundir(run))
        print(f"{run.id}\tseed {run.seed}\t{shlex.join(plan.argv)}")
    return 0


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    try:
        if argv and argv[0] == "report":
            p = Parser(prog="tm-run report", description="Rebuild a results directory's tables, summary and plots.")
            p.add_argument("dir")
            p.add_argument("--junit", metavar="FILE", help="also write the results as JUnit XML")
            args = p.parse_args(argv[1:])
            from . import junit, results

            if args.junit:
                junit.check_path(args.junit)
            _, _, violations = results.report(args.dir)
            if args.junit:
                junit.write(args.dir, args.junit)
            for v in violations:
                print(v)
            return 1 if violations else 0
        if argv and argv[0] == "compare":
            p = Parser(prog="tm-run compare", description="Compare two results directories metric by metric.")
            p.add_argument("dir_a")
            p.add_argument("dir_b")
            p.add_argument("--config-a")
            p.add_argument("--config-b")
            p.add_argument("--json", action="store_true")
            args = p.parse_args(argv[1:])
            from . import compare

            return compare.main(args.dir_a, args.dir_b, args.config_a, args.config_b, args.json)
        if argv and argv[0] == "merge":
            p = Parser(prog="tm-run merge", description="Join the shards of one experiment.")
            p.add_argument("dirs", nargs="+")
            p.add_argument("-o", "--output", required=True)
            args = p.parse_args(argv[1:])
            from . import merge

            return merge.main(args.dirs, args.output)
        if argv and argv[0] == "workload":
            from .workloads import registry

            return registry.main(argv[1:])
        return run_main(argv)
    except UsageError as e:
        print(f"tm-run: {e}", file=sys.stderr)
        return 2
    except RunError as e:
        print(f"tm-run: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 1
