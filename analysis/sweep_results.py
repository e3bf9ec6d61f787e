"""Reading `specdec sweep` results (a directory with manifest.json and rows.jsonl) for the plot
and table scripts: rows, grouping, mean and 95% confidence interval over prompts, and writing a
figure as PNG and PDF. Errors end the script with a message, not a traceback."""
import json
import math
import os
import sys

# Student's t, 0.975 quantile, df = 1..30 (as experiments/sweep/cell_summary.cpp).
_T975 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131,
         2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042]

METHOD_NAMES = {"sequential": "sequential", "draft": "draft LM", "eagle": "EAGLE-1", "eagle3": "EAGLE-3",
                "peagle": "P-EAGLE", "mtp": "MTP", "medusa": "Medusa"}
METHOD_ORDER = ["sequential", "draft", "eagle", "eagle3", "peagle", "mtp", "medusa"]


def fail(message):
    sys.exit(f"{os.path.basename(sys.argv[0])}: error: {message}")


def load_rows(directory, policies=False):
    """The rows of a results directory, in run order. Rows of cells with a speculation policy other
    than fixed (the "policy" axis) are left out unless `policies`: the scripts that tabulate K and
    tree shapes read the method's whole shape every step."""
    path = os.path.join(directory, "rows.jsonl")
    if not os.path.isfile(os.path.join(directory, "manifest.json")) or not os.path.isfile(path):
        fail(f"{directory}: no sweep results (expected manifest.json and rows.jsonl from `specdec sweep`)")
    rows = []
    with open(path) as f:
        for number, line in enumerate(f, start=1):
            if not line.endswith("\n"):
                break  # a torn last line: the sweep was interrupted inside a write
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as e:
                fail(f"{path}:{number}: not a result row ({e})")
    if not rows:
        fail(f"{path}: no finished runs yet")
    if not policies:
        rows = [r for r in rows if r.get("policy", "fixed") == "fixed"]
    return sorted(rows, key=lambda r: r["run"])


def t975(df):
    if df <= 30:
        return _T975[max(df, 1) - 1]
    z = 1.959964
    return z + (z ** 3 + z) / (4 * df) + (5 * z ** 5 + 16 * z ** 3 + 3 * z) / (96 * df * df)


def mean_ci(values):
    """(mean, half width of the 95% CI); the half width is 0 for fewer than two values."""
    values = [v for v in values if v is not None]
    n = len(values)
    if n == 0:
        return float("nan"), 0.0
    mean = sum(values) / n
    if n < 2:
        return mean, 0.0
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    return mean, t975(n - 1) * sd / math.sqrt(n)


def timing(row, field):
    return row.get("timing", {}).get(field)


def categories(rows):
    """Categories in the order rows first show them."""
    seen = []
    for r in rows:
        if r["category"] not in seen:
            seen.append(r["category"])
    return seen


def methods(rows):
    """The methods present: the known ones in METHOD_ORDER, then any other in first-appearance order."""
    present = list(dict.fromkeys(r["method"] for r in rows))
    return [m for m in METHOD_ORDER if m in present] + [m for m in present if m not in METHOD_ORDER]


def label(method):
    return METHOD_NAMES.get(method, method)


def group(rows, key):
    """{key(row): [rows]} in first-appearance order."""
    out = {}
    for r in rows:
        out.setdefault(key(r), []).append(r)
    return out


def pick_sampling(rows, wanted):
    """Rows of one sampling mode: `wanted`, or the first one present."""
    modes = []
    for r in rows:
        if r["sampling"] not in modes:
            modes.append(r["sampling"])
    mode = wanted or modes[0]
    if mode not in modes:
        fail(f"no rows with sampling '{mode}' (present: {', '.join(modes)})")
    return [r for r in rows if r["sampling"] == mode], mode


def chain_rows_by_category(results, sampling, nothing):
    """Chain-drafting rows of one sampling mode, their categories, and one axis per category.

    `nothing` is the error message's end when the results hold no chain rows.
    Returns (rows, mode, categories, plt, fig, axes)."""
    rows = [r for r in load_rows(results) if r["method"] != "sequential" and r.get("tree") == "chain"]
    if not rows:
        fail(f"{results}: {nothing}")
    rows, mode = pick_sampling(rows, sampling)
    cats = categories(rows)
    plt = pyplot()
    fig, axes = plt.subplots(1, len(cats), figsize=(4.2 * len(cats), 3.4), sharey=True, squeeze=False)
    return rows, mode, cats, plt, fig, axes[0]


def save(fig, stem):
    """Writes STEM.png and STEM.pdf."""
    directory = os.path.dirname(stem)
    if directory:
        os.makedirs(directory, exist_ok=True)
    for ext in ("png", "pdf"):
        tmp = f"{stem}.tmp.{ext}"
        fig.savefig(tmp, dpi=110, bbox_inches="tight")
        os.replace(tmp, f"{stem}.{ext}")
    print(f"wrote {stem}.png and {stem}.pdf")


def pyplot():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt
