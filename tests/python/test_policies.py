"""Speculation policies and drafter fallback in the Python module (python/, docs/python.md).

specdec.generate(policy=...) drafts to the depths the policy chooses and emits exactly what
sequential decoding emits; the Generation carries mean_draft_depth, draft_depth_per_step, the
policy and the (empty) fallbacks; a bad policy raises specdec.Error naming it; generate_batch
applies the policy to every request; record(policy=...) writes it into the trace's run config.

Run (ctest does this, label cpu):
  PYTHONPATH=build/python /usr/bin/python3 -m pytest tests/python/test_policies.py
"""
import json
import os

import h5py
import numpy as np
import pytest

import specdec

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
MODELS = os.path.join(ROOT, "models")
TARGET = os.path.join(MODELS, "target")
PROMPT = [1, 5, 9, 14]


@pytest.fixture(scope="module")
def target():
    return specdec.load_model(TARGET)


@pytest.fixture(scope="module")
def draft(target):
    return specdec.load_drafter(os.path.join(MODELS, "draft"), target)


def test_generate_under_a_policy(target, draft):
    plain = specdec.generate(target, PROMPT, max_new_tokens=20, ignore_eos=True)
    fixed = specdec.generate(target, PROMPT, drafter=draft, k=4, max_new_tokens=20, ignore_eos=True)
    g = specdec.generate(target, PROMPT, drafter=draft, k=4, max_new_tokens=20, ignore_eos=True,
                         policy="schedule,depths=2/0")
    assert np.array_equal(g.tokens, plain.tokens) and np.array_equal(g.tokens, fixed.tokens)
    assert g.policy == {"policy": "schedule", "depths": [2, 0]}
    assert fixed.policy == {"policy": "fixed"}
    assert fixed.mean_draft_depth == 4.0
    h = g.draft_depth_per_step
    assert len(h) == 3 and h[0] > 0 and h[1] == 0 and h[2] > 0
    assert g.mean_draft_depth == pytest.approx(2.0 * h[2] / (h[0] + h[2]))
    assert g.stats["mean_draft_depth"] == g.mean_draft_depth
    assert g.stats["draft_depth_per_step"] == h.tolist()
    assert g.fallbacks == []
    assert g.drafted_tokens == 2 * h[2]


def test_policy_errors(target, draft):
    with pytest.raises(specdec.Error, match="did you mean hf-heuristic"):
        specdec.generate(target, PROMPT, drafter=draft, policy="hf-heuristc")
    with pytest.raises(specdec.Error, match="policy"):
        specdec.generate(target, PROMPT, drafter=draft, policy="hf-heuristic,start=-1")
    with pytest.raises(specdec.Error, match="draft-budget-ms"):
        specdec.generate(target, PROMPT, drafter=draft, draft_budget_ms=-1.0)


def test_generate_batch_applies_the_policy(target, draft):
    out = specdec.generate_batch(target, [PROMPT, PROMPT[:2]], drafter=draft, k=4, concurrency=2, max_new_tokens=12,
                                 ignore_eos=True, policy="schedule,depths=2/0")
    s = out["summary"]
    assert s["policy"] == {"policy": "schedule", "depths": [2, 0]}
    assert 0 < s["mean_draft_depth"] < 2
    for r in out["requests"]:
        assert 0 < r["mean_draft_depth"] < 2
        assert r["fallbacks"] == []
    alone = specdec.generate(target, PROMPT, max_new_tokens=12, ignore_eos=True)
    assert np.array_equal(out["requests"][0]["output_tokens"], alone.tokens)


def test_record_writes_the_policy(target, draft, tmp_path):
    path = tmp_path / "policy.h5"
    r = specdec.record(target, PROMPT, out=path, drafter=draft, k=4, max_new_tokens=12, ignore_eos=True,
                       policy="schedule,depths=2/0")
    assert r["fallbacks"] == []
    with h5py.File(path, "r") as f:
        config = json.loads(f["meta/config_json"][()])
    assert config["policy"] == {"policy": "schedule", "depths": [2, 0]}
    report = specdec.validate(target, trace=path)
    assert report["passed"], report
