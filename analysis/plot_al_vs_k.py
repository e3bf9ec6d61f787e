#!/usr/bin/python3
"""Acceptance length against draft length K, one line per method with its 95% interval band
over prompts (sweep_results.py: none at n = 1), one panel per prompt category, from `specdec sweep`
results (chain drafting).

Usage: plot_al_vs_k.py RESULTS_DIR --out STEM [--sampling greedy]   (writes STEM.png, STEM.pdf)
"""
import argparse

import sweep_results as sr


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("results")
    p.add_argument("--out", required=True)
    p.add_argument("--sampling", help="sampling mode to plot (default: the first in the results)")
    args = p.parse_args()
    rows, mode, cats, plt, fig, axes = sr.chain_rows_by_category(
        args.results, args.sampling, "no chain-drafting rows (tree \"chain\") to plot against K")
    ns = []
    for ax, cat in zip(axes, cats):
        for m in sr.methods(rows):
            by_k = sr.group([r for r in rows if r["method"] == m and r["category"] == cat], lambda r: r["k"])
            ks = sorted(by_k)
            stats = [sr.mean_ci([r["acceptance_length"] for r in by_k[k]]) for k in ks]
            ns += [s.n for s in stats]
            ax.plot(ks, [s.mean for s in stats], marker="o", ms=3, color=sr.color(m), label=sr.label(m))
            sr.band(ax, ks, stats, sr.color(m))
        ax.set_title(f"{cat} ({mode})")
        ax.set_xlabel("draft length K")
        sr.integer_ticks(ax, [r["k"] for r in rows])
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("acceptance length (tokens/step)")
    axes[0].set_ylim(bottom=1)  # a step emits at least its bonus token; after every panel's data (shared y)
    sr.finish(fig, f"Mean over prompts of each prompt's acceptance length; {sr.interval_note(ns)} "
                   f"From {sr.provenance(args.results, rows)}.")
    sr.save(fig, args.out)


if __name__ == "__main__":
    main()
