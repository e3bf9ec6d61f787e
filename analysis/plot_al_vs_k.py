#!/usr/bin/python3
"""Acceptance length against draft length K, one line per method with its 95% confidence band
over prompts, one panel per prompt category, from `specdec sweep` results (chain drafting).

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
    for ax, cat in zip(axes, cats):
        for m in sr.methods(rows):
            by_k = sr.group([r for r in rows if r["method"] == m and r["category"] == cat], lambda r: r["k"])
            ks = sorted(by_k)
            stats = [sr.mean_ci([r["acceptance_length"] for r in by_k[k]]) for k in ks]
            mean = [s[0] for s in stats]
            ax.plot(ks, mean, marker="o", ms=3, label=sr.label(m))
            ax.fill_between(ks, [a - h for a, h in stats], [a + h for a, h in stats], alpha=0.2)
        ax.set_title(f"{cat} ({mode})")
        ax.set_xlabel("draft length K")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("acceptance length (tokens/step)")
    axes[-1].legend(fontsize=8)
    sr.save(fig, args.out)


if __name__ == "__main__":
    main()
