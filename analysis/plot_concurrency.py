#!/usr/bin/python3
"""P-EAGLE against EAGLE-3: predicted speedup over sequential decoding against concurrency
(batch size), from the CSV of `specdec simulate --sweep FILE.csv` (one line per drafter and K).

Usage: plot_concurrency.py SIMULATE_SWEEP.csv --out STEM
"""
import argparse
import csv
import os

import sweep_results as sr


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("csv")
    p.add_argument("--out", required=True)
    args = p.parse_args()
    if not os.path.isfile(args.csv):
        sr.fail(f"{args.csv}: no such file (write it with `specdec simulate --sweep FILE.csv ...`)")
    with open(args.csv) as f:
        rows = [r for r in csv.DictReader(f) if r.get("method") not in (None, "sequential")]
    if not rows or "batch" not in rows[0] or "speedup" not in rows[0]:
        sr.fail(f"{args.csv}: expected the speculative rows of `specdec simulate --sweep` (columns batch, speedup)")
    plt = sr.pyplot()
    fig, ax = plt.subplots(figsize=(5.2, 3.6))
    ks = list(dict.fromkeys(r["k"] for r in rows))
    for key, members in sr.group(rows, lambda r: (r["method"], r["drafter"], r["k"], r["hardware"])).items():
        members.sort(key=lambda r: int(r["batch"]))
        ax.plot([int(r["batch"]) for r in members], [float(r["speedup"]) for r in members], marker="o", ms=3,
                color=sr.color(key[0]), ls=["-", "--", ":", "-."][ks.index(key[2]) % 4],  # colour: method, line: K
                label=f"{sr.label(key[0])} K={key[2]} ({key[1]}, {key[3]})")
    ax.axhline(1, color="gray", lw=1, ls="--")  # no speedup
    ax.set_xscale("log", base=2)
    batches = sorted({int(r["batch"]) for r in rows})
    ax.set_xticks(batches)
    ax.set_xticklabels([str(b) for b in batches])
    ax.set_xlabel("concurrency (batch size)")
    ax.set_ylabel("predicted speedup over sequential")
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    sr.finish(fig, f"The simulator's prediction (one value per point, no sampling: no interval), from {os.path.basename(args.csv)}; "
                   "dashed grey: no speedup.")
    sr.save(fig, args.out)


if __name__ == "__main__":
    main()
