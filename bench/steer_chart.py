#!/usr/bin/env python3
"""Summarise and draw bench/steer_bench.sh results: per scenario and mode, the median of the
interleaved rounds with the min-max spread, each mode's ratio to none, and auto's ratio to the best
static mode.

  steer_chart.py --summary RESULTS.tsv          markdown table on stdout
  steer_chart.py --svg OUT.svg RESULTS.tsv ...  grouped bars (median, min-max whiskers)
Several result files may be given: their rows are pooled per scenario and mode.
"""
import argparse
import statistics
import sys
from collections import defaultdict

MODES = ["none", "rps", "xdp-generic", "napi", "defer", "napi-defer", "xdp-daemon", "auto"]
STATIC = ("rps", "xdp-generic", "napi")


def load(paths):
    rows = defaultdict(list)  # (scenario, mode) -> processed/s per round
    lat = defaultdict(list)   # (scenario, mode) -> (p50_us, p99_us) per round, request/response rows
    order = []
    headers = []
    for path in paths:
        with open(path) as f:
            for line in f:
                line = line.rstrip("\n")
                if line.startswith("#"):
                    headers.append(line.lstrip("# "))
                    continue
                cols = line.split("\t")
                if len(cols) < 5 or cols[0] == "round":
                    continue
                scen, mode, got = cols[1], cols[2], float(cols[4])
                if scen not in order:
                    order.append(scen)
                rows[(scen, mode)].append(got)
                if len(cols) >= 9 and cols[7] and cols[8]:
                    lat[(scen, mode)].append((float(cols[7]), float(cols[8])))
    return rows, order, headers, lat


def modes_in(rows):
    return [m for m in MODES if any(k[1] == m for k in rows)]


def latency(lat, order):
    """p50 / p99 request-response latency, median over the rounds [min-max of p99]."""
    ms = [m for m in MODES if any(k[1] == m for k in lat)]
    scens = [s for s in order if any(k[0] == s for k in lat)]
    if not scens:
        return ""
    out = ["| scenario (latency, us) | " + " | ".join(ms) + " |", "|---|" + "---:|" * len(ms)]
    for scen in scens:
        cells = []
        for m in ms:
            v = lat.get((scen, m))
            if not v:
                cells.append("-")
                continue
            p50 = statistics.median(x[0] for x in v)
            p99 = [x[1] for x in v]
            cells.append(f"p50 {p50:.0f}, p99 {statistics.median(p99):.0f} [{min(p99):.0f}-{max(p99):.0f}]")
        out.append(f"| {scen} | " + " | ".join(cells) + " |")
    return "\n".join(out)


def summary(rows, order):
    MODES = modes_in(rows)
    with_auto = "auto" in MODES
    out = ["| scenario | " + " | ".join(MODES) + (" | auto / none | auto / best static |" if with_auto else " |"),
           "|---|" + "---:|" * (len(MODES) + (2 if with_auto else 0))]
    for scen in order:
        med = {m: statistics.median(rows[(scen, m)]) for m in MODES if rows.get((scen, m))}
        cells = []
        for m in MODES:
            v = rows.get((scen, m))
            if not v:
                cells.append("-")
                continue
            ratio = f" ({med[m] / med['none']:.2f}x)" if med.get("none") and m != "none" else ""
            cells.append(f"{med[m] / 1000:.0f}k [{min(v) / 1000:.0f}-{max(v) / 1000:.0f}k]{ratio}")
        best = max((med[m] for m in STATIC if m in med), default=0)
        a = med.get("auto", 0)
        if with_auto:
            cells.append(f"{a / med['none']:.2f}x" if med.get("none") else "-")
            cells.append(f"{a / best:.2f}x" if best else "-")
        out.append(f"| {scen} | " + " | ".join(cells) + " |")
    return "\n".join(out)


def svg(rows, order, headers, out):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(max(6, 1.9 * len(order)), 4.2))
    modes = modes_in(rows)
    width = 0.8 / len(modes)
    colours = {"none": "#9e9e9e", "rps": "#5b8def", "xdp-generic": "#f0a030", "napi": "#b05fc0", "defer": "#c8a0d8",
               "napi-defer": "#7a3f8a", "xdp-daemon": "#c07820", "auto": "#2e9e58"}
    for i, mode in enumerate(modes):
        xs, meds, lo, hi = [], [], [], []
        for j, scen in enumerate(order):
            v = rows.get((scen, mode))
            if not v:
                continue
            m = statistics.median(v)
            xs.append(j + (i - (len(modes) - 1) / 2) * width)
            meds.append(m / 1000)
            lo.append((m - min(v)) / 1000)
            hi.append((max(v) - m) / 1000)
        ax.bar(xs, meds, width, yerr=[lo, hi], capsize=2, label=mode, color=colours[mode])
    ax.set_xticks(range(len(order)))
    ax.set_xticklabels(order)
    ax.set_ylabel("packets/s processed, or answers/s (rr-*) (thousands)")
    ax.set_title("Steering a single-queue veth flood on 2 CPUs: median of interleaved rounds, min-max whiskers",
                 fontsize=9)
    ax.legend(ncol=len(modes), fontsize=8)
    if headers:
        fig.text(0.01, 0.01, headers[0][:160], fontsize=6)
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    fig.savefig(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--summary", action="store_true")
    ap.add_argument("--svg")
    ap.add_argument("results", nargs="+")
    a = ap.parse_args()
    rows, order, headers, lat = load(a.results)
    if not order:
        sys.exit("no result rows in " + ", ".join(a.results))
    if a.summary or not a.svg:
        print(summary(rows, order))
        table = latency(lat, order)
        if table:
            print()
            print(table)
    if a.svg:
        svg(rows, order, headers, a.svg)


if __name__ == "__main__":
    main()
