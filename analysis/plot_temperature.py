#!/usr/bin/python3
"""Acceptance length against sampling temperature, one line per method (its colour) and draft shape
(its marker) with its 95% interval band over prompts (sweep_results.py), from `specdec sweep` results with sampled rows; greedy rows of
the same series, if any, are drawn as dashed horizontal lines.

Usage: plot_temperature.py RESULTS_DIR --out STEM
"""
import argparse

import sweep_results as sr


def series_of(r):
    shape = f"K={r['k']}" if r["tree"] == "chain" else r["tree"] if len(r["tree"]) < 16 else "tree"
    return (r["method"], shape)


MARKERS = ["o", "s", "^", "D", "v", "P", "X", "*"]


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("results")
    p.add_argument("--out", required=True)
    args = p.parse_args()
    rows = [r for r in sr.load_rows(args.results) if r["method"] != "sequential"]
    sampled = [r for r in rows if r["sampling"] != "greedy"]
    greedy = [r for r in rows if r["sampling"] == "greedy"]
    if not rows:
        sr.fail(f"{args.results}: no speculative rows")
    plt = sr.pyplot()
    fig, ax = plt.subplots(figsize=(5.2, 3.6))
    shapes = list(dict.fromkeys(series_of(r)[1] for r in rows))  # a marker per draft shape, a colour per method
    ns = []
    for key, members in sr.group(sampled, series_of).items():
        by_t = sr.group(members, lambda r: r["temperature"])
        ts = sorted(by_t)
        stats = [sr.mean_ci([r["acceptance_length"] for r in by_t[t]]) for t in ts]
        ns += [s.n for s in stats]
        ax.plot(ts, [s.mean for s in stats], marker=MARKERS[shapes.index(key[1]) % len(MARKERS)], ms=4,
                color=sr.color(key[0]), label=f"{sr.label(key[0])} {key[1]} ({members[0]['sampling']})")
        sr.band(ax, ts, stats, sr.color(key[0]))
    sampled_keys = {series_of(r) for r in sampled}
    for key, members in sr.group(greedy, series_of).items():
        if sampled_keys and key not in sampled_keys:
            continue  # greedy lines only beside the sampled series they compare with
        stat = sr.mean_ci([r["acceptance_length"] for r in members])
        ns.append(stat.n)
        ax.axhline(stat.mean, ls="--", lw=1, color=sr.color(key[0]), marker=MARKERS[shapes.index(key[1]) % len(MARKERS)],
                   ms=4, markevery=[0], label=f"{sr.label(key[0])} {key[1]} greedy")
    ax.set_xlabel("temperature T")
    ax.set_ylabel("acceptance length (tokens/step)")
    ax.set_ylim(bottom=1)  # a step emits at least its bonus token
    ax.grid(alpha=0.3)
    sr.finish(fig, f"Mean over prompts of each prompt's acceptance length; dashed: greedy. {sr.interval_note(ns)} "
                   f"From {sr.provenance(args.results, rows)}.")
    sr.save(fig, args.out)


if __name__ == "__main__":
    main()
