#!/usr/bin/python3
"""Measured speedup against the simulator's prediction, one point per (cell, prompt), from
`specdec sweep` results whose spec has a "predict" setting and a sequential cell. Measured
speedup = the run's decode tokens/s over the sequential run's on the same prompt and backend;
predicted = the simulator's speedup for the run, re-costed from the run's own accepted lengths.

Usage: plot_predicted_speedup.py RESULTS_DIR --out STEM
"""
import argparse

import sweep_results as sr


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("results")
    p.add_argument("--out", required=True)
    args = p.parse_args()
    rows = sr.load_rows(args.results)
    base = {(r["prompt_set"], r["prompt_id"], r["backend"]): sr.timing(r, "tokens_per_s")
            for r in rows if r["method"] == "sequential" and r["sampling"] == "greedy"}
    if not base:
        sr.fail(f"{args.results}: no greedy sequential rows to measure speedups against")
    points = [r for r in rows if r["method"] != "sequential" and "predicted" in r]
    if not points:
        sr.fail(f"{args.results}: no rows with a predicted speedup (give the spec a \"predict\" setting)")
    plt = sr.pyplot()
    fig, ax = plt.subplots(figsize=(4.6, 4))
    hi = 0
    for m in sr.methods(points):
        xs, ys = [], []
        for r in points:
            b = base.get((r["prompt_set"], r["prompt_id"], r["backend"]))
            if r["method"] == m and b:
                xs.append(r["predicted"]["speedup"])
                ys.append(sr.timing(r, "tokens_per_s") / b)
        ax.scatter(xs, ys, s=12, color=sr.color(m), label=sr.label(m))
        hi = max([hi] + xs + ys)
    ax.plot([0, hi * 1.05], [0, hi * 1.05], color="gray", lw=1, ls="--", label="measured = predicted")
    hw = points[0]["predicted"]["hardware"]
    ax.set_xlabel(f"predicted speedup ({hw}, {points[0]['predicted']['model']})")
    ax.set_ylabel("measured speedup (this machine)")
    ax.set_xlim(left=0)
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    n = len({(r["prompt_set"], r["prompt_id"]) for r in points})
    sr.finish(fig, f"One point per run (cell and prompt; n = {n} prompts, no averaging, so no interval). "
                   f"From {sr.provenance(args.results, rows)}.")
    sr.save(fig, args.out)


if __name__ == "__main__":
    main()
