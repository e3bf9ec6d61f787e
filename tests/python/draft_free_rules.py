"""The draft-free drafting rules, written again in Python from each engine's documented behaviour.

specdec's C++ (reference/drafting/ngram_lookup.cpp, suffix_tree.cpp, suffix_proposer.cpp) and this
module are two independent readings of the same rules; tests/python/test_draft_free.py compares
them exactly. Nothing here is a translation of the C++: each rule is written the way its engine
computes it, by a different method where the engine allows one.

  vllm_ngram          vLLM v1 NgramProposer (vllm/v1/spec_decode/ngram_proposer.py): KMP over the
                      reversed tokens, the longest prefix of the reversed sequence (capped at
                      max_n) that recurs, at its rightmost place in the reversed order.
  hf_prompt_lookup    transformers PromptLookupCandidateGenerator.get_candidates: sliding windows
                      (numpy's sliding_window_view for torch's unfold), n from max down to 1, the
                      first window with a non-empty continuation.
  ngram_tree          specdec's SGLang-style n-gram tree (the rule in ngram_lookup.hpp's comment):
                      every occurrence of the longest matching n-gram, continuations as a trie,
                      breadth-first.
  suffix_speculate    Arctic Inference's suffix decoding (suffix_tree.cc speculate), by counting
                      occurrences directly instead of keeping a tree: count(x) = the number of
                      start positions i with x a prefix of seq[i : min(i + D, len)], over the
                      sequences of the trees read together; float32 arithmetic step for step.
  suffix_propose      the per-step rule of specdec's SuffixProposer (Arctic Inference's
                      SuffixDecodingCache.speculate as vLLM calls it): the request's own tree
                      against the run's earlier responses read with the request's own output.

Every function returns a dict {"tokens", "parents", "sources"} in the shape specdec.draft_free
returns, sources as {"origin", "position", "match_length", "request"}.
"""

from __future__ import annotations

import heapq

import numpy as np

F32 = np.float32


def _chain(tokens, start, n):
    """A chain of drafts copied from history[start, start + len(tokens))."""
    return {
        "tokens": [int(t) for t in tokens],
        "parents": list(range(-1, len(tokens) - 1)),
        "sources": [{"origin": "context", "position": start + j, "match_length": n, "request": -1}
                    for j in range(len(tokens))],
    }


def _empty():
    return {"tokens": [], "parents": [], "sources": []}


# ---- vLLM: NgramProposer -------------------------------------------------------------------------

def _prefix_function(p):
    """pi[j]: the length of the longest proper border of p[: j + 1]."""
    pi = [0] * len(p)
    b = 0
    for j in range(1, len(p)):
        while b > 0 and p[j] != p[b]:
            b = pi[b - 1]
        if p[j] == p[b]:
            b += 1
        pi[j] = b
    return pi


def vllm_ngram(history, min_n, max_n, k, max_model_len):
    """vLLM's rule: reverse the tokens; the n-gram to match is a prefix of the reversed sequence.
    Scanning the reversed sequence from index 1 with KMP (pattern: its first max_n tokens), the
    longest prefix ending at each index is an earlier occurrence of the last tokens; the longest
    one wins, and among equals the one scanned last (the earliest in the original order)."""
    total = len(history)
    if total < min_n:
        return _empty()
    k = min(k, max_model_len - total)
    if k <= 0:
        return _empty()
    rev = list(reversed(history))
    pattern = rev[:max_n]
    pi = _prefix_function(pattern)
    longest, where = 0, 0
    v = 0  # the length of the pattern prefix ending at the current index
    for i in range(1, total):
        while v > 0 and (v == len(pattern) or pattern[v] != rev[i]):
            v = pi[v - 1]
        if pattern[v] == rev[i]:
            v += 1
            if v >= longest:
                longest, where = v, i
    if longest < min_n:
        return _empty()
    # rev[where - longest + 1 : where + 1] is the n-gram; in the original order it begins at
    # total - 1 - where, so the drafts begin right after it.
    start = total - 1 - where + longest
    k = min(k, total - start)
    return _chain(history[start:start + k], start, longest)


# ---- Hugging Face transformers: PromptLookupCandidateGenerator -----------------------------------

def hf_prompt_lookup(history, max_matching_ngram_size, num_output_tokens, max_length, eos=()):
    """transformers' rule (max_length 0: none): the candidates are cut before the first EOS id, and
    a match whose candidates start with EOS drafts nothing (the search stops at the first match).
    Its other cut (tokens a logits processor forbids) has no counterpart in specdec and is left out."""
    ids = np.asarray(history, dtype=np.int64)
    input_length = len(ids)
    if max_length and max_length == input_length + 1:
        return _empty()
    limit = max_length if max_length else np.iinfo(np.int64).max
    for ngram_size in range(min(max_matching_ngram_size, input_length - 1), 0, -1):
        windows = np.lib.stride_tricks.sliding_window_view(ids, ngram_size)
        ngram = ids[-ngram_size:]
        match_indices = np.nonzero((windows == ngram).all(axis=1))[0]
        for idx in match_indices:
            start_idx = int(idx) + ngram_size
            end_idx = min(start_idx + num_output_tokens, input_length, limit)
            if start_idx < end_idx:
                chosen = ids[start_idx:end_idx].tolist()
                eos_at = [i for i, t in enumerate(chosen) if t in set(eos)]
                if eos_at:
                    chosen = chosen[:eos_at[0]]
                return _chain(chosen, start_idx, ngram_size) if chosen else _empty()
    return _empty()


# ---- specdec's n-gram tree (ngram_lookup.hpp) ----------------------------------------------------

def ngram_tree(history, n_min, n_max, depth, breadth, max_nodes):
    """The longest n in [n_min, n_max] with earlier occurrences (at least one token after each);
    every occurrence's continuation (≤ depth tokens, cut at the end) as a path of a trie; a node's
    children ranked by how many continuations pass through them, ties to the one seen at the
    earlier position; `breadth` kept per node; nodes in breadth-first order, at most max_nodes.
    A node's source: the position of its token in the earliest continuation through it."""
    L = len(history)
    h = tuple(history)
    for n in range(n_max, n_min - 1, -1):
        gram = h[L - n:] if n <= L else None
        starts = [s for s in range(0, L - n) if gram is not None and h[s:s + n] == gram]
        if starts:
            break
    else:
        return _empty()
    conts = [h[s + n:min(s + n + depth, L)] for s in starts]
    firsts = [s + n for s in starts]

    def through(prefix):
        """(count, earliest position of the prefix's last token) over the continuations."""
        idx = [j for j, c in enumerate(conts) if c[:len(prefix)] == prefix]
        return len(idx), min(firsts[j] + len(prefix) - 1 for j in idx)

    out = _empty()
    frontier = [((), -1)]
    while frontier and len(out["tokens"]) < max_nodes:
        nxt = []
        for prefix, parent in frontier:
            kids = sorted({c[len(prefix)] for c in conts if len(c) > len(prefix) and c[:len(prefix)] == prefix})
            ranked = sorted(kids, key=lambda t: (-through(prefix + (t,))[0], through(prefix + (t,))[1]))
            for t in ranked[:breadth]:
                if len(out["tokens"]) >= max_nodes:
                    break
                out["tokens"].append(int(t))
                out["parents"].append(parent)
                out["sources"].append({"origin": "context", "position": through(prefix + (t,))[1],
                                       "match_length": n, "request": -1})
                nxt.append((prefix + (t,), len(out["tokens"]) - 1))
        frontier = nxt
    return out


# ---- Arctic Inference: suffix decoding -----------------------------------------------------------

class Corpus:
    """The sequences of one or more suffix trees read together, each tree a list of
    (sequence id, tokens) in insertion order, all cut at depth D."""

    def __init__(self, trees, depth):
        self.trees = [[(sid, tuple(seq)) for sid, seq in tree] for tree in trees]
        self.depth = depth
        self._memo = {}

    def count(self, x):
        """How many suffixes seq[i : min(i + D, len)] begin with x."""
        x = tuple(x)
        if x in self._memo:
            return self._memo[x]
        if len(x) > self.depth:
            c = 0
        elif not x:
            c = sum(len(seq) for tree in self.trees for _, seq in tree)
        else:
            n = len(x)
            c = sum(1 for tree in self.trees for _, seq in tree for i in range(len(seq) - n + 1) if seq[i:i + n] == x)
        self._memo[x] = c
        return c

    def children(self, x):
        """The tokens t with count(x + t) > 0, ascending."""
        x = tuple(x)
        if len(x) + 1 > self.depth:
            return []
        n = len(x)
        return sorted({seq[i + n] for tree in self.trees for _, seq in tree for i in range(len(seq) - n)
                       if seq[i:i + n] == x})

    def ref(self, x):
        """Where x's last token was last inserted: (tree, sequence id, index) of the latest
        occurrence in the first tree holding x; (0, -1, -1) if none."""
        x = tuple(x)
        n = len(x)
        for ti, tree in enumerate(self.trees):
            for sid, seq in reversed(tree):
                ends = [i + n - 1 for i in range(len(seq) - n + 1) if seq[i:i + n] == x]
                if ends:
                    return ti, sid, max(ends)
        return 0, -1, -1


def suffix_budget(m, max_spec_tokens, spec_factor, spec_offset):
    """min(max_spec_tokens, int(m * factor + offset + 1e-6)), at least 0: m * factor and + offset
    in float32 (int times float, float plus float), + 1e-6 in double, truncated."""
    x = F32(F32(m) * F32(spec_factor))
    x = F32(x + F32(spec_offset))
    return max(0, min(max_spec_tokens, int(float(x) + 1e-6)))


def suffix_speculate(corpus, context, max_spec_tokens, spec_factor=1.0, spec_offset=0.0, min_token_prob=0.1, tree=False):
    """The best speculation after `context`: for each match length m = 1, 2, ... < len(context)
    while the last m tokens occur, drafts within the budget; the best score wins, the longer m on
    ties. Returns {"tokens", "parents", "probs", "score" (float32), "match_length", "nodes": the
    token strings (pattern + path) of the nodes, for their sources}."""
    min_p = F32(min_token_prob)
    best = {"tokens": [], "parents": [], "probs": [], "score": F32(0), "match_length": 0, "nodes": []}
    for m in range(1, len(context)):
        pattern = tuple(context[len(context) - m:])
        if corpus.count(pattern) == 0:
            break
        budget = suffix_budget(m, max_spec_tokens, spec_factor, spec_offset)
        d = _tree(corpus, pattern, budget, min_p) if tree else _path(corpus, pattern, budget, min_p)
        if d["score"] >= best["score"]:
            best = d
            best["match_length"] = m
    return best


def _step(prob, parent_count, child_count):
    """The path probability after a child: multiplied by child/parent (in float32, as
    prob * child / parent) only where the count drops, as Arctic Inference multiplies only at a
    compressed node's boundary (where the count always drops)."""
    if child_count < parent_count:
        return F32(F32(prob * F32(child_count)) / F32(parent_count))
    return prob


def _path(corpus, pattern, budget, min_p):
    """Greedy: the most frequent child (ties: the smaller token) while the budget lasts and the
    path probability stays >= min_p."""
    out = {"tokens": [], "parents": [], "probs": [], "score": F32(0), "match_length": 0, "nodes": []}
    node, prob = pattern, F32(1)
    while len(out["tokens"]) < budget and prob >= min_p:
        kids = corpus.children(node)
        if not kids:
            break
        t = max(kids, key=lambda t: (corpus.count(node + (t,)), -t))
        prob = _step(prob, corpus.count(node), corpus.count(node + (t,)))
        node = node + (t,)
        if prob < min_p:
            break
        out["tokens"].append(t)
        out["parents"].append(len(out["tokens"]) - 2)
        out["probs"].append(prob)
        out["score"] = F32(out["score"] + prob)
        out["nodes"].append(node)
    return out


def _tree(corpus, pattern, budget, min_p):
    """Best-first: the queued node of highest path probability next (ties: the one queued first);
    a taken node's children are queued (ascending token) when their probability is >= min_p."""
    out = {"tokens": [], "parents": [], "probs": [], "score": F32(0), "match_length": 0, "nodes": []}
    heap, order = [], 0

    def queue(node, prob, parent):
        nonlocal order
        for t in corpus.children(node):
            p = _step(prob, corpus.count(node), corpus.count(node + (t,)))
            if p >= min_p:
                heapq.heappush(heap, (-float(p), order, node + (t,), parent, p))
                order += 1

    queue(pattern, F32(1), -1)
    while heap and len(out["tokens"]) < budget:
        _, _, node, parent, p = heapq.heappop(heap)
        out["tokens"].append(node[-1])
        out["parents"].append(parent)
        out["probs"].append(p)
        out["score"] = F32(out["score"] + p)
        out["nodes"].append(node)
        queue(node, p, len(out["tokens"]) - 1)
    return out


def suffix_propose(history, *, k, prompt_length=None, max_model_len=2048, responses=(), tree=False, tree_depth=24,
                   spec_factor=1.0, spec_offset=0.0, min_prob=0.1, cached_requests=10000):
    """One step of suffix decoding after `history` (the last token pending): the pattern is the
    last tree_depth tokens; the request's tree holds prompt + output as one sequence; the run's
    tree holds the last `cached_requests` earlier responses (request ids: their order) and is read
    together with this request's output (history[prompt_length:]); the run's speculation replaces
    the request's only with a strictly higher score. At most min(k, max_model_len - L - 1) drafts
    (vLLM's SuffixDecodingProposer)."""
    L = len(history)
    if prompt_length is None:
        prompt_length = L - 1
    max_spec = max(0, min(k, max_model_len - L - 1))
    pattern = tuple(history[max(0, L - tree_depth):])
    local = Corpus([[(0, history)]], tree_depth)
    best = suffix_speculate(local, pattern, max_spec, spec_factor, spec_offset, min_prob, tree)
    source = local
    if cached_requests > 0:
        kept = list(enumerate(responses))[-cached_requests:]
        run = Corpus([kept, [(0, history[prompt_length:])]], tree_depth)
        r = suffix_speculate(run, pattern, max_spec, spec_factor, spec_offset, min_prob, tree)
        if r["score"] > best["score"]:
            best, source = r, run
    sources = []
    for node in best["nodes"]:
        ti, sid, index = source.ref(node)
        if source is local:
            sources.append({"origin": "context", "position": index, "match_length": best["match_length"], "request": -1})
        elif ti == 0:
            sources.append({"origin": "responses", "position": index, "match_length": best["match_length"], "request": sid})
        else:
            sources.append({"origin": "context", "position": index + prompt_length,
                            "match_length": best["match_length"], "request": -1})
    return {"tokens": [int(t) for t in best["tokens"]], "parents": best["parents"], "sources": sources,
            "probs": [float(p) for p in best["probs"]], "score": float(best["score"])}
