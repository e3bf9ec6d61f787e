#!/usr/bin/env python3
"""One table row per evaluation run: mean absolute error, largest error and signed mean per set.

    scripts/evaluation_summary.py LABEL=RUN.json [LABEL=RUN.json ...]

Each RUN.json is the output of `specdec simulate --evaluate simulator/evaluation --json` (add
--specs-dir for fitted specs). The summary that `--evaluate` prints gives the signed mean; the
absolute one says how far single results are off whichever way they err.
"""
import json
import sys


def summary(rows):
    errors = [r["relative_error"] for r in rows]
    if not errors:
        return "-"
    mae = sum(abs(e) for e in errors) / len(errors)
    worst = max(abs(e) for e in errors)
    return f"{100 * mae:.1f} / {100 * worst:.1f}"


def main(argv):
    if not argv:
        sys.exit(__doc__)
    runs = []
    for arg in argv:
        label, sep, path = arg.partition("=")
        if not sep:
            sys.exit(f"error: '{arg}' is not LABEL=RUN.json")
        with open(path) as f:
            runs.append((label, json.load(f)))
    names = [s["set"] for s in runs[0][1]["sets"]]
    print("mean absolute error / largest error, %, per set (n results)")
    header = ["run", "all"] + [f"{n} ({s['results']})" for n, s in zip(names, runs[0][1]["sets"])]
    print(" | ".join(header))
    for label, run in runs:
        sets = {s["set"]: s["rows"] for s in run["sets"]}
        every = [r for s in run["sets"] for r in s["rows"]]
        print(" | ".join([label, summary(every)] + [summary(sets.get(n, [])) for n in names]))


if __name__ == "__main__":
    main(sys.argv[1:])
