#!/usr/bin/python3
"""Chain against static tree against dynamic (EAGLE-2) tree: acceptance length and decode tokens/s
per method and draft shape, mean and 95% interval over prompts (sweep_results.py), from `specdec
sweep` results. Each bar is one method (its colour) and draft shape (its hatch, named in the
legend), the bars of a method centred on its tick; the dashed line is sequential decoding's
tokens/s when the results have it.

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


HATCHES = ["", "//", "..", "xx", "\\\\", "oo", "--", "++"]


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
    from matplotlib.patches import Patch
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.4))
    width = 0.8 / max(len(shapes), 1)
    ns = []
    for ax, what, get in zip(axes, ["acceptance length (tokens/step)", "decode tokens/s"],
                             [lambda r: r["acceptance_length"], lambda r: sr.timing(r, "tokens_per_s")]):
        for mi, m in enumerate(ms):
            # The shapes this method has, centred on its tick (a method without some shape keeps its group on the tick).
            present = [sh for sh in shapes if any(r["method"] == m and shape_of(r) == sh for r in rows)]
            for j, shape in enumerate(present):
                stat = sr.mean_ci([get(r) for r in rows if r["method"] == m and shape_of(r) == shape])
                ns.append(stat.n)
                x = mi + (j - (len(present) - 1) / 2) * width
                low, high = stat.yerr()
                ax.bar(x, stat.mean, width, color=sr.color(m), edgecolor="black", lw=0.5,
                       hatch=HATCHES[shapes.index(shape) % len(HATCHES)])
                if stat.has_interval:
                    ax.errorbar(x, stat.mean, yerr=[[low], [high]], fmt="none", ecolor="black", capsize=2, lw=1)
        ax.set_xticks(range(len(ms)))
        ax.set_xticklabels([sr.label(m) for m in ms])
        ax.set_ylabel(what)
        ax.grid(alpha=0.3, axis="y")
    sequential = sr.mean_ci([sr.timing(r, "tokens_per_s") for r in everything if r["method"] == "sequential" and r["sampling"] == mode])
    handles = [Patch(facecolor="white", edgecolor="black", hatch=HATCHES[i % len(HATCHES)], label=sh) for i, sh in enumerate(shapes)]
    if sequential.n:
        handles.append(axes[1].axhline(sequential.mean, color=sr.color("sequential"), ls="--", lw=1, label="sequential (mean)"))
    for ax in axes:
        ax.set_ylim(bottom=0)  # after every artist, the sequential line included: a fixed limit stops autoscaling
    axes[0].set_title(f"draft shape ({mode}); bar colour: method, hatch: shape", fontsize=9)
    sr.finish(fig, f"Mean over prompts; {sr.interval_note(ns)} From {sr.provenance(args.results, everything)}.",
              handles, [h.get_label() for h in handles])
    sr.save(fig, args.out)


if __name__ == "__main__":
    main()
