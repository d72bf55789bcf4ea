"""tm-run compare DIR_A DIR_B: per configuration and metric, the difference of medians, Noble's criterion
(|difference of means| < sum of SDs: "indistinguishable") and the Mann-Whitney U test's two-sided p-value.

Configurations are matched by name; --config-a/--config-b compare two named ones instead (they may come from
one directory, e.g. droptail against codel). A configuration present on one side only is listed as such."""
from . import results, stats
from .errors import UsageError


def _values(res, config):
    out = {}
    for r in res:
        if r["config"] == config:
            for m, v in r["metrics"].items():
                if isinstance(v, (int, float)):
                    out.setdefault(m, []).append(float(v))
    return out


def pairs(res_a, res_b, config_a=None, config_b=None):
    names_a = list(results.configurations(res_a))
    names_b = list(results.configurations(res_b))
    if config_a or config_b:
        ca, cb = config_a or config_b, config_b or config_a
        for c, names, side in ((ca, names_a, "A"), (cb, names_b, "B")):
            if c not in names:
                raise UsageError(f"no configuration '{c}' in {side} (it has: {', '.join(names) or 'none'})")
        return [(ca, cb)]
    common = [c for c in names_a if c in names_b]
    if not common and len(names_a) == 1 and len(names_b) == 1:
        return [(names_a[0], names_b[0])]
    if not common:
        raise UsageError("A and B have no configuration in common: name two with --config-a and --config-b")
    return [(c, c) for c in common]


def compare(res_a, res_b, config_a=None, config_b=None):
    """[(config label, metric, row dict)]"""
    rows = []
    for ca, cb in pairs(res_a, res_b, config_a, config_b):
        va, vb = _values(res_a, ca), _values(res_b, cb)
        for m in [m for m in va if m in vb]:
            a, b = va[m], vb[m]
            ma, mb = stats.median(a), stats.median(b)
            _, p = stats.mann_whitney_u(a, b)
            rows.append({"config": ca if ca == cb else f"{ca} vs {cb}", "metric": m, "n_a": len(a), "n_b": len(b),
                         "median_a": ma, "median_b": mb, "diff": mb - ma,
                         "diff_pct": (mb - ma) / abs(ma) * 100 if ma else None,
                         "mean_a": stats.mean(a), "sd_a": stats.sd(a), "mean_b": stats.mean(b), "sd_b": stats.sd(b),
                         "noble": "indistinguishable" if stats.noble_indistinguishable(a, b) else "different",
                         "p": p})
    return rows


def _g(x):
    return "-" if x is None else f"{x:.4g}"


def main(dir_a, dir_b, config_a=None, config_b=None, as_json=False):
    res_a, _ = results.load_results(dir_a)
    res_b, _ = results.load_results(dir_b)
    if not res_a or not res_b:
        raise UsageError(f"{dir_a if not res_a else dir_b} holds no finished runs")
    rows = compare(res_a, res_b, config_a, config_b)
    if as_json:
        import json

        print(json.dumps(rows, indent=1))
        return 0
    print(f"A = {dir_a}, B = {dir_b}; diff = median B - median A; Noble: |mean A - mean B| < SD A + SD B; "
          "p: Mann-Whitney U, two-sided")
    config = None
    for r in rows:
        if r["config"] != config:
            config = r["config"]
            print(f"\n{config}\n  {'metric':30} {'n A/B':>7} {'median A':>10} {'median B':>10} {'diff':>10} "
                  f"{'diff %':>7}  {'Noble':17} {'p':>7}")
        pct = f"{r['diff_pct']:+.1f}" if r["diff_pct"] is not None else "-"
        print(f"  {r['metric']:30} {r['n_a']:>3}/{r['n_b']:<3} {_g(r['median_a']):>10} {_g(r['median_b']):>10} "
              f"{_g(r['diff']):>10} {pct:>7}  {r['noble']:17} {r['p']:7.3g}{' *' if r['p'] < 0.05 else ''}")
    return 0
