"""Drafter.propose with Model.forward: a speculative decoding step written in Python.

A greedy speculative loop built from the pieces -- the drafter's proposal given the target's
hidden states, one target forward over [pending, drafts] on the KV cache, greedy acceptance,
cache rollback -- emits exactly what specdec.generate emits for the same method (EAGLE-1, EAGLE-3,
P-EAGLE, a draft LM) and the proposals are the drafts the built-in run verified. Bad arguments
raise specdec.Error naming what was wrong.

Run (ctest does this, label cpu;python):
  PYTHONPATH=build/python /usr/bin/python3 -m pytest tests/python/test_propose.py
"""
import os

import numpy as np
import pytest

import specdec

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
MODELS = os.path.join(ROOT, "models")
PROMPT = "And God said unto Moses,"


@pytest.fixture(scope="module")
def target():
    return specdec.load_model(os.path.join(MODELS, "target"))


def python_greedy_loop(target, drafter, k, max_new):
    """Speculative greedy decoding from Model.forward and Drafter.propose; returns tokens and proposals."""
    prompt = list(target.tokenizer.encode(PROMPT))
    cache = target.new_cache(len(prompt) + max_new + k + 1)
    logits, hidden = target.forward(prompt, cache=cache, hidden_states=True)
    states = hidden                                  # (L+1, committed, H): the target's states for seq[:-1]
    seq = prompt + [int(np.argmax(logits[-1]))]
    out, proposals = [seq[-1]], []
    while len(out) < max_new:
        d = drafter.propose(seq, states, k=k)
        proposals.append(d["tokens"].tolist())
        drafts = d["tokens"].tolist()
        assert d["parents"].tolist() == list(range(-1, len(drafts) - 1))
        base = len(seq) - 1                          # the pending token's slot
        logits, hidden = target.forward([seq[-1]] + drafts, cache=cache, hidden_states=True)
        n = 0
        while n < len(drafts) and drafts[n] == int(np.argmax(logits[n])):
            n += 1
        emitted = drafts[:n] + [int(np.argmax(logits[n]))]
        cache.truncate(base + 1 + n)                 # keep the pending token and the accepted drafts
        states = np.concatenate([states, hidden[:, :1 + n]], axis=1)
        for t in emitted:
            if len(out) < max_new:
                out.append(t)
        seq += emitted
    return out, proposals


@pytest.mark.parametrize("drafter,method", [("eagle1", None), ("eagle3", None), ("peagle", None), ("draft", "draft")])
def test_a_python_speculative_loop_equals_generate(target, drafter, method):
    d = specdec.load_drafter(os.path.join(MODELS, drafter), target, method=method)
    tokens, proposals = python_greedy_loop(target, d, k=4, max_new=24)
    g = specdec.generate(target, PROMPT, drafter=d, k=4, max_new_tokens=24, ignore_eos=True, record_steps=True)
    assert tokens == g.tokens.tolist(), drafter
    built_in = [r["draft_tokens"].tolist() for r in g.step_records if r["kind"] == "speculative"]
    assert proposals[:len(built_in)] == built_in, drafter


def test_sampled_proposals_carry_their_distributions(target):
    d = specdec.load_drafter(os.path.join(MODELS, "draft"), target, method="draft")
    seq = list(target.tokenizer.encode(PROMPT)) + [35]
    p = d.propose(seq, k=3, sampling="sample", temperature=0.8, seed=4)
    V = target.vocab_size
    assert p["draft_probs"].shape == (4, V) and p["draft_probs"].dtype == np.float64, "seed 4"
    assert np.allclose(p["draft_probs"][:3].sum(axis=1), 1.0), "seed 4"
    assert p["drafter_forwards"] >= 3
    again = d.propose(seq, k=3, sampling="sample", temperature=0.8, seed=4)
    assert np.array_equal(p["tokens"], again["tokens"]), "seed 4: the same call, the same draft"
    assert d.propose(seq, k=3)["draft_probs"] is None  # greedy drafts are deterministic


def test_propose_errors(target):
    e = specdec.load_drafter(os.path.join(MODELS, "eagle3"), target)
    prompt = list(target.tokenizer.encode(PROMPT))
    _, hidden = target.forward(prompt, hidden_states=True)
    seq = prompt + [35]
    with pytest.raises(specdec.Error, match="reads the target's hidden states"):
        e.propose(seq)
    with pytest.raises(specdec.Error, match="hidden must be float32"):
        e.propose(seq, hidden.astype(np.float64))
    with pytest.raises(specdec.Error, match=r"hidden has shape .*expected \(9, T >= 25, 192\)"):
        e.propose(seq, hidden[:, :3])
    with pytest.raises(specdec.Error, match="at least 2 ids"):
        e.propose([1], hidden)
    with pytest.raises(specdec.Error, match=r"sequence\[1\] = 999 is outside the vocabulary"):
        e.propose([1, 999], hidden)
    with pytest.raises(specdec.Error):
        e.propose(seq, hidden, k=0)
