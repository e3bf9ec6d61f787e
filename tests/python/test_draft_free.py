"""The draft-free rules of specdec (ngram, prompt-lookup, ngram-tree, suffix, suffix-tree) against
independent Python implementations of each engine's rule (tests/python/draft_free_rules.py).

Crafted histories pin each rule with its drafts written out by hand (longest vs earliest match,
ties, no match, overlapping occurrences, K beyond the history, L < n_min, max_length == L + 1,
the max_model_len cut, suffix decoding's match-length ties, min_prob, the budget, earlier
responses, eviction); randomized histories over small alphabets (fixed seeds) compare
specdec.draft_free with the Python rules exactly: tokens, parents and sources.

Run (ctest does this, label cpu):
  PYTHONPATH=build/python /usr/bin/python3 -m pytest tests/python/test_draft_free.py
"""
import os
import random
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import draft_free_rules as rules  # noqa: E402
import specdec  # noqa: E402


def drafts(method, history, **kw):
    """specdec.draft_free, its int32 arrays as lists (the rules here compare lists)."""
    d = specdec.draft_free(method, history, **kw)
    for name in ("tokens", "parents"):
        assert d[name].dtype == np.int32 and d[name].ndim == 1, (method, name, d[name].dtype)
        d[name] = d[name].tolist()
    return d


def positions(d):
    return [s["position"] for s in d["sources"]]


def chain(tokens):
    return list(range(-1, len(tokens) - 1))


def check_chain(d, tokens, first_position, n):
    assert d["tokens"] == tokens
    assert d["parents"] == chain(tokens)
    assert positions(d) == list(range(first_position, first_position + len(tokens)))
    assert all(s["match_length"] == n and s["origin"] == "context" and s["request"] == -1 for s in d["sources"])


def empty(d):
    return d["tokens"] == [] and d["parents"] == [] and d["sources"] == []


# ---- vLLM n-gram ---------------------------------------------------------------------------------

def test_vllm_longest_match_wins_over_earlier_shorter():
    # [1,2,3] occurs at 0; the 2-gram [2,3] also earlier at 1, but the longest n wins.
    h = [1, 2, 3, 9, 2, 3, 7, 1, 2, 3]
    check_chain(drafts("ngram,n_min=1,n_max=3", h, k=4), [9, 2, 3, 7], 3, 3)
    # n_max=2: [2,3] at its earliest occurrence (1), not at 4.
    check_chain(drafts("ngram,n_min=1,n_max=2", h, k=4), [9, 2, 3, 7], 3, 2)


def test_vllm_earliest_of_equal_matches():
    check_chain(drafts("ngram,n_min=1,n_max=1", [5, 1, 6, 1, 7, 1], k=2), [6, 1], 2, 1)


def test_vllm_no_match_and_short_history():
    assert empty(drafts("ngram,n_min=1,n_max=3", [1, 2, 3, 4], k=4))
    assert empty(drafts("ngram,n_min=3,n_max=4", [1, 1], k=4))        # L < n_min
    assert empty(drafts("ngram,n_min=3,n_max=4", [1, 1, 1], k=4))     # L >= n_min, but n <= L - 1 < n_min
    assert empty(drafts("ngram,n_min=1,n_max=1", [4], k=4))


def test_vllm_overlapping_occurrences():
    # [1,1,1] occurs at 0 (ending before the pending token): one token follows it.
    check_chain(drafts("ngram,n_min=1,n_max=3", [1, 1, 1, 1], k=4), [1], 3, 3)
    check_chain(drafts("ngram,n_min=1,n_max=2", [1, 1, 1, 1], k=4), [1, 1], 2, 2)
    check_chain(drafts("ngram,n_min=1,n_max=1", [1, 1, 1, 1], k=4), [1, 1, 1], 1, 1)


def test_vllm_k_beyond_the_history_and_max_model_len():
    check_chain(drafts("ngram,n_min=1,n_max=2", [1, 2, 3, 1], k=10), [2, 3, 1], 1, 1)
    check_chain(drafts("ngram,n_min=1,n_max=2", [1, 2, 3, 1], k=4, max_model_len=6), [2, 3], 1, 1)
    check_chain(drafts("ngram,n_min=1,n_max=2", [1, 2, 3, 1], k=4, max_model_len=5), [2], 1, 1)
    assert empty(drafts("ngram,n_min=1,n_max=2", [1, 2, 3, 1], k=4, max_model_len=4))


# ---- Hugging Face prompt lookup ------------------------------------------------------------------

def test_hf_falls_back_to_shorter_ngrams():
    # [6,5] has no earlier occurrence; [5] at 1.
    check_chain(drafts("prompt-lookup,n_max=2", [4, 5, 6, 5], k=4), [6, 5], 2, 1)
    # n from min(n_max, L - 1): [3,3] with n_max 5 matches the 1-gram at 0.
    check_chain(drafts("prompt-lookup,n_max=5", [3, 3], k=4), [3], 1, 1)
    assert empty(drafts("prompt-lookup,n_max=5", [3], k=4))
    assert empty(drafts("prompt-lookup,n_max=2", [1, 2, 3], k=4))


def test_hf_first_window_with_a_continuation():
    # The 1-gram [1] at 1 has a continuation; at 2 it is the pending token itself.
    check_chain(drafts("prompt-lookup,n_max=1", [7, 1, 1], k=4), [1], 2, 1)
    check_chain(drafts("prompt-lookup,n_max=3", [1, 1, 1, 1], k=4), [1], 3, 3)


def test_hf_max_length():
    assert empty(drafts("prompt-lookup,n_max=2", [1, 2, 1], k=4, max_length=4))   # L + 1: the target's token only
    check_chain(drafts("prompt-lookup,n_max=2", [1, 2, 1], k=4, max_length=5), [2, 1], 1, 1)
    check_chain(drafts("prompt-lookup,n_max=2", [1, 2, 1], k=4, max_length=0), [2, 1], 1, 1)


def test_hf_eos_cuts_the_drafts():
    # transformers cuts the candidates before the first EOS; a match whose candidates start with
    # EOS drafts nothing (the first match ends the search, no fallback to a shorter n-gram).
    check_chain(drafts("prompt-lookup,n_max=2", [5, 6, 7, 9, 8, 5, 6], k=4, eos_token_ids=[9]), [7], 2, 2)
    assert empty(drafts("prompt-lookup,n_max=2", [5, 6, 9, 7, 5, 6], k=4, eos_token_ids=[9]))
    check_chain(drafts("prompt-lookup,n_max=2", [5, 6, 9, 7, 5, 6], k=4), [9, 7, 5, 6], 2, 2)


# ---- n-gram tree ---------------------------------------------------------------------------------

def test_ngram_tree_branches_in_breadth_first_order():
    d = drafts("ngram-tree,n_min=1,n_max=3,breadth=10,nodes=8", [1, 2, 3, 1, 2, 4, 1, 2], k=3)
    assert d["tokens"] == [3, 4, 1, 1, 2, 2]
    assert d["parents"] == [-1, -1, 0, 1, 2, 3]
    assert positions(d) == [2, 5, 3, 6, 4, 7]
    assert {s["match_length"] for s in d["sources"]} == {2}


def test_ngram_tree_ranks_by_occurrences():
    h = [9, 1, 5, 1, 6, 1, 6, 1]
    d = drafts("ngram-tree,n_min=1,n_max=1,breadth=1,nodes=8", h, k=2)
    assert (d["tokens"], d["parents"], positions(d)) == ([6, 1], [-1, 0], [4, 5])
    d = drafts("ngram-tree,n_min=1,n_max=1,breadth=2,nodes=8", h, k=2)
    assert (d["tokens"], d["parents"], positions(d)) == ([6, 5, 1, 1], [-1, -1, 0, 1], [4, 2, 5, 3])
    d = drafts("ngram-tree,n_min=1,n_max=1,breadth=2,nodes=3", h, k=2)
    assert d["tokens"] == [6, 5, 1]
    assert empty(drafts("ngram-tree,n_min=2,n_max=3", [1, 2, 3, 4, 1], k=4))


# ---- suffix decoding -----------------------------------------------------------------------------

def test_suffix_longer_match_wins_ties():
    # m = 3, 4, 5 all score 0.5 + 0.5 + 0.5; the longest (5) wins.
    d = drafts("suffix", [1, 2, 3, 1, 2, 3, 1, 2], k=5)
    assert (d["tokens"], d["parents"], positions(d)) == ([3, 1, 2], [-1, 0, 1], [5, 6, 7])
    assert {s["match_length"] for s in d["sources"]} == {5}
    # Depth 2: the pattern is [1,2], only m = 1 is tried, and [2,3,1] is not in the tree.
    d = drafts("suffix,tree_depth=2", [1, 2, 3, 1, 2, 3, 1, 2], k=5)
    assert (d["tokens"], positions(d), d["sources"][0]["match_length"]) == ([3], [5], 1)


def test_suffix_path_ties_and_min_prob():
    h = [1, 2, 1, 3, 1, 4, 1, 5, 1]
    # [1] is followed by 2, 3, 4, 5 once each: probability 1/5, the smallest token on ties.
    d = drafts("suffix", h, k=4)
    assert (d["tokens"], positions(d)) == ([2], [1])
    d = drafts("suffix,spec_factor=4", h, k=4)
    assert (d["tokens"], d["parents"], positions(d)) == ([2, 1, 3, 1], [-1, 0, 1, 2], [1, 2, 3, 4])
    assert empty(drafts("suffix,min_prob=0.25", h, k=4))
    assert drafts("suffix,min_prob=0.2", h, k=4)["tokens"] == [2]   # float32(1/5) >= float32(0.2)


def test_suffix_budget():
    h = [1, 2, 3, 4, 5, 1, 2, 3, 4]
    d = drafts("suffix", h, k=8)
    assert (d["tokens"], positions(d), d["sources"][0]["match_length"]) == ([5, 1, 2, 3], [4, 5, 6, 7], 4)
    assert drafts("suffix", h, k=3)["tokens"] == [5, 1, 2]
    assert drafts("suffix,spec_factor=0.5", h, k=8)["tokens"] == [5, 1]
    assert drafts("suffix,spec_offset=-2", h, k=8)["tokens"] == [5, 1]
    assert drafts("suffix,spec_factor=0.5,spec_offset=0.6", h, k=8)["tokens"] == [5, 1]
    assert drafts("suffix,spec_factor=2", h, k=8)["tokens"] == [5, 1, 2, 3, 4]
    assert empty(drafts("suffix,spec_factor=0.2,spec_offset=0.1", h, k=8))
    # Float steps: float32(5) * float32(3.34) + float32(0.3) = 16.999998, + 1e-6 -> 16 (in double 17).
    long = [1, 2, 3, 4, 5] + list(range(10, 30)) + [1, 2, 3, 4, 5]
    for method in ("suffix", "suffix-tree"):
        d = drafts(f"{method},spec_factor=3.34,spec_offset=0.3", long, k=24)
        assert (d["tokens"], positions(d)[0], d["sources"][0]["match_length"]) == (list(range(10, 26)), 5, 5)
    # vLLM's cut: at most max_model_len - L - 1 drafts.
    assert drafts("suffix", h, k=8, max_model_len=12)["tokens"] == [5, 1]
    assert empty(drafts("suffix", h, k=8, max_model_len=10))


def test_suffix_tree_best_first():
    h = [1, 2, 1, 2, 1, 3, 5, 1]
    d = drafts("suffix-tree,spec_factor=4", h, k=4)
    assert (d["tokens"], d["parents"], positions(d)) == ([2, 1, 3, 2], [-1, 0, -1, 1], [3, 4, 5, 3])
    d = drafts("suffix,spec_factor=4", h, k=4)
    assert (d["tokens"], d["parents"], positions(d)) == ([2, 1, 2, 1], [-1, 0, 1, 2], [3, 4, 3, 4])
    assert drafts("suffix-tree", h, k=4)["tokens"] == [2]


def test_suffix_responses_beat_the_local_tree():
    d = drafts("suffix,spec_factor=3", [7, 8, 1], k=4, prompt_length=2, responses=[[1, 2, 3], [4, 1, 2, 3]])
    assert (d["tokens"], positions(d)) == ([2, 3], [2, 3])
    assert all(s["origin"] == "responses" and s["request"] == 1 and s["match_length"] == 1 for s in d["sources"])
    # Equal scores: the local tree's (its [1] -> 2 is 1/2, the run's too).
    d = drafts("suffix", [1, 2, 5, 1], k=4, prompt_length=3, responses=[[1, 2]])
    assert (d["tokens"], d["sources"]) == ([2], [{"origin": "context", "position": 1, "match_length": 1, "request": -1}])
    d = drafts("suffix", [1, 2, 5, 1], k=4, prompt_length=3, responses=[[1, 2], [1, 2]])
    assert (d["tokens"], d["sources"]) == ([2], [{"origin": "responses", "position": 1, "match_length": 1, "request": 1}])
    # The run's tree holds this request's output too: there [1] -> 2 is 2 of 3, in the request's
    # tree (the prompt's [1, 4] too) 2 of 5; the copy's position is in the history.
    d = drafts("suffix", [1, 4, 1, 4, 1, 2, 5, 1, 2, 6, 1], k=4, prompt_length=4)
    assert (d["tokens"], d["sources"][0]["origin"], positions(d)) == ([2], "context", [8])


def test_suffix_eviction():
    responses = [[1, 2], [1, 2], [1, 3], [1, 3]]
    d = drafts("suffix,cached_requests=2", [9, 1], k=4, responses=responses)
    assert (d["tokens"], d["sources"][0]["request"], positions(d)) == ([3], 3, [1])
    d = drafts("suffix,cached_requests=4", [9, 1], k=4, responses=responses)   # 2 and 3 tie at 2 of 5: the smaller
    assert (d["tokens"], d["sources"][0]["request"]) == ([2], 1)
    assert empty(drafts("suffix,cached_requests=0", [9, 1], k=4, responses=responses))


def test_errors():
    with pytest.raises(specdec.Error, match="draft-free methods"):
        drafts("eagle3", [1, 2])
    with pytest.raises(specdec.Error, match="unknown method"):
        drafts("ngarm", [1, 2])
    with pytest.raises(specdec.Error, match="at least one token"):
        drafts("ngram", [])
    with pytest.raises(specdec.Error, match="prompt_length"):
        drafts("suffix", [1, 2], prompt_length=3)
    with pytest.raises(specdec.Error, match="only the suffix methods"):
        drafts("ngram", [1, 2], responses=[[1]])
    with pytest.raises(specdec.Error, match="not a token id"):
        drafts("ngram", [1, -2])
    with pytest.raises(specdec.Error, match="n_min"):
        drafts("ngram,n_min=0", [1, 2])


# ---- randomized: specdec against the Python rules ------------------------------------------------

def history_of(rng, length_max=40):
    alphabet = rng.randint(2, 5)
    return [rng.randint(1, alphabet) for _ in range(rng.randint(1, length_max))]


def compare(name, cases):
    """cases: (label, method text, history, kwargs, expected dict); every mismatch is listed."""
    failures = []
    for label, method, h, kw, want in cases:
        got = drafts(method, h, **kw)
        got_view = (got["tokens"], got["parents"], got["sources"])
        want_view = (want["tokens"], want["parents"], want["sources"])
        if got_view != want_view:
            failures.append(f"{label}: draft_free({method!r}, {h}, {kw})\n  specdec {got_view}\n  python  {want_view}")
    assert not failures, f"{name}: {len(failures)} of {len(cases)} cases differ:\n" + "\n".join(failures[:5])
    return len(cases)


def test_random_vllm():
    cases = []
    for seed in range(300):
        rng = random.Random(seed)
        h = history_of(rng)
        n_min = rng.randint(1, 4)
        n_max = rng.randint(n_min, 6)
        k = rng.randint(1, 8)
        mml = rng.choice([2048, max(1, len(h) + rng.randint(-1, 5))])
        cases.append((f"seed {seed}", f"ngram,n_min={n_min},n_max={n_max}", h, {"k": k, "max_model_len": mml},
                      rules.vllm_ngram(h, n_min, n_max, k, mml)))
    compare("ngram", cases)


def test_random_hf():
    cases = []
    for seed in range(300):
        rng = random.Random(1000 + seed)
        h = history_of(rng)
        n_max = rng.randint(1, 6)
        k = rng.randint(1, 8)
        max_length = rng.choice([0, len(h) + 1, len(h) + 2, len(h) + rng.randint(1, 10)])
        eos = rng.choice([[], [0], [1, 2]])
        cases.append((f"seed {1000 + seed}", f"prompt-lookup,n_max={n_max}", h,
                      {"k": k, "max_length": max_length, "eos_token_ids": eos},
                      rules.hf_prompt_lookup(h, n_max, k, max_length, eos)))
    compare("prompt-lookup", cases)


def test_random_ngram_tree():
    cases = []
    for seed in range(300):
        rng = random.Random(2000 + seed)
        h = history_of(rng)
        n_min = rng.randint(1, 3)
        n_max = rng.randint(n_min, 6)
        k = rng.randint(1, 6)
        breadth = rng.randint(1, 4)
        nodes = rng.randint(1, 12)
        cases.append((f"seed {2000 + seed}", f"ngram-tree,n_min={n_min},n_max={n_max},breadth={breadth},nodes={nodes}", h,
                      {"k": k}, rules.ngram_tree(h, n_min, n_max, k, breadth, nodes)))
    compare("ngram-tree", cases)


def suffix_cases(tree, seed0, count):
    cases = []
    for seed in range(seed0, seed0 + count):
        rng = random.Random(seed)
        h = history_of(rng, 30)
        alphabet = max(h) + rng.randint(0, 1)
        responses = [[rng.randint(1, alphabet) for _ in range(rng.randint(0, 15))] for _ in range(rng.randint(0, 4))]
        p = {
            "tree_depth": rng.choice([1, 2, 3, 4, 6, 8, 24]),
            "spec_factor": rng.choice([0.3, 0.5, 0.7, 1.0, 1.5, 2.0, 4.0]),
            "spec_offset": rng.choice([0.0, 0.0, -1.0, -0.5, 0.1, 0.6, 1.2]),
            "min_prob": rng.choice([0.0, 0.1, 0.1, 0.2, 0.3, 0.5]),
            "cached_requests": rng.choice([0, 1, 2, 3, 10000]),
        }
        kw = {"k": rng.randint(1, 12), "prompt_length": rng.randint(0, len(h)), "responses": responses,
              "max_model_len": rng.choice([2048, len(h) + rng.randint(0, 6)])}
        method = ("suffix-tree," if tree else "suffix,") + ",".join(f"{key}={value}" for key, value in p.items())
        want = rules.suffix_propose(h, tree=tree, **kw, **p)
        cases.append((f"seed {seed}", method, h, kw, want))
    return cases


def test_random_suffix_path():
    compare("suffix", suffix_cases(False, 3000, 300))


def test_random_suffix_tree():
    compare("suffix-tree", suffix_cases(True, 4000, 300))
