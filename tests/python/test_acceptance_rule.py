"""generate(..., acceptance=rule): a Python acceptance rule in place of the built-in one.

Python reimplementations of the reference's rules (reference/acceptance/acceptor.cpp) -- matching
the target's choice (greedy, coupled) and lossless rejection sampling, for chains and for trees
(multi-candidate recursive rejection) -- passed as the rule give bitwise the built-in run: the
same tokens, the same accepted paths and bonus tokens, the same uniforms drawn. A rule of our own
changes the output; malformed rules and return values raise specdec.Error naming what was wrong.

Run (ctest does this, label cpu;python):
  PYTHONPATH=build/python /usr/bin/python3 -m pytest tests/python/test_acceptance_rule.py
"""
import os

import numpy as np
import pytest

import specdec

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
MODELS = os.path.join(ROOT, "models")
PROMPT = "And God said unto Moses,"


# ---- the reference's rules, written again in Python ------------------------------------------------

def sequential_sum(v):
    """The C++ loop's sum: left to right in double (numpy's sum adds pairwise, which rounds otherwise)."""
    return float(np.cumsum(v)[-1])


def normalise(v):
    s = sequential_sum(v)
    return v / s if s > 0 else v


def sample_from(p, u):
    """Inverse CDF in index order (reference/sampling/sampler.cpp sample_from)."""
    cumulative = np.cumsum(p)
    hit = np.nonzero((p > 0) & (u < cumulative))[0]
    return int(hit[0]) if len(hit) else int(np.nonzero(p > 0)[0][-1])


def tree_of(parents):
    children = {-1: []}
    depth = {-1: 0}
    for n, parent in enumerate(parents):
        children.setdefault(n, [])
        children[int(parent)].append(n)
        depth[n] = depth[int(parent)] + 1
    return children, depth


def match_rule(tokens, draft_probs, target_probs, ctx):
    """Greedy and coupled: accept a child iff it is the target's own choice at its parent."""
    children, _ = tree_of(ctx.parents)
    greedy = ctx.sampling["mode"] == "greedy"
    point, path = -1, []
    while True:
        row = point + 1
        choice = int(np.argmax(target_probs[row])) if greedy else ctx.target_choice(row)
        nxt = next((c for c in children[point] if tokens[c] == choice), None)
        if nxt is None:
            return path, choice
        path.append(nxt)
        point = nxt


def rejection_rule(tokens, draft_probs, target_probs, ctx):
    """Lossless speculative sampling; several children of a point are tried in turn (SpecInfer)."""
    children, depth = tree_of(ctx.parents)
    point, path = -1, []
    while True:
        d = depth[point]
        p = target_probs[point + 1].copy()
        q = None if draft_probs is None else draft_probs[point + 1].copy()
        kids = children[point]
        if not kids:  # every draft on the path accepted: the bonus token from p
            return path, sample_from(p, ctx.uniform(d, "sample"))
        nxt = None
        for j, c in enumerate(kids):
            x = tokens[c]
            ratio = p[x] if q is None else (p[x] / q[x] if q[x] > 0 else 1.0)
            if ctx.uniform(d, "accept", j) < ratio:
                nxt = c
                break
            if q is None:
                p[x] = 0.0
            else:
                residual = np.maximum(0.0, p - q)
                if sequential_sum(residual) > 0:
                    p = residual
                q[x] = 0.0
                q = normalise(q)
            p = normalise(p)
        if nxt is None:
            return path, sample_from(p, ctx.uniform(d, "residual"))
        path.append(nxt)
        point = nxt


def standard_rule(tokens, draft_probs, target_probs, ctx):
    if ctx.sampling["mode"] == "sample":
        return rejection_rule(tokens, draft_probs, target_probs, ctx)
    return match_rule(tokens, draft_probs, target_probs, ctx)


# ---- against the built-in rule -------------------------------------------------------------------------

# (case name, drafter directory, generate keywords)
CASES = [
    ("draft-chain-greedy", "draft", dict(method="draft", k=4)),
    ("draft-chain-sample-seed7", "draft", dict(method="draft", k=3, sampling="sample", temperature=0.8, seed=7)),
    ("draft-chain-sample-topk-seed2", "draft", dict(method="draft", k=5, sampling="sample", temperature=1.0, top_k=20,
                                                    top_p=0.9, seed=2)),
    ("eagle3-chain-sample-seed5", "eagle3", dict(k=4, sampling="sample", temperature=0.9, seed=5)),
    ("eagle3-chain-coupled-seed4", "eagle3", dict(k=4, sampling="coupled", temperature=0.8, seed=4)),
    ("eagle-dynamic-greedy", "eagle1", dict(method="eagle", tree="dynamic", depth=4, tree_top_k=4, total_tokens=12)),
    ("eagle-dynamic-sample-seed3", "eagle1", dict(method="eagle", tree="dynamic", depth=4, tree_top_k=4,
                                                  total_tokens=12, sampling="sample", seed=3)),
    ("peagle-chain-sample-seed9", "peagle", dict(k=4, sampling="sample", temperature=0.7, seed=9)),
]


@pytest.fixture(scope="module")
def target():
    return specdec.load_model(os.path.join(MODELS, "target"))


@pytest.mark.parametrize("case,drafter,kw", CASES, ids=[c[0] for c in CASES])
def test_python_standard_rule_equals_the_builtin(target, case, drafter, kw):
    d = specdec.load_drafter(os.path.join(MODELS, drafter), target)
    builtin = specdec.generate(target, PROMPT, drafter=d, max_new_tokens=32, record_steps=True, **kw)
    python = specdec.generate(target, PROMPT, drafter=d, max_new_tokens=32, record_steps=True,
                              acceptance=standard_rule, **kw)
    assert np.array_equal(python.tokens, builtin.tokens), f"{case}: tokens differ"
    assert python.stats == builtin.stats, case
    assert len(python.step_records) == len(builtin.step_records), case
    for a, b in zip(python.step_records, builtin.step_records):
        where = f"{case}, step {a['index']}"
        for field in ("draft_tokens", "draft_parents", "accepted_path", "emitted_tokens"):
            assert np.array_equal(a[field], b[field]), f"{where}: {field}"
        assert a["bonus_token"] == b["bonus_token"], where
        # The same uniforms, bit for bit, in the same order.
        assert np.array_equal(a["accept_uniforms"], b["accept_uniforms"]), where
        if all(p == i - 1 for i, p in enumerate(a["draft_parents"])):  # a chain's decisions are exact
            assert np.array_equal(a["accept_decisions"], b["accept_decisions"]), where


def test_an_accepted_length_serves_a_chain(target):
    d = specdec.load_drafter(os.path.join(MODELS, "eagle3"), target)

    def by_length(tokens, draft_probs, target_probs, ctx):
        path, nxt = match_rule(tokens, draft_probs, target_probs, ctx)
        return len(path), nxt

    a = specdec.generate(target, PROMPT, drafter=d, k=4, max_new_tokens=24, acceptance=by_length)
    b = specdec.generate(target, PROMPT, drafter=d, k=4, max_new_tokens=24)
    assert np.array_equal(a.tokens, b.tokens)


def test_the_rule_sees_the_documented_arrays(target):
    d = specdec.load_drafter(os.path.join(MODELS, "draft"), target, method="draft")
    V = target.vocab_size
    seen = []

    def checking(tokens, draft_probs, target_probs, ctx):
        N = len(tokens)
        assert tokens.dtype == np.int32 and tokens.shape == (N,)
        assert draft_probs.dtype == np.float64 and draft_probs.shape == (N + 1, V)
        assert target_probs.dtype == np.float64 and target_probs.shape == (N + 1, V)
        assert ctx.target_logits.dtype == np.float32 and ctx.target_logits.shape == (N + 1, V)
        assert ctx.parents.dtype == np.int32 and list(ctx.parents) == list(range(-1, N - 1))
        assert np.allclose(target_probs.sum(axis=1), 1.0)
        seen.append(ctx.root_position)
        return rejection_rule(tokens, draft_probs, target_probs, ctx)

    g = specdec.generate(target, PROMPT, method="draft", drafter=d, k=3, sampling="sample", seed=1, max_new_tokens=12,
                         acceptance=checking)
    assert len(seen) == g.steps and seen[0] == len(g.prompt_tokens) + 1


def test_a_rule_of_our_own_changes_the_output(target):
    # Accept every draft and emit the target's argmax after it: lossy, and visibly so.
    d = specdec.load_drafter(os.path.join(MODELS, "draft"), target, method="draft")

    def accept_all(tokens, draft_probs, target_probs, ctx):
        return len(tokens), int(np.argmax(target_probs[len(tokens)]))

    g = specdec.generate(target, PROMPT, method="draft", drafter=d, k=4, max_new_tokens=32, ignore_eos=True,
                         acceptance=accept_all)
    builtin = specdec.generate(target, PROMPT, method="draft", drafter=d, k=4, max_new_tokens=32, ignore_eos=True)
    assert g.accepted_tokens == g.drafted_tokens > builtin.accepted_tokens
    assert not np.array_equal(g.tokens, builtin.tokens)


# ---- errors ---------------------------------------------------------------------------------------------

def test_rule_errors(target):
    eagle = specdec.load_drafter(os.path.join(MODELS, "eagle1"), target)
    draft = specdec.load_drafter(os.path.join(MODELS, "draft"), target, method="draft")

    def run(rule, drafter=draft, **kw):
        return specdec.generate(target, PROMPT, drafter=drafter, max_new_tokens=8, acceptance=rule, **kw)

    with pytest.raises(specdec.Error, match="acceptance must be a callable"):
        run(42)
    with pytest.raises(specdec.Error, match="method sequential drafts nothing"):
        specdec.generate(target, PROMPT, method="sequential", acceptance=standard_rule)
    with pytest.raises(specdec.Error, match=r"expected a pair \(accepted, next_token\)"):
        run(lambda *a: 3)
    with pytest.raises(specdec.Error, match=r"accepted = 9 is outside \[0, 4\]"):
        run(lambda t, q, p, c: (9, 1), k=4)
    with pytest.raises(specdec.Error, match=r"next_token 259 is outside the vocabulary \[0, 259\)"):
        run(lambda t, q, p, c: (0, 259))
    with pytest.raises(specdec.Error, match="accepted must be an integer, got float"):
        run(lambda t, q, p, c: (1.0, 1))
    with pytest.raises(specdec.Error, match="next_token must be an integer"):
        run(lambda t, q, p, c: (0, "a"))
    with pytest.raises(specdec.Error, match="node 2 .* is not a child of the root"):
        run(lambda t, q, p, c: ([2], 1))
    with pytest.raises(specdec.Error, match="unknown purpose 'bonus'"):
        run(lambda t, q, p, c: (0, int(c.uniform(0, "bonus"))))
    with pytest.raises(specdec.Error, match=r"depth 7 is outside \[0, 4\]"):
        run(lambda t, q, p, c: (0, int(c.uniform(7, "accept"))), k=4)
    tree = dict(method="eagle", tree="dynamic", depth=3, tree_top_k=3, total_tokens=8)
    with pytest.raises(specdec.Error, match="the draft is a tree"):
        run(lambda t, q, p, c: (1, 1), drafter=eagle, **tree)

    def raising(*a):
        raise ValueError("my rule failed")

    with pytest.raises(ValueError, match="my rule failed"):  # the rule's own exception, unchanged
        run(raising)
    with pytest.raises(TypeError, match="did you mean 'acceptance'"):
        specdec.generate(target, PROMPT, acceptence=standard_rule)
