"""Reading `specdec sweep` results (a directory with manifest.json and rows.jsonl) for the plot
and table scripts: rows, grouping, the mean and its 95% interval over prompts, the sweep's own
provenance, one colour per method, and writing a figure as PNG and PDF (with its caption and its
legend off the data). Errors end the script with a message, not a traceback.

Intervals are those of summary.json (experiments/sweep/cell_summary.hpp), computed here bit for bit
the same way: none at n = 1; a 95% percentile bootstrap of the mean over prompts (2000 resamples
drawn with SplitMix64 from seed 0), which stays inside the values' range and so inside the
quantity's bounds; flagged "few" below 5 prompts, where it covers less than 95%."""
import json
import math
import os
import sys
import textwrap
from dataclasses import dataclass

BOOTSTRAP_RESAMPLES = 2000
BOOTSTRAP_SEED = 0
FEW_PROMPTS = 5
INTERVAL_MEANING = "95% percentile-bootstrap interval of the mean over prompts"

METHOD_NAMES = {"sequential": "sequential", "draft": "draft LM", "eagle": "EAGLE-1", "eagle3": "EAGLE-3",
                "peagle": "P-EAGLE", "mtp": "MTP", "medusa": "Medusa"}
METHOD_ORDER = ["sequential", "draft", "eagle", "eagle3", "peagle", "mtp", "medusa"]
# One colour per method in every figure: the Okabe-Ito palette (distinguishable under the common
# colour-vision deficiencies). Methods outside the table take the rest of it in first-use order.
METHOD_COLORS = {"sequential": "#000000", "draft": "#E69F00", "eagle": "#56B4E9", "eagle3": "#009E73",
                 "peagle": "#D55E00", "mtp": "#0072B2", "medusa": "#CC79A7"}
SPARE_COLORS = ["#F0E442", "#999999", "#882255", "#44AA99", "#332288", "#DDCC77"]


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


_MASK64 = (1 << 64) - 1


def _splitmix64(state):
    """(next state, draw): SplitMix64, as experiments/sweep/cell_summary.cpp."""
    state = (state + 0x9E3779B97F4A7C15) & _MASK64
    z = state
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK64
    return state, z ^ (z >> 31)


@dataclass(frozen=True)
class Stat:
    """A mean over n values and its 95% interval [low, high] (None below two values)."""
    n: int
    mean: float
    low: float = None
    high: float = None

    @property
    def has_interval(self):
        return self.low is not None

    @property
    def few(self):
        return self.n < FEW_PROMPTS

    def yerr(self):
        """Error-bar lengths below and above the mean (0 without an interval)."""
        return (self.mean - self.low, self.high - self.mean) if self.has_interval else (0.0, 0.0)

    def text(self, digits=2):
        """"2.41 (2.10–2.75)", or "2.41 (n = 1)" without an interval."""
        if self.n == 0:
            return "—"
        if not self.has_interval:
            return f"{self.mean:.{digits}f} (n = {self.n})"
        return f"{self.mean:.{digits}f} ({self.low:.{digits}f}–{self.high:.{digits}f})"


def mean_ci(values):
    """The mean of `values` (None entries dropped) and its 95% percentile-bootstrap interval: the
    same numbers as summary.json's for the same values in the same order."""
    values = [float(v) for v in values if v is not None]
    n = len(values)
    if n == 0:
        return Stat(0, float("nan"))
    total = 0.0
    for v in values:
        total += v
    mean = total / n
    if n < 2:
        return Stat(n, mean)
    means = []
    state = BOOTSTRAP_SEED
    for _ in range(BOOTSTRAP_RESAMPLES):
        s = 0.0
        for _ in range(n):
            state, draw = _splitmix64(state)
            s += values[(draw * n) >> 64]  # Lemire's multiply-shift: an index in [0, n)
        means.append(s / n)
    means.sort()
    tail = BOOTSTRAP_RESAMPLES // 40
    # A mean of equal values can round one ulp past them: the interval is held to the values' range.
    return Stat(n, mean, max(means[tail], min(values)), min(means[BOOTSTRAP_RESAMPLES - 1 - tail], max(values)))


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


def color(method):
    """The method's colour, the same in every figure."""
    if method not in METHOD_COLORS:
        used = set(METHOD_COLORS.values())
        spare = [c for c in SPARE_COLORS if c not in used]
        METHOD_COLORS[method] = spare[0] if spare else "#999999"
    return METHOD_COLORS[method]


def read_manifest(directory):
    path = os.path.join(directory, "manifest.json")
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, json.JSONDecodeError) as e:
        fail(f"{path}: cannot read the sweep's manifest ({e})")


def provenance(directory, rows):
    """Where the numbers come from, said from the sweep's own manifest and rows: the spec's
    description, model, prompt set and counts, new tokens, backends and threads."""
    spec = read_manifest(directory).get("spec", {})
    prompts = spec.get("prompts", {})
    if isinstance(prompts, dict) and "set" in prompts:
        source = f"prompt set '{prompts['set']}'"
    elif isinstance(prompts, dict) and "file" in prompts:
        source = f"prompts of {os.path.basename(str(prompts['file']))}"
    else:
        source = "the spec's prompts"
    per_cat = {}
    for r in rows:
        per_cat.setdefault(r["category"], set()).add((r["prompt_set"], r["prompt_id"]))
    counts = ", ".join(f"{len(v)} {c}" for c, v in per_cat.items())
    tokens = sorted({r["generated_tokens"] for r in rows if "generated_tokens" in r})
    backends = sorted({r["backend"] for r in rows if "backend" in r})
    text = (f"`specdec sweep` results in {os.path.basename(os.path.normpath(directory))}"
            + (f" ({spec['description']})" if spec.get("description") else "")
            + f": model {spec.get('model', '?')}, {counts} prompts from {source}")
    if tokens:
        text += f", {'/'.join(map(str, tokens))} new tokens each" + (" (`--ignore-eos`)" if spec.get("ignore_eos") else "")
    if backends:
        text += f", the {'/'.join(backends)} backend"
    if spec.get("threads"):
        text += f", {spec['threads']} thread" + ("s" if spec["threads"] != 1 else "")
    return text


def interval_note(ns, what="prompts"):
    """The caption's sentence on n and the intervals, for points that are means over `ns` values each;
    warns on stderr below FEW_PROMPTS."""
    ns = sorted(n for n in set(ns) if n > 0)
    if not ns:
        return ""
    count = f"n = {ns[0]}" if len(ns) == 1 else f"n = {ns[0]}–{ns[-1]}"
    text = f"{count} {what} per point; bars and bands: {INTERVAL_MEANING}"
    if ns[0] < 2:
        text += "; none at n = 1"
    if ns[0] < FEW_PROMPTS:
        text += f"; below n = {FEW_PROMPTS} they cover less than 95%"
        print(f"{os.path.basename(sys.argv[0])}: warning: some points are means over {ns[0]} {what} "
              f"(fewer than {FEW_PROMPTS}): their intervals are {'missing or ' if ns[0] < 2 else ''}unreliable", file=sys.stderr)
    return text + "."


def band(ax, xs, stats, color):
    """The intervals of `stats` as a band (gaps where a point has none)."""
    lows = [s.low if s.has_interval else math.nan for s in stats]
    highs = [s.high if s.has_interval else math.nan for s in stats]
    ax.fill_between(xs, lows, highs, alpha=0.2, color=color, lw=0)


def integer_ticks(ax, values):
    """x ticks at exactly `values` (K, depth: never a fractional tick)."""
    values = sorted(set(values))
    ax.set_xticks(values)
    ax.set_xticklabels([str(v) for v in values])


def finish(fig, caption, handles=None, labels=None):
    """Lays the figure out with its legend beside the panels (never over data) and its caption
    under them. `handles`/`labels` default to every axis's, each label once."""
    if handles is None:
        handles, labels, seen = [], [], set()
        for ax in fig.axes:
            for h, lab in zip(*ax.get_legend_handles_labels()):
                if lab not in seen:
                    seen.add(lab)
                    handles.append(h)
                    labels.append(lab)
    fig.tight_layout()
    if handles:
        fig.legend(handles, labels, loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=7, frameon=False,
                   handlelength=2.5, handleheight=1.4)  # patches large enough to show their hatch
    if caption:
        # Wrapped here: matplotlib's own wrapping is not applied when a tight bounding box is computed.
        width_chars = max(60, int(fig.get_figwidth() * 72 / (7 * 0.52)))
        fig.text(0.02, -0.01, textwrap.fill(caption, width_chars, break_on_hyphens=False, break_long_words=False), ha="left", va="top", fontsize=7)
    fig.specdec_caption = caption  # read by tests/python/test_figures.py


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
