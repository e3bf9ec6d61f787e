"""generate(..., record_steps=True): every step in memory, as `specdec.record` writes it to a trace.

For each method the records equal the steps of a trace recorded from the same run (positions,
emitted tokens, draft tree, accepted path, bonus token, decisions, uniforms), add up to the
Generation's totals, and carry numpy arrays of the documented dtypes; step_logits=True adds the
target's logits (equal to the trace's full logits) and the draft distributions.

Run (ctest does this, label cpu;python):
  PYTHONPATH=build/python /usr/bin/python3 -m pytest tests/python/test_step_records.py
"""
import os

import h5py
import numpy as np
import pytest

import specdec

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
MODELS = os.path.join(ROOT, "models")
PROMPT = "And God said unto Moses,"

# (case name, generate keywords without the drafter, drafter directory or None)
CASES = [
    ("sequential-greedy", dict(method="sequential"), None),
    ("eagle3-chain-greedy", dict(k=4), "eagle3"),
    ("draft-chain-sample-seed7", dict(method="draft", k=3, sampling="sample", temperature=0.8, seed=7), "draft"),
    ("eagle-dynamic-sample-seed3", dict(method="eagle", tree="dynamic", depth=4, tree_top_k=4, total_tokens=10,
                                        sampling="sample", seed=3), "eagle1"),
    ("peagle-chain-coupled-seed5", dict(k=4, sampling="coupled", temperature=0.7, seed=5), "peagle"),
]


@pytest.fixture(scope="module")
def target():
    return specdec.load_model(os.path.join(MODELS, "target"))


def ragged(steps, name, s):
    o = steps[name + "_offsets"][()]
    return steps[name][()][o[s]:o[s + 1]]


@pytest.mark.parametrize("case,kw,drafter", CASES, ids=[c[0] for c in CASES])
def test_step_records_equal_the_recorded_trace(target, tmp_path, case, kw, drafter):
    d = specdec.load_drafter(os.path.join(MODELS, drafter), target) if drafter else None
    g = specdec.generate(target, PROMPT, drafter=d, max_new_tokens=24, record_steps=True, **kw)
    steps = g.step_records
    assert isinstance(steps, list) and len(steps) > 1, case
    # The records add up to the run.
    assert np.array_equal(np.concatenate([r["emitted_tokens"] for r in steps]), g.tokens), case
    assert sum(r["target_forwards"] for r in steps) == g.target_forwards, case
    assert sum(r["drafter_forwards"] for r in steps) == g.drafter_forwards, case
    assert sum(r["accepted_length"] for r in steps) == g.accepted_tokens, case
    assert sum(len(r["draft_tokens"]) for r in steps) == g.drafted_tokens, case
    assert steps[0]["kind"] == "prefill" and steps[0]["position"] == len(g.prompt_tokens), case
    assert {r["kind"] for r in steps[1:]} == {"sequential" if drafter is None else "speculative"}, case
    for r in steps:
        assert r["emitted_tokens"].dtype == np.int32 and r["draft_tokens"].dtype == np.int32, case
        assert r["draft_parents"].dtype == np.int32 and r["accepted_path"].dtype == np.int32, case
        assert r["accept_decisions"].dtype == np.uint8 and r["accept_uniforms"].dtype == np.float64, case
        assert "target_logits" not in r, case

    # The same run recorded to a trace: its steps are the records.
    out = str(tmp_path / "run.h5")
    rec_kw = dict(kw)
    summary = specdec.record(target, PROMPT, out=out, drafter=d, max_new_tokens=24, logits="full", **rec_kw)
    assert np.array_equal(summary["output_tokens"], g.tokens), case
    with h5py.File(out, "r") as f:
        t = f["steps"]
        assert len(t["positions"]) == len(steps), case
        for s, r in enumerate(steps):
            where = f"{case}, step {s}"
            assert t["positions"][s] == r["position"], where
            assert np.array_equal(ragged(t, "emitted_tokens", s), r["emitted_tokens"]), where
            if "draft_tokens" in t:
                assert np.array_equal(ragged(t, "draft_tokens", s), r["draft_tokens"]), where
                o = t["draft_tokens_offsets"][()]
                assert np.array_equal(t["draft_parents"][o[s]:o[s + 1]], r["draft_parents"]), where
                assert np.array_equal(ragged(t, "accepted_path", s), r["accepted_path"]), where
                assert t["bonus_token"][s] == r["bonus_token"], where
                assert np.array_equal(ragged(t, "accept_decisions", s), r["accept_decisions"]), where
            if "accept_uniforms" in t:
                assert np.array_equal(ragged(t, "accept_uniforms", s), r["accept_uniforms"]), where


def test_step_logits_are_the_targets(target):
    d = specdec.load_drafter(os.path.join(MODELS, "draft"), target, method="draft")
    kw = dict(method="draft", drafter=d, k=3, sampling="sample", temperature=0.8, seed=11, max_new_tokens=12)
    g = specdec.generate(target, PROMPT, record_steps=True, step_logits=True, **kw)
    V = target.vocab_size
    prompt = g.prompt_tokens
    first = g.step_records[0]
    assert first["target_logits"].shape == (1, V) and first["target_logits"].dtype == np.float32
    # The prefill's row is the last prompt position's logits, bit for bit.
    assert np.array_equal(first["target_logits"][0], target.forward(prompt)[-1]), "seed 11, prefill row"
    for r in g.step_records[1:]:
        N = len(r["draft_tokens"])
        assert r["target_logits"].shape == (N + 1, V), f"seed 11, step {r['index']}"
        q = r["draft_probs"]
        assert q.shape == (N + 1, V) and q.dtype == np.float64, f"seed 11, step {r['index']}"
        # A sampled draft's rows are distributions (the row after the last node drafted nothing).
        assert np.allclose(q[:N].sum(axis=1), 1.0), f"seed 11, step {r['index']}"
        assert np.isnan(q[N]).all(), f"seed 11, step {r['index']}"
    assert specdec.generate(target, PROMPT, **kw).step_records is None


def test_step_records_errors(target):
    with pytest.raises(specdec.Error, match="record_steps=True"):
        specdec.generate(target, PROMPT, step_logits=True, max_new_tokens=2)
