#!/usr/bin/python3
"""Chain against static tree against dynamic (EAGLE-2) tree: acceptance length and decode tokens/s
per method and draft shape, mean and 95% confidence interval over prompts, from `specdec sweep`
results. Each shape is one bar; its configuration is in the legend; the dashed line is sequential
decoding's tokens/s when the results have it.

Usage: plot_tree_shapes.py RESULTS_DIR --out STEM [--sampling greedy]
"""
import argparse

import sweep_results as sr


def shape_of(r):
    if r["tree"] == "chain":
        return f"chain K={r['k']}"
    if r["tree"] == "dynamic":
        return f"dynamic {r['total_tokens']} tok, depth {r['depth']}, top-k {r['tree_top_k']}"
    return f"static {r['tree']}" if len(r["tree"]) < 24 else "static (paths)"


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("results")
    p.add_argument("--out", required=True)
    p.add_argument("--sampling")
    args = p.parse_args()
    everything = sr.load_rows(args.results)
    rows = [r for r in everything if r["method"] != "sequential"]
    if not rows:
        sr.fail(f"{args.results}: no speculative rows")
    rows, mode = sr.pick_sampling(rows, args.sampling)
    ms = sr.methods(rows)
    shapes = list(sr.group(rows, shape_of))
    plt = sr.pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.4))
    width = 0.8 / max(len(shapes), 1)
    for ai, (ax, what, get) in enumerate(zip(axes, ["acceptance length (tokens/step)", "decode tokens/s"],
                                             [lambda r: r["acceptance_length"], lambda r: sr.timing(r, "tokens_per_s")])):
        for si, shape in enumerate(shapes):
            xs, means, errs = [], [], []
            for mi, m in enumerate(ms):
                vals = [get(r) for r in rows if r["method"] == m and shape_of(r) == shape]
                if not vals:
                    continue
                mean, half = sr.mean_ci(vals)
                xs.append(mi + (si - (len(shapes) - 1) / 2) * width)
                means.append(mean)
                errs.append(half)
            ax.bar(xs, means, width, yerr=errs, capsize=2, label=shape)
        ax.set_xticks(range(len(ms)))
        ax.set_xticklabels([sr.label(m) for m in ms])
        ax.set_ylabel(what)
        ax.grid(alpha=0.3, axis="y")
    sequential = [sr.timing(r, "tokens_per_s") for r in everything if r["method"] == "sequential" and r["sampling"] == mode]
    if sequential:
        axes[1].axhline(sr.mean_ci(sequential)[0], color="gray", ls="--", lw=1, label="sequential")
    axes[0].set_title(f"draft shape ({mode})")
    handles, labels = axes[1].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=3, fontsize=7, bbox_to_anchor=(0.5, -0.12))
    sr.save(fig, args.out)


if __name__ == "__main__":
    main()
