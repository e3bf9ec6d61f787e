#!/usr/bin/python3
"""Conditional acceptance by draft depth, α_d = P(draft d accepted | drafts 1..d−1 accepted),
pooled over prompts, one line per method at its longest chain, one panel per category, from
`specdec sweep` results. Depths that fewer than --min-steps steps reached are left out.

Usage: plot_acceptance_by_depth.py RESULTS_DIR --out STEM [--sampling greedy] [--min-steps 20]
"""
import argparse

import sweep_results as sr


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("results")
    p.add_argument("--out", required=True)
    p.add_argument("--sampling")
    p.add_argument("--min-steps", type=int, default=20)
    args = p.parse_args()
    rows, mode, cats, plt, fig, axes = sr.chain_rows_by_category(
        args.results, args.sampling, "no chain-drafting rows to show acceptance by depth")
    for ax, cat in zip(axes, cats):
        for m in sr.methods(rows):
            mine = [r for r in rows if r["method"] == m and r["category"] == cat]
            k = max(r["k"] for r in mine)
            mine = [r for r in mine if r["k"] == k]
            attempts, accepts = [0] * k, [0] * k
            for r in mine:
                for d, (a, c) in enumerate(zip(r["depth_attempts"], r["depth_accepts"])):
                    attempts[d] += a
                    accepts[d] += c
            depths = [d + 1 for d in range(k) if attempts[d] >= args.min_steps]
            ax.plot(depths, [accepts[d - 1] / attempts[d - 1] for d in depths], marker="o", ms=3, color=sr.color(m),
                    label=f"{sr.label(m)} (K={k})")
        ax.set_title(f"{cat} ({mode})")
        ax.set_xlabel("draft depth d")
        sr.integer_ticks(ax, range(1, max(r["k"] for r in rows) + 1))
        ax.set_ylim(0, 1)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("α_d (conditional acceptance)")
    ns = sorted({len({(r["prompt_set"], r["prompt_id"]) for r in rows if r["category"] == c}) for c in cats})
    n = str(ns[0]) if len(ns) == 1 else f"{ns[0]}–{ns[-1]}"
    sr.finish(fig, f"Accepts over attempts at each depth, pooled over the steps of a panel's n = {n} prompts (no interval: "
                   f"a pooled ratio); depths fewer than {args.min_steps} steps reached are left out. "
                   f"From {sr.provenance(args.results, rows)}.")
    sr.save(fig, args.out)


if __name__ == "__main__":
    main()
