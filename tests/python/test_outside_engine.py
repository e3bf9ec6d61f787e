"""An outside engine (experiments/engine, PyTorch) validated against the reference.

The correct engine's candidate traces (EAGLE-1 chain and tree, P-EAGLE chain; greedy and sample)
must pass `specdec validate --candidate` and equal `specdec generate` token for token; each of
three deliberately bugged variants must fail, the report naming the step, the position and, for
the two bugs inside the target's forward, the first layer out of tolerance; two drafter bugs fail
naming the step, the drafter row and whether its inputs or its outputs departed. Its Philox uniforms
must be the reference's bit for bit.

Run: /usr/bin/python3 -m pytest tests/python/test_outside_engine.py  (SPECDEC_BIN=path/to/specdec
overrides build/specdec).
"""
import glob
import json
import os
import subprocess
import sys

import h5py
import numpy as np
import pytest

pytest.importorskip("torch")

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "experiments", "engine"))

import engine  # noqa: E402
import philox  # noqa: E402
import record  # noqa: E402

SPECDEC = os.environ.get("SPECDEC_BIN") or os.environ.get("SPECDEC") or os.path.join(ROOT, "build", "specdec")
MODEL = "models/target"
PROMPT = "And God said unto Moses, "
NEW_TOKENS = 20
TREE = [[0], [1], [0, 0], [0, 1], [1, 0], [0, 0, 0]]

EAGLE1 = dict(method="eagle", drafter="models/eagle1")
PEAGLE = dict(method="peagle", drafter="models/peagle")
CONFIGS = {
    "eagle1_chain_greedy": dict(EAGLE1, k=4),
    "eagle1_tree_greedy": dict(EAGLE1, tree=TREE),
    "peagle_chain_greedy": dict(PEAGLE, k=4),
    "eagle1_chain_sample": dict(EAGLE1, k=4, sampling="sample", seed=7),
    "peagle_chain_sample": dict(PEAGLE, k=4, sampling="sample", seed=7),
}
# bug -> (configuration, the step the report must name, the first bad layer or None)
BUGS = {
    "rope_layer3": (dict(EAGLE1, k=4), 0, 3),  # the prefill forward already goes wrong, from layer 3
    "tree_mask_off_by_one": (dict(EAGLE1, tree=TREE), 1, 0),  # the first verify forward, from layer 0
    "residual_rule": (dict(EAGLE1, k=4, sampling="sample", seed=7), None, None),  # the first differing residual draw
    "rejected_token": (dict(EAGLE1, k=4, sampling="sample", seed=7), None, None),  # the first rejection
}
# Drafter bugs: bug -> (configuration, what the report names, the step, the drafter row); the
# trace records the drafter's inputs and outputs, so the report says which of them departed.
DRAFTER_BUGS = {
    "drafter_no_fc_bias": (dict(EAGLE1, k=4), "drafter hidden", 1, 0),  # the first catch-up row's output
    "drafter_feature_lag": (dict(EAGLE1, k=4), "drafter inputs", 1, 1),  # row 1 is fed row 0's feature
}

pytestmark = pytest.mark.skipif(not os.path.exists(SPECDEC), reason="specdec is not built")


def encode(text):
    return [0] + [b + 3 for b in text.encode("utf-8")]


def has_candidate():
    r = subprocess.run([SPECDEC, "validate", "--help"], capture_output=True, text=True, cwd=ROOT)
    return "--candidate" in r.stdout


def make_engine(cfg, bug=None):
    s = engine.Sampling(cfg.get("sampling", "greedy"), 1.0, seed=cfg.get("seed", 0))
    return engine.Engine(MODEL, cfg["drafter"], cfg["method"], k=cfg.get("k", 4), tree=cfg.get("tree"), sampling=s, bug=bug)


def write(cfg, path, bug=None):
    cwd = os.getcwd()
    os.chdir(ROOT)  # model paths in the trace are relative to the repository root
    try:
        e = make_engine(cfg, bug)
        run = e.generate(encode(PROMPT), NEW_TOKENS)
        record.write_trace(path, e, run, record.reference_fingerprints(MODEL, cfg["method"], cfg["drafter"]))
    finally:
        os.chdir(cwd)
    return run


@pytest.fixture(scope="module")
def traces(tmp_path_factory):
    d = tmp_path_factory.mktemp("engine")
    out = {}
    for name, cfg in CONFIGS.items():
        out[name] = (str(d / f"{name}.h5"), write(cfg, str(d / f"{name}.h5")), cfg)
    for bug, (cfg, *_) in list(BUGS.items()) + list(DRAFTER_BUGS.items()):
        out[bug] = (str(d / f"{bug}.h5"), write(cfg, str(d / f"{bug}.h5"), bug), cfg)
    return out


def validate(path, cfg, force_drafts=False):
    """(exit code, JSON report, text report) of `specdec validate --candidate`: the reference runs
    live under the trace's recorded configuration and is the reference of the comparison."""
    if not has_candidate():
        pytest.skip("specdec validate has no --candidate")
    base = [SPECDEC, "validate", "--candidate", path, "--model", MODEL]
    base += ["--force-drafts"] if force_drafts else ["--drafter", cfg["drafter"]]
    j = subprocess.run(base + ["--json"], capture_output=True, text=True, cwd=ROOT)
    t = subprocess.run(base, capture_output=True, text=True, cwd=ROOT)
    assert j.returncode == t.returncode
    report = json.loads(j.stdout) if j.stdout.strip().startswith("{") else None
    return j.returncode, report, t.stdout + t.stderr


def test_traces_pass_trace_check(traces):
    """Every trace, correct or bugged, is a valid trace (`specdec trace check`)."""
    r = subprocess.run([SPECDEC, "trace", "check", "--help"], capture_output=True, text=True, cwd=ROOT)
    if r.returncode != 0:
        pytest.skip("specdec has no trace check")
    for name, (path, _, _) in traces.items():
        r = subprocess.run([SPECDEC, "trace", "check", path], capture_output=True, text=True, cwd=ROOT)
        assert r.returncode == 0, name + ": " + r.stdout + r.stderr


def test_philox_uniforms_equal_the_reference():
    files = sorted(glob.glob(os.path.join(ROOT, "traces", "golden", "*_sample.h5")))
    assert files
    checked = 0
    for path in files:
        with h5py.File(path, "r") as f:
            s = f["steps"]
            if "accept_uniforms" not in s:
                continue
            seed = int(f["meta"].attrs["seed"])
            u, c = s["accept_uniforms"][()], s["random_counters"][()]
            mine = np.array([philox.uniform(seed, *row) for row in c])
            assert np.array_equal(mine, u), path  # bit for bit
            checked += len(u)
    assert checked > 100


@pytest.mark.parametrize("name", list(CONFIGS))
def test_tokens_equal_specdec_generate(traces, name):
    _, run, cfg = traces[name]
    args = [SPECDEC, "generate", "--model", MODEL, "--method", cfg["method"], "--drafter", cfg["drafter"],
            "--prompt-ids", ",".join(map(str, encode(PROMPT))), "--max-new-tokens", str(NEW_TOKENS), "--json"]
    args += ["--tree", json.dumps(cfg["tree"])] if "tree" in cfg else ["--k", str(cfg["k"])]
    if cfg.get("sampling"):
        args += ["--sampling", cfg["sampling"], "--seed", str(cfg["seed"])]
    r = subprocess.run(args, capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["output_tokens"] == run["output"]


@pytest.mark.parametrize("name", list(CONFIGS))
def test_correct_engine_passes(traces, name):
    path, run, cfg = traces[name]
    rc, report, text = validate(path, cfg)
    assert rc == 0, text
    assert report["result"] == "pass"
    assert report["failure"] is None


@pytest.mark.parametrize("name", list(CONFIGS))
def test_correct_engine_passes_with_its_own_drafts(traces, name):
    """--force-drafts: the reference verifies the candidate's recorded drafts, no drafter needed."""
    path, run, cfg = traces[name]
    rc, report, text = validate(path, cfg, force_drafts=True)
    assert rc == 0, text
    assert report["result"] == "pass"


def layer_named(report, text, layer):
    f = report["failure"]
    for key in ("layer", "first_layer"):
        if key in f and f[key] is not None:
            return int(f[key]) == layer
    return f"layer {layer}" in text


@pytest.mark.parametrize("bug", list(BUGS))
def test_bugged_engine_fails_at_the_right_place(traces, bug):
    path, run, cfg = traces[bug]
    _, step, layer = BUGS[bug]
    rc, report, text = validate(path, cfg)
    assert rc == 1, text
    f = report["failure"]
    assert report["result"] == "fail" and f is not None, text
    # The step and position: where the bugged run first departs.
    if step is not None:
        assert f["step"] == step, text
    else:
        correct = write(cfg, path[:-3] + ".correct.h5")
        first = next(i for i, (a, b) in enumerate(zip(correct["output"], run["output"])) if a != b)
        with h5py.File(path, "r") as h:
            off = h["steps/emitted_tokens_offsets"][()]
        expected = int(np.searchsorted(off, first, side="right") - 1)
        assert f["step"] == expected, text
        assert f["position"] == len(encode(PROMPT)) + first, text
    assert isinstance(f["position"], int) and f["position"] >= len(encode(PROMPT)), text
    if layer is not None:
        assert layer_named(report, text, layer), text
        if "substep" in f:
            assert f["substep"] == "attention", text  # both bugs live in the attention block


def test_emitting_the_rejected_draft_is_named_as_such(traces):
    """An engine that emits the draft it has just rejected is told so: that token has zero residual
    mass, and the report says what the rule did, not only that a token differs."""
    path, _, cfg = traces["rejected_token"]
    rc, report, text = validate(path, cfg)
    assert rc == 1, text
    detail = report["failure"]["detail"]
    assert "the draft it had just rejected there, which has zero residual mass" in detail, text
    assert "its rule for the token after a rejection is wrong" in detail, text


def test_the_report_says_which_decisions_it_covered(traces):
    """The passing run's report counts the acceptance tests, rejections, residual draws and bonus
    tokens it compared, and they add up."""
    path, run, cfg = traces["eagle1_chain_sample"]
    rc, report, text = validate(path, cfg)
    assert rc == 0, text
    c = report["coverage"]
    assert c["acceptance_tests"] == c["accepted"] + c["rejected"] > 0, c
    assert 0 < c["after_rejection"] + c["bonus"] <= report["steps_compared"], c  # one per drafting step
    assert c["rejected"] >= c["after_rejection"] > 0, c
    assert f"{c['after_rejection']} residual draws" in text, text
    assert c["untested"] == [] or "untested: " in text, text


@pytest.mark.parametrize("bug", list(DRAFTER_BUGS))
def test_drafter_bug_is_named_with_its_row(traces, bug):
    """A drafter bug fails at the step and drafter row where it first shows, naming what departed:
    the outputs (inputs agreeing) or the inputs."""
    path, run, cfg = traces[bug]
    _, what, step, row = DRAFTER_BUGS[bug]
    rc, report, text = validate(path, cfg)
    assert rc == 1, text
    f = report["failure"]
    assert f["what"] == what, text
    assert f["step"] == step and f["row"] == row and f["drafter_call"] == 0, text
    assert f["position"] == row, text  # catch-up row i is the pair (f_i, t_{i+1}) at position i
    assert f"drafter row {row} (drafter forward 0 of the step)" in text, text
    assert f["layer"] is None, text  # not a target layer: the drafter's row names the place
    # Forcing the engine's drafts checks its target and acceptance alone: they are correct.
    rc, report, text = validate(path, cfg, force_drafts=True)
    assert rc == 0, text
