#!/usr/bin/python3
"""Acceptance length against sampling temperature, one line per method (and draft shape) with its
95% confidence band over prompts, from `specdec sweep` results with sampled rows; greedy rows, if
any, are drawn as dashed horizontal lines.

Usage: plot_temperature.py RESULTS_DIR --out STEM
"""
import argparse

import sweep_results as sr


def series_of(r):
    shape = f"K={r['k']}" if r["tree"] == "chain" else r["tree"] if len(r["tree"]) < 16 else "tree"
    return (r["method"], shape)


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
    colors = {}
    for key, members in sr.group(sampled, series_of).items():
        by_t = sr.group(members, lambda r: r["temperature"])
        ts = sorted(by_t)
        stats = [sr.mean_ci([r["acceptance_length"] for r in by_t[t]]) for t in ts]
        line, = ax.plot(ts, [s[0] for s in stats], marker="o", ms=3, label=f"{sr.label(key[0])} {key[1]} ({members[0]['sampling']})")
        colors[key] = line.get_color()
        ax.fill_between(ts, [a - h for a, h in stats], [a + h for a, h in stats], alpha=0.2, color=line.get_color())
    for key, members in sr.group(greedy, series_of).items():
        mean, _ = sr.mean_ci([r["acceptance_length"] for r in members])
        ax.axhline(mean, ls="--", lw=1, color=colors.get(key, "gray"), label=f"{sr.label(key[0])} {key[1]} greedy")
    ax.set_xlabel("temperature T")
    ax.set_ylabel("acceptance length (tokens/step)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    sr.save(fig, args.out)


if __name__ == "__main__":
    main()
