"""Plots of a results directory, PNG and SVG, drawn from the runs' data files only: a CDF per metric across
configurations (over replications; for samples such as file times, pooled over them), a box plot per metric
across configurations, and a time series of one run (the link logs' per-bin throughput and queueing delay, the
workload's sender RTT and receiver throughput). The browser workload's degraded loads are marked on its
samples' CDFs."""
import bisect
import os
import re

SAMPLE_PLOTS = {"bulk": ("rtt_ms",), "maxrate": ("rtt_ms",), "web": ("file_ms", "page_ms"),
                "reqrep": ("connect_ms", "rtt_ms_"), "command": (),
                "browser": ("plt_ms", "dcl_ms", "fcp_ms", "startup_ms")}


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(fig, directory, name):
    for ext in ("png", "svg"):
        fig.savefig(os.path.join(directory, f"{name}.{ext}"), dpi=110 if ext == "png" else None, bbox_inches="tight")


def _safe(name):
    return re.sub(r"[^A-Za-z0-9._-]", "_", name)


def _cdf(ax, values, label, marked=()):
    """VALUES' CDF; each of MARKED (some of VALUES) is also drawn as an x on the curve where it stands."""
    xs = sorted(values)
    n = len(xs)
    line, = ax.step(xs, [(i + 1) / n for i in range(n)], where="post",
                    label=f"{label} (n={n}" + (f", {len(marked)} degraded)" if marked else ")"))
    if marked:
        ax.plot(marked, [bisect.bisect_right(xs, v) / n for v in marked], "x", color=line.get_color(), markersize=7)


def _legend(ax, **style):
    """AX's legend, if anything on it has a label (matplotlib warns on stderr of an empty one)."""
    if ax.get_legend_handles_labels()[0]:
        ax.legend(**style)


def degraded_samples(results, name):
    """The values of sample NAME that came from degraded loads (completed, with failed requests): per load rows
    (the browser workload's) only."""
    return [item[name] for r in results for item in r.get("loads", [])
            if item.get("completed") and item.get("degraded") and item.get(name) is not None]


def cdf_figure(plt, out, name, data, xlabel, ylabel, title, marked=None):
    """One CDF per configuration of DATA ({config: values}) in one figure, saved as NAME.png and .svg; MARKED
    ({config: values}) are drawn as x on their configuration's curve."""
    fig, ax = plt.subplots(figsize=(7, 4))
    for c, values in data.items():
        _cdf(ax, values, c, (marked or {}).get(c, ()))
    ax.set(xlabel=xlabel, ylabel=ylabel, title=title)
    ax.grid(alpha=0.3)
    _legend(ax, fontsize="small")
    _save(fig, out, name)
    plt.close(fig)


def chosen_metrics(results, options):
    from .workloads import registry

    if options.get("metrics"):
        return list(options["metrics"])
    workload = results[0].get("workload", {})
    names = list(registry.headline(workload)) if workload.get("kind") else []
    for r in results:
        for m in r["metrics"]:
            if m.endswith("_delay_ms_p95") and m not in names:
                names.append(m)
    present = {m for r in results for m in r["metrics"]}
    return [m for m in names if m in present]


def chosen_samples(results, options):
    kind = results[0].get("workload", {}).get("kind", "")
    prefixes = SAMPLE_PLOTS.get(kind, ())
    names = []
    for r in results:
        for name in r.get("samples", {}):
            wanted = name in options.get("metrics", ()) or any(name == p or (p.endswith("_") and name.startswith(p))
                                                               for p in prefixes)
            if wanted and name not in names:
                names.append(name)
    return names


def draw_all(directory, manifest, results, options):
    plt = _pyplot()
    out = os.path.join(directory, "plots")
    os.makedirs(out, exist_ok=True)
    by_config = {}
    for r in results:
        by_config.setdefault(r["config"], []).append(r)
    for metric in chosen_metrics(results, options):
        data = {c: [r["metrics"][metric] for r in rs if metric in r["metrics"]] for c, rs in by_config.items()}
        data = {c: v for c, v in data.items() if v}
        cdf_figure(plt, out, f"cdf_{_safe(metric)}", data, metric, "fraction of runs",
                   f"{manifest['experiment']['name']}: {metric}")
        fig, ax = plt.subplots(figsize=(max(5, 1.2 * len(data) + 2), 4))
        ax.boxplot(list(data.values()), labels=[c.replace(",", "\n") for c in data], whis=(10, 90))
        ax.set(ylabel=metric, title=f"{metric} (whiskers p10-p90)")
        ax.grid(alpha=0.3, axis="y")
        _save(fig, out, f"box_{_safe(metric)}")
        plt.close(fig)
    for name in chosen_samples(results, options):
        data = {c: [v for r in rs for v in r.get("samples", {}).get(name, [])] for c, rs in by_config.items()}
        marked = {c: degraded_samples(rs, name) for c, rs in by_config.items()}
        cdf_figure(plt, out, f"cdf_{_safe(name)}_samples", {c: v for c, v in data.items() if v}, name, "fraction",
                   f"{name}, pooled over replications" + (" (x: degraded loads)" if any(marked.values()) else ""),
                   marked)
    chosen = options.get("timeseries")
    run = next((r for r in results if r["run"] == chosen), results[0])
    timeseries(plt, run, out)


def _throughput(points, width=0.1):
    """Mbit/s per WIDTH-second bin from [(t, cumulative bytes)...]."""
    if len(points) < 2:
        return [], []
    end = points[-1][0]
    bins = int(end / width) + 1
    counts = [0] * bins
    prev = 0
    for t, b in points:
        counts[min(bins - 1, int(t / width))] += b - prev
        prev = b
    return [i * width for i in range(bins)], [8e-6 * c / width for c in counts]


def timeseries(plt, run, out):
    links = [l for l in run.get("links", []) if "graph" in l]
    series = run.get("series", {})
    panels = (2 if links else 0) + (1 if series else 0)
    if not panels:
        return
    fig, axes = plt.subplots(panels, 1, figsize=(9, 2.6 * panels), sharex=True, squeeze=False)
    axes = [a[0] for a in axes]
    i = 0
    if links:
        for l in links:
            g = l["graph"]
            t = [x / 1000 for x in g["bins"]["start_ms"]]
            tag = f"{l['tool']} #{l['level']} {l['direction']}"
            axes[0].step(t, g["bins"]["throughput_mbps"], where="post", label=f"{tag} delivered")
            axes[0].step(t, g["bins"]["capacity_mbps"], where="post", alpha=0.4, label=f"{tag} capacity")
            axes[1].plot(t, [v if v is not None else float("nan") for v in g["bins"]["mean_delay_ms"]],
                         label=f"{tag} mean")
            axes[1].plot(t, [v if v is not None else float("nan") for v in g["bins"]["max_delay_ms"]], alpha=0.5,
                         label=f"{tag} max")
        axes[0].set(ylabel="Mbit/s", title=f"run {run['run']} (seed {run['seed']}): link logs")
        axes[1].set(ylabel="queueing delay, ms")
        i = 2
    if series:
        ax, rtt_ax = axes[i], axes[i].twinx()  # goodput on the left, the sender's RTT on the right
        for name, flows in series.items():
            for k, points in enumerate(flows):
                if name.startswith("received_bytes"):
                    t, v = _throughput(points)
                    ax.step(t, v, where="post", label=f"{name.replace('received_bytes', 'goodput')} flow {k + 1}")
                elif name.startswith("rtt_ms"):
                    rtt_ax.plot([p[0] for p in points], [p[1] for p in points], ":", label=f"srtt flow {k + 1}")
        ax.set(ylabel="goodput, Mbit/s (100 ms)")
        rtt_ax.set(ylabel="sender's smoothed RTT, ms")
        _legend(rtt_ax, fontsize="x-small", loc="lower right")
    for ax in axes:
        ax.grid(alpha=0.3)
        _legend(ax, fontsize="x-small", loc="upper right")
    axes[-1].set_xlabel("seconds (link logs: from their base timestamp; workload: from its start)")
    _save(fig, out, "timeseries")
    plt.close(fig)
