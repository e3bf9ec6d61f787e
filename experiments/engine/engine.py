"""An outside speculative-decoding engine in plain PyTorch (float32, CPU), for validating against
specdec's reference: EAGLE-1 (chain of K, or a static tree of child-rank paths verified under a
tree attention mask) and P-EAGLE (chain of K, all drafts in one drafter forward), under greedy,
sample (lossless rejection sampling) or coupled sampling.

It is written independently of the C++ (on experiments/train's llama.py and heads.py), but follows
the same conventions so that its runs compare token for token:

- randomness: philox.py, keyed by (seed, sequence, absolute position, purpose, index);
- drafter pairs: drafter position i pairs the target feature f_i with token t_{i+1};
- verification: one target forward over [pending, drafts...], drafts at position base + depth;
- acceptance: match (greedy / coupled) or rejection sampling with min(1, p/q), the residual
  norm(max(0, p - q)) after a rejection and a bonus token from p after a leaf.

`bug=` switches on one deliberate error, to show that validation catches it:
  "rope_layer3"           decoder layer 3 rotates q and k the wrong way (sin negated)
  "tree_mask_off_by_one"  in the verify forward each draft node also sees its next sibling
  "residual_rule"         after a rejection the token is drawn from p instead of max(0, p - q)
  "rejected_token"        after a rejection the engine emits the draft it has just rejected
"""
import json
import os
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "train"))
sys.path.insert(0, HERE)

import export  # noqa: E402
import heads  # noqa: E402
import philox  # noqa: E402
from llama import rope_cos_sin  # noqa: E402

# Deliberate bugs, for showing what validation names: a wrong RoPE sign on target layer 3; a tree
# attention mask that lets a node see its next sibling; a wrong residual in rejection sampling; the
# rejected draft emitted after a rejection; the
# drafter's fc loaded without its bias (its outputs depart while its inputs agree); and each
# drafter pair fed the feature of the pair before (its inputs are wrong).
BUGS = ("rope_layer3", "tree_mask_off_by_one", "residual_rule", "rejected_token", "drafter_no_fc_bias", "drafter_feature_lag")
SUBSTEPS = ("input_norm", "attention", "post_attention_norm", "mlp")


# --------------------------------------------------------------------------------------------
# Sampling: the target distribution p, drafts, inverse-CDF draws (reference/sampling/sampler.hpp)

class Sampling:
    def __init__(self, mode="greedy", temperature=1.0, top_k=0, top_p=1.0, seed=0):
        if mode not in ("greedy", "sample", "coupled"):
            raise ValueError(f"sampling mode {mode!r}: expected greedy, sample or coupled")
        self.mode, self.temperature, self.top_k, self.top_p, self.seed = mode, float(temperature), int(top_k), float(top_p), int(seed)

    def to_json(self):
        return {"mode": self.mode, "seed": self.seed, "temperature": self.temperature, "top_k": self.top_k, "top_p": self.top_p}


def argmax(row):
    return int(np.argmax(row))  # first maximum: ties to the lower id


def probabilities(row, s):
    """The distribution a sampler draws from, in double (greedy: one-hot of the argmax)."""
    row = np.asarray(row, dtype=np.float32)
    n = row.size
    if s.mode == "greedy":
        p = np.zeros(n)
        p[argmax(row)] = 1.0
        return p
    x = row.astype(np.float64) / s.temperature
    e = np.exp(x - x.max())
    if (0 < s.top_k < n) or s.top_p < 1.0:
        order = sorted(range(n), key=lambda i: (-float(row[i]), i))
        limit = s.top_k if 0 < s.top_k < n else n
        e[order[limit:]] = 0.0
        if s.top_p < 1.0:
            total = float(np.cumsum(e)[-1])
            kept, cum = limit, 0.0
            for j in range(limit):
                cum += e[order[j]] / total
                if cum >= s.top_p:
                    kept = j + 1
                    break
            e[order[kept:limit]] = 0.0
    return e / np.cumsum(e)[-1]


def sample_from(p, u):
    """First i with p[i] > 0 and u < p[0] + ... + p[i]; the last nonzero one if rounding leaves u beyond."""
    cum = np.cumsum(p)
    hit = np.nonzero((p > 0) & (u < cum))[0]
    return int(hit[0]) if hit.size else int(np.nonzero(p > 0)[0][-1])


def coupled_choice(row, s, sequence, position):
    p = probabilities(row, s)
    best, best_score = -1, 0.0
    for i in range(len(row)):
        if p[i] == 0.0:
            continue
        score = float(row[i]) / s.temperature + philox.gumbel(s.seed, sequence, position, i)
        if best < 0 or score > best_score:
            best, best_score = i, score
    return best


def sample_token(row, s, sequence, position):
    if s.mode == "greedy":
        return argmax(row)
    if s.mode == "sample":
        return sample_from(probabilities(row, s), philox.uniform(s.seed, sequence, position, philox.SAMPLE, 0))
    return coupled_choice(row, s, sequence, position)


def choose_draft(row, s, sequence, position):
    """(token, q): q is the distribution a sampled draft was drawn from (None when deterministic)."""
    if s.mode == "sample":
        q = probabilities(row, s)
        return sample_from(q, philox.uniform(s.seed, sequence, position, philox.DRAFT, 0)), q
    return sample_token(row, s, sequence, position), None


def ranked(row, count):
    """Ids of the `count` largest logits, best first, ties to the lower id."""
    return [int(i) for i in np.argsort(-np.asarray(row, dtype=np.float32), kind="stable")[:count]]


# --------------------------------------------------------------------------------------------
# Trees of child-rank paths (reference/drafting/tree_choices.hpp)

def tree_shape(choices):
    """Sorted by depth then lexicographically (EAGLE's order): (paths, parents, ranks, depths)."""
    paths = sorted((list(p) for p in choices), key=lambda p: (len(p), p))
    index, parents = {}, []
    for n, p in enumerate(paths):
        if tuple(p) in index:
            raise ValueError(f"tree path {p} is listed twice")
        index[tuple(p)] = n
        if len(p) > 1 and tuple(p[:-1]) not in index:
            raise ValueError(f"tree path {p} has no parent path {p[:-1]}")
        parents.append(index[tuple(p[:-1])] if len(p) > 1 else -1)
    return paths, parents, [p[-1] for p in paths], [len(p) for p in paths]


def depth_of(parents, n):
    d = 0
    while n >= 0:
        d, n = d + 1, parents[n]
    return d


def children_of(parents, node):
    return [i for i, p in enumerate(parents) if p == node]


# --------------------------------------------------------------------------------------------
# The engine

class Engine:
    def __init__(self, model_dir, drafter_dir, method="eagle", k=4, tree=None, sampling=None, bug=None,
                 record_layers=True):
        if method not in ("eagle", "peagle"):
            raise ValueError(f"method {method!r}: this engine runs eagle (EAGLE-1) and peagle")
        if bug is not None and bug not in BUGS:
            raise ValueError(f"bug {bug!r}: expected one of {', '.join(BUGS)}")
        if method == "peagle" and tree is not None:
            raise ValueError("peagle: this engine drafts chains only")
        torch.set_num_threads(1)
        self.model_dir, self.drafter_dir = model_dir, drafter_dir
        self.method, self.k, self.bug = method, int(k), bug
        self.choices = tree
        self.shape = tree_shape(tree) if tree is not None else None
        self.sampling = sampling or Sampling()
        self.record_layers = record_layers
        _, self.target = export.load_llama(model_dir)
        self.target.eval()
        self.tshape = self.target.shape
        kind = "eagle1" if method == "eagle" else "peagle"
        self.head = load_head(kind, drafter_dir, self.target)
        if bug == "drafter_no_fc_bias":
            with torch.no_grad():
                self.head.fc.bias.zero_()
        self.head_config = json.load(open(os.path.join(drafter_dir, "config.json")))
        self.target_config = json.load(open(os.path.join(model_dir, "config.json")))
        self.eos = self.target_config.get("eos_token_id")
        if method == "peagle":
            self.mask_token = int(self.head_config.get("ptd_token_id", heads.MASK_TOKEN))

    # ---- target forward with a KV cache, recording every layer's sub-steps ----

    def target_forward(self, tokens, positions, mask):
        """tokens, positions: lists (T); mask: (T, C + T) bool over [cache, new]. Returns logits (T, V),
        final (post-norm) hidden (T, H), the states entering each layer (L, T, H), per-layer
        sub-steps (T, L, 4, H) and the new tokens' keys/values per layer (not yet in the cache)."""
        m = self.target
        tok = torch.tensor([tokens], dtype=torch.int64)
        pos = torch.tensor([positions], dtype=torch.int64)
        cos, sin = rope_cos_sin(pos, self.tshape.head_dim, self.tshape.rope_theta)
        x = m.embed_tokens(tok)
        entering, subs, new_kv = [], [], []
        for li, layer in enumerate(m.layers):
            entering.append(x[0])
            n1 = layer.input_layernorm(x)
            s = -sin if (self.bug == "rope_layer3" and li == 3) else sin
            past = self.cache[li] if self.cache_len > 0 else None
            a, (k, v) = layer.self_attn(n1, cos, s, mask, past)
            h = x + a
            n2 = layer.post_attention_layernorm(h)
            x = h + layer.mlp(n2)
            subs.append(torch.stack([n1[0], h[0], n2[0], x[0]], dim=1))  # (T, 4, H)
            new_kv.append((k[:, :, self.cache_len:], v[:, :, self.cache_len:]))
        final = m.norm(x)
        logits = final @ m.output_weight().t()
        return (logits[0].numpy().astype(np.float32), final[0], torch.stack(entering), torch.stack(subs, dim=1), new_kv)

    def append_cache(self, new_kv, rows):
        idx = torch.tensor(rows, dtype=torch.int64)
        for li, (k, v) in enumerate(new_kv):
            k, v = k[:, :, idx], v[:, :, idx]
            if self.cache_len == 0:
                self.cache[li] = (k, v)
            else:
                self.cache[li] = (torch.cat([self.cache[li][0], k], dim=2), torch.cat([self.cache[li][1], v], dim=2))
        self.cache_len += len(rows)

    def features_of(self, final, entering, rows):
        """The drafter's feature per kept row: EAGLE-1 the final hidden state, P-EAGLE the aux states."""
        if self.method == "eagle":
            return final[rows]
        return torch.cat([entering[i][rows] for i in self.head.aux], dim=-1)

    # ---- drafting ----

    def catch_up(self, seq, committed, extra_tokens=(), extra_feats=None, extra_positions=()):
        """Runs the drafter over the pairs (f_i, t_{i+1}) committed since the last proposal, plus
        optional extra rows (P-EAGLE's mask slots), on the cached committed pairs. Returns
        (logits (R, V), out (R, H), kv incl. the new rows, number of real rows)."""
        rows = list(range(self.pairs, committed))
        tokens = [seq[i + 1] for i in rows] + list(extra_tokens)
        feats = self.feats[[max(0, i - 1) for i in rows] if self.bug == "drafter_feature_lag" else rows]
        if extra_feats is not None:
            feats = torch.cat([feats, extra_feats], dim=0)
        positions = rows + list(extra_positions)
        T, C = len(tokens), self.pairs
        mask = torch.ones(T, C + T, dtype=torch.bool).tril(C)
        logits, out, kv = self.head(torch.tensor([tokens]), feats[None], False, torch.tensor([positions]), mask,
                                    self.dcache if C > 0 else None)
        self.io_rows(tokens, positions, feats, out[0], logits[0])
        return logits[0], out[0], kv, len(rows)

    def commit_drafter(self, kv, committed):
        self.dcache = [(k[:, :, :committed], v[:, :, :committed]) for k, v in kv]
        self.pairs = committed

    def io_rows(self, tokens, positions, feats, out, logits):
        io = self.step_io
        io["tokens"] += [int(t) for t in tokens]
        io["positions"] += [int(p) for p in positions]
        io["calls"] += [io["call"]] * len(tokens)
        io["features"].append(feats.detach().numpy())
        io["hidden"].append(out.detach().numpy())
        io["logits"].append(logits.detach().numpy())
        io["call"] += 1

    def propose(self, seq):
        committed = len(seq) - 1
        s, sid = self.sampling, 0
        qs = {}  # node -> q of its children (sampled drafts)
        if self.method == "peagle":
            K = self.k
            mh = self.head.mask_hidden.detach()[None].expand(K - 1, -1)
            logits, _, kv, real = self.catch_up(seq, committed, [self.mask_token] * (K - 1), mh,
                                                [committed - 1 + j for j in range(1, K)])
            self.commit_drafter(kv, committed)
            tokens = []
            for j in range(K):
                t, q = choose_draft(logits[real - 1 + j].numpy(), s, sid, committed + 1 + j)
                tokens.append(t)
                if q is not None:
                    qs[j - 1] = q
            return tokens, list(range(-1, K - 1)), qs
        logits, out, kv, real = self.catch_up(seq, committed)
        self.commit_drafter(kv, committed)
        root_logits, root_hidden = logits[real - 1], out[real - 1]
        if self.shape is None:
            tokens, hidden, row = [], root_hidden, root_logits
            for i in range(self.k):
                t, q = choose_draft(row.numpy(), s, sid, committed + 1 + i)
                tokens.append(t)
                if q is not None:
                    qs[i - 1] = q
                if i + 1 == self.k:
                    break
                C = kv[0][0].shape[2]
                lg, o, kv = self.head(torch.tensor([[t]]), hidden[None, None], False, torch.tensor([[committed + i]]),
                                      torch.ones(1, C + 1, dtype=torch.bool), kv)
                self.io_rows([t], [committed + i], hidden[None], o[0], lg[0])
                row, hidden = lg[0, 0], o[0, 0]
            return tokens, list(range(-1, self.k - 1)), qs
        # Static tree: node n is the rank-r candidate of its parent's distribution.
        paths, parents, ranks, depths = self.shape
        N = len(paths)
        node_logits, node_hidden, slot, tokens = {}, {}, {}, [0] * N
        has_children = [n in parents for n in range(N)]
        for depth in range(1, max(depths) + 1):
            level = []
            for n in range(N):
                if depths[n] != depth:
                    continue
                par = parents[n]
                need = max(ranks[m] for m in range(N) if parents[m] == par) + 1
                cand = ranked((root_logits if par < 0 else node_logits[par]).numpy(), need)
                tokens[n] = cand[ranks[n]]
                if has_children[n]:
                    level.append(n)
            if not level:
                continue
            C = kv[0][0].shape[2]
            R = len(level)
            mask = torch.zeros(R, C + R, dtype=torch.bool)
            for r, n in enumerate(level):
                mask[r, :committed] = True
                a = parents[n]
                while a >= 0:
                    mask[r, slot[a]] = True
                    a = parents[a]
                mask[r, C + r] = True
            feats = torch.stack([root_hidden if parents[n] < 0 else node_hidden[parents[n]] for n in level])
            lvl_tokens = [tokens[n] for n in level]
            lvl_pos = [committed - 1 + depth] * R
            lg, o, kv = self.head(torch.tensor([lvl_tokens]), feats[None], False, torch.tensor([lvl_pos]), mask, kv)
            self.io_rows(lvl_tokens, lvl_pos, feats, o[0], lg[0])
            for r, n in enumerate(level):
                slot[n] = C + r
                node_logits[n], node_hidden[n] = lg[0, r], o[0, r]
        return tokens, list(parents), qs

    # ---- verification ----

    def verify(self, tokens, parents, qs, target_rows, root_position):
        """The acceptance rule over the draft tree (reference/acceptance/acceptor.hpp)."""
        s, sid = self.sampling, 0
        draws = philox.Draws(s.seed, sid)
        decisions, nodes, accepted, emitted = [], [], [], []
        point = -1
        while True:
            position = root_position + (0 if point < 0 else depth_of(parents, point))
            kids = children_of(parents, point)
            row = target_rows[point + 1]
            if s.mode != "sample":
                choice = sample_token(row, s, sid, position)
                nxt = -1
                for c in kids:
                    match = tokens[c] == choice
                    decisions.append(int(match))
                    nodes.append(c)
                    if match:
                        nxt = c
                        break
                emitted.append(choice)
                if nxt < 0:
                    return accepted, emitted, decisions, nodes, draws
                accepted.append(nxt)
                point = nxt
                continue
            p = probabilities(row, s)
            if not kids:
                emitted.append(sample_from(p, draws.draw(position, philox.SAMPLE, 0)))
                return accepted, emitted, decisions, nodes, draws
            q = qs.get(point)
            deterministic = q is None
            q = None if deterministic else q.copy()
            nxt = -1
            for j, c in enumerate(kids):
                x = tokens[c]
                ratio = p[x] if deterministic else (p[x] / q[x] if q[x] > 0 else 1.0)
                accept = draws.draw(position, philox.ACCEPT, j) < ratio
                decisions.append(int(accept))
                nodes.append(c)
                if accept:
                    nxt = c
                    break
                if deterministic:
                    p[x] = 0.0
                else:
                    residual = np.maximum(0.0, p - q)
                    if residual.sum() > 0 and self.bug != "residual_rule":
                        p = residual
                    q[x] = 0.0
                    q = q / q.sum() if q.sum() > 0 else q
                p = p / p.sum()
            if nxt < 0:
                token = sample_from(p, draws.draw(position, philox.RESIDUAL, 0))
                emitted.append(tokens[kids[-1]] if self.bug == "rejected_token" else token)
                return accepted, emitted, decisions, nodes, draws
            accepted.append(nxt)
            emitted.append(tokens[nxt])
            point = nxt

    def tree_mask(self, base, parents):
        """(T, base + T): every row sees the cached prefix, its ancestors (row 0 = pending) and itself."""
        T = len(parents) + 1
        vp = [-1] + [p + 1 for p in parents]
        mask = torch.zeros(T, base + T, dtype=torch.bool)
        mask[:, :base] = True
        for t in range(T):
            a = t
            while a >= 0:
                mask[t, base + a] = True
                a = vp[a]
            if self.bug == "tree_mask_off_by_one" and t >= 1 and t < T - 1 and vp[t + 1] == vp[t]:
                mask[t, base + t + 1] = True  # the bug: a node also sees its next sibling
        return mask

    # ---- the decoding loop ----

    @torch.no_grad()
    def generate(self, prompt, max_new_tokens=16, stop_at_eos=True):
        """Decodes `prompt` (token ids). Returns a dict: output, stop_reason, steps (one dict per step
        with every trace field)."""
        prompt = [int(t) for t in prompt]
        s, sid = self.sampling, 0
        L = self.tshape.num_hidden_layers
        self.cache, self.cache_len = [None] * L, 0
        self.dcache, self.pairs = None, 0
        P = len(prompt)
        steps = []
        self.step_io = new_io()
        logits, final, entering, subs, kv = self.target_forward(prompt, list(range(P)), torch.ones(P, P, dtype=torch.bool).tril())
        self.append_cache(kv, list(range(P)))
        self.feats = self.features_of(final, entering, list(range(P)))
        first = sample_token(logits[P - 1], s, sid, P)
        seq, output = prompt + [first], [first]
        steps.append(dict(position=P, emitted=[first], target_logits=logits[P - 1:P], bonus_token=-1,
                          layer_row_nodes=[-1], layer_hidden=subs[P - 1:P].numpy(), drafter=None))
        stop = "max_tokens"
        done = max_new_tokens <= 1
        if stop_at_eos and first == self.eos:
            stop, done = "eos", True
        while not done:
            base = len(seq) - 1
            self.step_io = new_io()
            tokens, parents, qs = self.propose(seq)
            io = self.step_io
            ver_tokens = [seq[-1]] + tokens
            ver_pos = [base] + [base + depth_of(parents, n) for n in range(len(tokens))]
            logits, final, entering, subs, kv = self.target_forward(ver_tokens, ver_pos, self.tree_mask(base, parents))
            accepted, emitted, decisions, nodes, draws = self.verify(tokens, parents, qs, logits, base + 1)
            keep = [0] + [1 + n for n in accepted]
            self.append_cache(kv, keep)
            self.feats = torch.cat([self.feats, self.features_of(final, entering, keep)], dim=0)
            out = []
            for t in emitted:
                out.append(t)
                output.append(t)
                seq.append(t)
                if stop_at_eos and t == self.eos:
                    stop, done = "eos", True
                    break
                if len(output) == max_new_tokens:
                    done = True
                    break
            draft_rows = sorted(qs)
            steps.append(dict(
                position=base + 1, emitted=out, draft_tokens=tokens, draft_parents=parents,
                accepted_path=accepted, accept_decisions=decisions, accept_nodes=nodes,
                accept_uniforms=list(draws.values), random_counters=draws.counters_array(),
                bonus_token=emitted[-1], target_logits=logits,
                draft_logq=np.stack([log_q(qs[r]) for r in draft_rows]) if draft_rows else None,
                draft_row_nodes=draft_rows,
                layer_row_nodes=list(range(-1, len(tokens))), layer_hidden=subs.numpy(),
                drafter=finish_io(io)))
        return dict(prompt=prompt, output=output, stop_reason=stop, steps=steps, max_new_tokens=max_new_tokens,
                    stop_at_eos=stop_at_eos)

    def method_json(self):
        m = {"method": self.method, "drafter": self.drafter_dir}
        if self.shape is None:
            m.update(tree="chain", k=self.k)
        else:
            m["tree"] = json.dumps(self.choices, separators=(",", ":"))
        return m


def new_io():
    return {"tokens": [], "positions": [], "calls": [], "features": [], "hidden": [], "logits": [], "call": 0}


def finish_io(io):
    return {"tokens": io["tokens"], "positions": io["positions"], "calls": io["calls"],
            "features": np.concatenate(io["features"]).astype(np.float32),
            "hidden": np.concatenate(io["hidden"]).astype(np.float32),
            "logits": np.concatenate(io["logits"]).astype(np.float32)}


def log_q(q):
    with np.errstate(divide="ignore"):
        return np.where(q > 0, np.log(np.where(q > 0, q, 1.0)), -np.inf).astype(np.float32)


# The heads load as the PyTorch cross-check loads them (one loader for both).
from crosscheck import load_head  # noqa: E402,F401
