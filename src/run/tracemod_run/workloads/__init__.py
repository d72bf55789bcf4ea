"""Workloads: small TCP clients and servers that measure what a user of the emulated link would see.

Each is runnable alone (`tm-run workload KIND --server` outside, `--client` behind the shells) and by the
runner. A client prints a human summary, or with --output writes a JSON document:
{"kind", "params", "seed", "metrics": {name: number}, "samples": {name: [numbers]}, "series": {...},
 "elapsed_s"}. Metrics are scalars, one per run (results.csv); samples are distributions pooled for CDFs.
"""
