"""The sweep figures and tables (analysis/) on a real `specdec sweep` of the bundled models: their
intervals equal summary.json's bit for bit, none is drawn at n = 1 and none leaves the quantity's
bounds, every figure states n and what its bands mean, one colour per method in every figure,
legends and y-labels off the data and the other panels, bar groups on their ticks, integer K ticks,
and provenance read from the sweep's own manifest.

The figures are taken from the scripts' own main() (sweep_results.save is replaced by a function
that keeps the figure), so what is checked is what the scripts would write."""
import copy
import io
import json
import os
import runpy
import shutil
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
ANALYSIS = os.path.join(ROOT, "analysis")
sys.path.insert(0, ANALYSIS)
import sweep_results as sr  # noqa: E402

SPEC = {
    "description": "figure checks",
    "model": os.path.join(ROOT, "models", "target"),
    "prompts": {"set": "heldout", "per_category": 2},
    "max_new_tokens": 10,
    "ignore_eos": True,
    "threads": 1,
    "grid": [
        {"method": "sequential"},
        {"method": ["eagle", "eagle3"], "k": [1, 2, 3]},
        {"method": ["eagle"], "tree": "dynamic", "depth": 3, "tree_top_k": 4, "total_tokens": 10},
        {"sampling": "sample", "temperature": [0.5, 1], "seed": "prompt", "method": ["eagle", "eagle3"], "k": [2]},
    ],
}
FIGURES = ["plot_al_vs_k", "plot_acceptance_by_depth", "plot_tree_shapes", "plot_temperature"]


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    """A real sweep: 2 prose and 2 code prompts, sequential, EAGLE-1/3 chains K 1..3, a dynamic tree, sampled rows."""
    binary = os.environ.get("SPECDEC_BIN")
    assert binary and os.path.exists(binary), "SPECDEC_BIN must name the specdec binary"
    d = tmp_path_factory.mktemp("figures")
    (d / "spec.json").write_text(json.dumps(SPEC))
    run = subprocess.run([binary, "sweep", str(d / "spec.json"), "--out", str(d / "out")], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert "fewer than 5 prompts" in run.stdout + run.stderr, "the sweep warns about its small n"
    return d / "out"


def derived(sweep, tmp_path, name, change):
    """A copy of the sweep's results with `change(rows)` applied to its rows (the manifest kept)."""
    out = tmp_path / name
    shutil.copytree(sweep, out)
    rows = [json.loads(line) for line in open(out / "rows.jsonl")]
    rows = change(rows)
    (out / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return out


def figure(script, results, *extra):
    """(figure, stdout, stderr) of analysis/SCRIPT.py RESULTS --out x."""
    sr.pyplot().close("all")  # the previous test's figures
    kept = {}
    saved = sr.save
    sr.save = lambda fig, stem: kept.setdefault("fig", fig)
    argv = sys.argv
    sys.argv = [f"{script}.py", str(results), "--out", "unused", *extra]
    out, err = io.StringIO(), io.StringIO()
    try:
        with redirect_stdout(out), redirect_stderr(err):
            runpy.run_path(os.path.join(ANALYSIS, f"{script}.py"), run_name="__main__")
    finally:
        sr.save = saved
        sys.argv = argv
    fig = kept["fig"]
    fig.canvas.draw()
    return fig, out.getvalue(), err.getvalue()


def band_values(ax):
    """Every finite y of the filled bands (fill_between) and error bars of an axis."""
    from matplotlib.collections import LineCollection, PolyCollection
    ys = []
    for c in ax.collections:
        if isinstance(c, (PolyCollection, LineCollection)):
            for path in c.get_paths():
                ys += [y for _, y in path.vertices if y == y]
    return ys


def overlaps(a, b):
    return a.x0 < b.x1 - 0.5 and b.x0 < a.x1 - 0.5 and a.y0 < b.y1 - 0.5 and b.y0 < a.y1 - 0.5


def test_intervals_equal_the_summarys_bit_for_bit(sweep):
    """sweep_results.mean_ci and experiments/sweep/cell_summary.cpp: the same bootstrap, the same numbers."""
    summary = json.load(open(sweep / "summary.json"))
    rows = sr.load_rows(str(sweep), policies=True)
    checked = 0
    for g in summary["groups"]:
        members = [r for r in rows if r["cell"] == g["cell"] and g["category"] in ("all", r["category"])]
        for metric, get in [("acceptance_length", lambda r: r["acceptance_length"]),
                            ("tokens_per_s", lambda r: r["timing"]["tokens_per_s"])]:
            s = sr.mean_ci([get(r) for r in members])
            j = g[metric]
            assert s.n == j["n"], (g["label"], g["category"], metric)
            assert s.mean == j["mean"], (g["label"], g["category"], metric)
            if j["ci95"] is None:
                assert not s.has_interval and s.n < 2, (g["label"], g["category"], metric)
            else:
                assert [s.low, s.high] == j["ci95"], (g["label"], g["category"], metric, [s.low, s.high], j["ci95"])
                checked += 1
    assert checked > 20


def test_no_interval_and_a_warning_at_one_prompt(sweep, tmp_path):
    one = derived(sweep, tmp_path, "one", lambda rows: [r for r in rows if r["prompt_id"].endswith("-0")])
    fig, _, err = figure("plot_al_vs_k", one)
    for ax in fig.axes:
        assert band_values(ax) == [], f"{ax.get_title()}: a band drawn from one prompt"
    assert "n = 1 prompts per point" in fig.specdec_caption and "none at n = 1" in fig.specdec_caption, fig.specdec_caption
    assert "warning" in err and "over 1 prompts" in err, err


def test_intervals_stay_inside_the_quantitys_bounds(sweep, tmp_path):
    """Two prompts with AL 1 and 8 (Student's t would draw -1.45 .. 8.5 from a smaller spread)."""
    def spread(rows):
        for r in rows:
            if r["method"] != "sequential":
                r["acceptance_length"] = 1.0 if r["prompt_id"].endswith("-0") else 8.0
                r["timing"]["tokens_per_s"] = 5.0 if r["prompt_id"].endswith("-0") else 900.0
        return rows
    wide = derived(sweep, tmp_path, "wide", spread)
    for script, floor in [("plot_al_vs_k", 1.0), ("plot_temperature", 1.0), ("plot_tree_shapes", 0.0)]:
        fig, _, _ = figure(script, wide)
        for ax in fig.axes:
            lo, hi = ax.get_ylim()
            assert lo >= floor - 1e-9, f"{script}: {ax.get_ylabel()} axis starts at {lo}"
            ys = band_values(ax)
            assert all(floor - 1e-9 <= y <= 900.0 + 1e-9 for y in ys), f"{script}: interval outside the data: {min(ys)}..{max(ys)}"


@pytest.mark.parametrize("script", FIGURES)
def test_every_figure_states_n_the_band_and_its_source(sweep, script):
    fig, _, err = figure(script, sweep)
    caption = fig.specdec_caption
    assert "n = " in caption, f"{script}: {caption}"
    assert "figure checks" in caption and "prompt set 'heldout'" in caption, f"{script}: provenance from the manifest: {caption}"
    if script != "plot_acceptance_by_depth":  # a pooled ratio has no interval; its caption says so
        assert sr.INTERVAL_MEANING in caption and "cover less than 95%" in caption, f"{script}: {caption}"
        assert "warning" in err, f"{script}: n < 5 is warned about: {err}"
    else:
        assert "no interval" in caption, caption
    texts = [t.get_text() for t in fig.texts]
    assert any(t.replace("\n", " ") == caption for t in texts), f"{script}: the caption is drawn"


@pytest.mark.parametrize("script", FIGURES)
def test_legends_and_labels_stay_off_the_data(sweep, script):
    fig, _, _ = figure(script, sweep)
    r = fig.canvas.get_renderer()
    panels = [ax for ax in fig.axes]
    for legend in fig.legends + [ax.get_legend() for ax in panels if ax.get_legend()]:
        box = legend.get_window_extent(r)
        for ax in panels:
            assert not overlaps(box, ax.get_window_extent(r)), f"{script}: the legend covers panel '{ax.get_title()}'"
    for ax in panels:
        if not ax.get_ylabel():
            continue
        label = ax.yaxis.label.get_window_extent(r)
        for other in panels:
            if other is not ax:
                assert not overlaps(label, other.get_tightbbox(r)), f"{script}: y-label '{ax.get_ylabel()}' runs into another panel"


def test_bar_groups_sit_on_their_ticks(sweep, tmp_path):
    # Drop EAGLE-3's K=3 rows so that methods have different numbers of shapes.
    fewer = derived(sweep, tmp_path, "fewer", lambda rows: [r for r in rows if not (r["method"] == "eagle3" and r.get("k") == 3)])
    fig, _, _ = figure("plot_tree_shapes", fewer)
    for ax in fig.axes:
        ticks = list(ax.get_xticks())
        by_color = {}
        for patch in ax.patches:
            by_color.setdefault(tuple(round(c, 4) for c in patch.get_facecolor()), []).append(patch.get_x() + patch.get_width() / 2)
        assert len(by_color) == len(ticks), f"{ax.get_ylabel()}: one colour per method"
        for centres in by_color.values():
            mid = sum(centres) / len(centres)
            assert min(abs(mid - t) for t in ticks) < 1e-9, f"{ax.get_ylabel()}: a group centred at {mid}, ticks {ticks}"


@pytest.mark.parametrize("script", ["plot_al_vs_k", "plot_acceptance_by_depth"])
def test_k_axes_get_integer_ticks_even_with_one_k(sweep, tmp_path, script):
    one_k = derived(sweep, tmp_path, f"onek-{script}", lambda rows: [r for r in rows if r.get("k") in (None, 2) or r["method"] == "sequential"])
    for results in (sweep, one_k):
        fig, _, _ = figure(script, results)
        for ax in fig.axes:
            labels = [t.get_text() for t in ax.get_xticklabels()]
            assert labels and all(t.lstrip("−-").isdigit() for t in labels), f"{script} on {results.name}: ticks {labels}"
            assert all(float(x).is_integer() for x in ax.get_xticks()), f"{script}: {list(ax.get_xticks())}"


def test_one_colour_per_method_in_every_figure(sweep):
    from matplotlib.colors import to_hex
    seen = {}
    for script in ["plot_al_vs_k", "plot_acceptance_by_depth", "plot_temperature"]:
        fig, _, _ = figure(script, sweep)
        for ax in fig.axes:
            for line in ax.get_lines():
                label = line.get_label()
                method = next((m for m, name in sr.METHOD_NAMES.items() if label.startswith(name + " ") or label == name), None)
                if method:
                    seen.setdefault(method, set()).add(to_hex(line.get_color()))
    fig, _, _ = figure("plot_tree_shapes", sweep)
    for ax in fig.axes:
        colors = {to_hex(p.get_facecolor()) for p in ax.patches}
        assert colors <= {sr.METHOD_COLORS[m].lower() for m in ("eagle", "eagle3")}, colors
    assert set(seen) >= {"eagle", "eagle3"}, seen
    for method, colors in seen.items():
        assert colors == {sr.METHOD_COLORS[method].lower()}, f"{method}: drawn in {colors}"


def test_table_provenance_comes_from_the_sweeps_own_spec(sweep, tmp_path):
    other = tmp_path / "renamed-sweep"
    shutil.copytree(sweep, other)
    manifest = json.load(open(other / "manifest.json"))
    manifest2 = copy.deepcopy(manifest)
    manifest2["spec"]["description"] = "a different study"
    (other / "manifest.json").write_text(json.dumps(manifest2))
    for results, description in [(sweep, "figure checks"), (other, "a different study")]:
        text = subprocess.run([sys.executable, os.path.join(ANALYSIS, "sweep_table.py"), str(results)],
                              capture_output=True, text=True, check=True).stdout
        first = text.splitlines()[0]
        assert description in first and results.name in first, first
        assert "2 prose, 2 code prompts from prompt set 'heldout'" in first, first
        assert "acceptance.json" not in first and "acceptance_table.sh" not in first, first
        assert "10 new tokens each" in first, first


@pytest.mark.parametrize("script", FIGURES)
def test_every_line_lies_inside_its_axes(sweep, script):
    """A limit fixed before the last artist stops autoscaling: a reference line above it vanishes."""
    fig, _, _ = figure(script, sweep)
    for ax in fig.axes:
        lo, hi = ax.get_ylim()
        for line in ax.get_lines():
            ys = [y for y in line.get_ydata() if y == y]
            assert all(lo - 1e-9 <= y <= hi + 1e-9 for y in ys), f"{script}: '{line.get_label()}' at {ys} outside {lo}..{hi}"
