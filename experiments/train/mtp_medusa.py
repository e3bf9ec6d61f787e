"""Training recipes for the MTP module and the Medusa heads, on the target's own final hidden
states and distributions (REFERENCES.md). The target is frozen throughout; f_i below is its final
hidden state AFTER its final norm at position i, p_i its next-token distribution at position i
(the distribution of t_{i+1}).

MTP (one DeepSeek-V3-style multi-token-prediction module; the target's embeddings and LM head
  shared and frozen): depth 1 at position i pairs f_i with the token t_{i+1}:
    x = eh_proj(cat[enorm(Emb(t_{i+1})), hnorm(f_i)])      (embedding first, no bias)
    out = a standard Llama decoder layer(x) at RoPE position i, causal over the module's positions
    logits = lm_head(shared_head.norm(out))                 (predicts t_{i+2})
  Depth d >= 2 applies the same module to (out of depth d-1 at position i, the PRE-norm output,
  token t_{i+d}) and predicts t_{i+d+1}. Teacher forcing over `depth` depths (default 3), every
  depth a full causal pass over its positions i = 0 .. T-1-d; loss sum_d w_d * CE(p_{i+d}, logits)
  with w_d = 0.6^(d-1) normalised (0.51, 0.31, 0.18 for three depths, FastMTP's weights).
Medusa (Medusa-1: K heads of one ResBlock each on the frozen target): head k on f_i:
    x = f_i + SiLU(W_k f_i + b_k);  logits_k = W_k^out x      (predicts t_{i+k+2})
  W_k zero-initialised (the ResBlock starts as the identity; b_k keeps nn.Linear's default
  initialisation), W_k^out copied from the target's LM head and trained. Loss
  sum_k 0.8^k * CE(p_{i+k+1}, logits_k) (the Medusa paper's lambda_k = 0.8^k).
"""
import json
import math
import os

import torch
import torch.nn as nn
import torch.nn.functional as F

import common
import corpus
import export
from llama import DecoderLayer, RMSNorm, causal_mask, init_weights, rope_cos_sin

MEDUSA_DECAY = 0.8
MTP_DECAY = 0.6


def mtp_weights(depth):
    """FastMTP's depth weights: 0.6^(d-1) normalised, to two decimals (0.51, 0.31, 0.18)."""
    raw = [MTP_DECAY ** d for d in range(depth)]
    return [round(w / sum(raw), 2) for w in raw]


class MTPModule(nn.Module):
    """One DeepSeek-V3 MTP module on a frozen target (its embeddings and LM head shared)."""

    def __init__(self, target):
        super().__init__()
        s = target.shape
        self.shape = s
        self.target = [target]  # not a submodule: frozen, never saved with the module
        H = s.hidden_size
        self.enorm = RMSNorm(H, s.rms_norm_eps)
        self.hnorm = RMSNorm(H, s.rms_norm_eps)
        self.eh_proj = nn.Linear(2 * H, H, bias=False)
        self.layer = DecoderLayer(s)
        self.shared_head_norm = RMSNorm(H, s.rms_norm_eps)
        init_weights(self)
        with torch.no_grad():  # start from the target's own final norm, as EAGLE-3's head does
            self.shared_head_norm.weight.copy_(target.norm.weight)

    def forward(self, tokens, feats, positions, mask):
        """tokens (B, T): t_{i+d}; feats (B, T, H): f_i (depth 1) or the previous depth's output;
        positions (B, T); mask (T, T). Returns (logits (B, T, V), out (B, T, H) before the norm)."""
        t = self.target[0]
        emb = t.embed_tokens(tokens).detach()
        cos, sin = rope_cos_sin(positions, self.shape.head_dim, self.shape.rope_theta)
        x = self.eh_proj(torch.cat([self.enorm(emb), self.hnorm(feats)], dim=-1))
        out, _ = self.layer(x, cos, sin, mask)
        return self.shared_head_norm(out) @ t.output_weight().detach().t(), out

    def unroll(self, tokens, final_hidden, depth):
        """Teacher-forced chain over `depth` depths on a window tokens (B, T) with the target's
        final hidden states (B, T, H). Depth d (1-based) covers positions i = 0 .. T-1-d.
        Returns [(logits_d, out_d)] per depth."""
        B, T = tokens.shape
        feats, outs = final_hidden, []
        for d in range(1, depth + 1):
            n = T - d
            if n <= 0:
                break
            positions = torch.arange(n)[None].expand(B, n)
            logits, out = self(tokens[:, d:], feats[:, :n], positions, causal_mask(n))
            outs.append((logits, out))
            feats = out
        return outs


class MedusaHeads(nn.Module):
    """K Medusa heads of one ResBlock each (FasterDecoding/Medusa's MedusaModel.medusa_head)."""

    def __init__(self, target, num_heads):
        super().__init__()
        s = target.shape
        self.shape = s
        H, V = s.hidden_size, s.vocab_size
        self.res = nn.ModuleList([nn.Linear(H, H, bias=True) for _ in range(num_heads)])
        self.out = nn.ModuleList([nn.Linear(H, V, bias=False) for _ in range(num_heads)])
        with torch.no_grad():
            for k in range(num_heads):
                nn.init.zeros_(self.res[k].weight)
                self.out[k].weight.copy_(target.output_weight())

    def forward(self, hidden):
        """hidden (B, T, H): the target's final (post-norm) states. Returns per head
        (logits (B, T, V), ResBlock output (B, T, H))."""
        out = []
        for res, proj in zip(self.res, self.out):
            x = hidden + F.silu(res(hidden))
            out.append((proj(x), x))
        return out


def soft_ce(logits, target_probs):
    return -(target_probs * F.log_softmax(logits, dim=-1)).sum(-1).mean()


@torch.no_grad()
def target_pass(target, tokens):
    logits, hidden = target(tokens)
    return hidden[-1].detach(), torch.softmax(logits, dim=-1)


def mtp_loss(module, tokens, final_hidden, probs, depth):
    weights = mtp_weights(depth)
    total, parts = 0.0, []
    for d, (logits, _) in enumerate(module.unroll(tokens, final_hidden, depth), start=1):
        loss_d = soft_ce(logits, probs[:, d:])
        total = total + weights[d - 1] * loss_d
        parts.append(loss_d.item())
    return total, parts


def medusa_loss(heads, final_hidden, probs):
    T = final_hidden.shape[1]
    total, parts = 0.0, []
    for k, (logits, _) in enumerate(heads(final_hidden)):
        n = T - k - 1  # positions i with a target distribution at i + k + 1 <= T - 1
        loss_k = soft_ce(logits[:, :n], probs[:, k + 1:k + 1 + n])
        total = total + (MEDUSA_DECAY ** k) * loss_k
        parts.append(loss_k.item())
    return total, parts


@torch.no_grad()
def heldout_agreement(kind, model, target, args, depth):
    """Per domain and per depth (MTP) or head (Medusa): the fraction of held-out teacher-forced
    positions where the drafter's argmax equals the target's, and the cross-entropy against the
    target's distribution."""
    model.eval()
    out = {}
    for domain in corpus.DOMAINS:
        x = common.heldout_windows(args.data, domain, args.seq, args.eval_windows)[:, :-1]
        f, probs = target_pass(target, x)
        T = x.shape[1]
        rows = []
        if kind == "mtp":
            for d, (logits, _) in enumerate(model.unroll(x, f, depth), start=1):
                rows.append((logits, probs[:, d:]))
        else:
            for k, (logits, _) in enumerate(model(f)):
                n = T - k - 1
                rows.append((logits[:, :n], probs[:, k + 1:k + 1 + n]))
        out[domain] = [{"top1_agreement": (lg.argmax(-1) == p.argmax(-1)).float().mean().item(),
                        "cross_entropy": soft_ce(lg, p).item()} for lg, p in rows]
    model.train()
    return out


def mtp_config(target_dir):
    """The target's config.json plus num_nextn_predict_layers: 1 (the DeepSeek-V3 layout)."""
    c = json.load(open(os.path.join(target_dir, "config.json")))
    c["num_nextn_predict_layers"] = 1
    return c


def mtp_tensors(module):
    """DeepSeek-V3 names, prefix model.layers.{L}. with L the target's layer count; no
    embed_tokens and no shared_head.head (the target's are shared)."""
    p = f"model.layers.{module.shape.num_hidden_layers}."
    t = {p + "enorm.weight": module.enorm.weight, p + "hnorm.weight": module.hnorm.weight,
         p + "eh_proj.weight": module.eh_proj.weight, p + "shared_head.norm.weight": module.shared_head_norm.weight}
    t.update(export.layer_tensors(p, module.layer))
    return t


def medusa_config(heads, target_name):
    s = heads.shape
    return {"base_model_name_or_path": target_name, "hidden_size": s.hidden_size,
            "medusa_num_heads": len(heads.res), "medusa_num_layers": 1, "vocab_size": s.vocab_size}


def medusa_tensors(heads):
    """FasterDecoding/Medusa's state-dict names: head k is nn.Sequential(ResBlock, Linear)."""
    t = {}
    for k, (res, proj) in enumerate(zip(heads.res, heads.out)):
        t[f"{k}.0.linear.weight"] = res.weight
        t[f"{k}.0.linear.bias"] = res.bias
        t[f"{k}.1.weight"] = proj.weight
    return t


def load_mtp(model_dir, target):
    module = MTPModule(target)
    tensors = export.read_safetensors(os.path.join(model_dir, "model.safetensors"))
    with torch.no_grad():
        for name, p in mtp_tensors(module).items():
            p.copy_(tensors[name])
    module.eval()
    return module


def load_medusa(model_dir, target):
    c = json.load(open(os.path.join(model_dir, "config.json")))
    heads = MedusaHeads(target, c["medusa_num_heads"])
    tensors = export.read_safetensors(os.path.join(model_dir, export.MEDUSA_WEIGHTS))
    with torch.no_grad():
        for name, p in medusa_tensors(heads).items():
            p.copy_(tensors[name])
    heads.eval()
    return heads


TITLES = {"mtp": "MTP module (DeepSeek-V3 layout)", "medusa": "Medusa heads (FasterDecoding/Medusa layout)"}


def train(args):
    kind = args.command
    torch.manual_seed(args.seed)
    _, target = export.load_llama(args.target)
    target.requires_grad_(False)
    target.eval()
    target_name = os.path.basename(os.path.normpath(args.target))
    if kind == "mtp":
        depth = args.depth or 3
        model = MTPModule(target)
        names = ["loss"] + [f"ce{d}" for d in range(1, depth + 1)]
    else:
        depth = args.depth or 4  # heads
        model = MedusaHeads(target, depth)
        names = ["loss"] + [f"ce{k}" for k in range(depth)]
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=args.lr, betas=(0.9, 0.95), weight_decay=0.0)
    batches = common.Batches(args.data, args.seq, args.batch, args.seed, limit_tokens=args.limit_tokens)
    log = common.LossLog(names)
    running = None
    for step in range(args.steps):
        lr = common.lr_at(step, args.steps, args.lr, args.warmup)
        common.set_lr(opt, lr)
        tokens = batches.next()[:, :-1]
        f, probs = target_pass(target, tokens)
        if kind == "mtp":
            loss, parts = mtp_loss(model, tokens, f, probs, depth)
        else:
            loss, parts = medusa_loss(model, f, probs)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        values = [loss.item()] + parts
        values = (values + [float("nan")] * len(names))[:len(names)]
        running = values if running is None else [0.9 * r + 0.1 * v for r, v in zip(running, values)]
        if step % args.log_every == 0 or step == args.steps - 1:
            log.log(step, lr, running)
    seconds = log.seconds()
    held = heldout_agreement(kind, model, target, args, depth)
    count = sum(p.numel() for p in model.parameters())
    s = model.shape
    label = "depth" if kind == "mtp" else "head"
    first = 1 if kind == "mtp" else 0
    if kind == "mtp":
        shape_line = (f"One DeepSeek-V3 MTP module for the bundled target (`{target_name}`): enorm, hnorm, eh_proj"
                      f" ({2 * s.hidden_size} -> {s.hidden_size}, no bias), one Llama decoder layer of the target's shape"
                      f" (hidden {s.hidden_size}, {s.num_attention_heads} heads / {s.num_key_value_heads} KV heads,"
                      f" SwiGLU {s.intermediate_size}), shared_head.norm; the target's embeddings and LM head are shared"
                      f" (not stored); {count:,} parameters, stored as `model.layers.{s.num_hidden_layers}.*`.")
        objective = (f"Objective: teacher forcing over {depth} depths (the module applied recursively, its own pre-norm"
                     f" outputs as the next depth's features at every position), loss sum_d w_d * CE against the"
                     f" target's distribution, w = {mtp_weights(depth)} (experiments/train/mtp_medusa.py).")
    else:
        shape_line = (f"{depth} Medusa heads for the bundled target (`{target_name}`), 1 ResBlock each"
                      f" (x + SiLU(W x + b), {s.hidden_size} x {s.hidden_size}) then a {s.hidden_size} -> {s.vocab_size}"
                      f" projection; head k on the target's final hidden state at i predicts t(i+k+2); {count:,} parameters.")
        objective = ("Objective (Medusa-1, frozen target): ResBlock weights zero-initialised, projections copied from the"
                     f" target's LM head; loss sum_k {MEDUSA_DECAY}^k * CE against the target's distribution at i+k+1"
                     " (experiments/train/mtp_medusa.py).")
    lines = [
        shape_line,
        "Data: the target's own final hidden states and distributions over the corpus of the target"
        " (King James Bible + Python standard library, every 20th document held out).",
        objective,
        f"Training: {args.steps} steps of {args.batch} x {args.seq} tokens, AdamW (lr {args.lr}, warmup {args.warmup},"
        f" cosine to 10%), gradient clip 1.0, seed {args.seed}, fp32 on the CPU ({args.threads} threads).",
        "Final training losses (EMA): " + ", ".join(f"{n} {v:.4f}" for n, v in zip(names, running) if not math.isnan(v))
        + f". Wall time: {seconds / 60:.1f} min.",
        f"Held-out (teacher-forced, {args.eval_windows} windows of {args.seq} tokens per domain): top-1 agreement with"
        f" the target's argmax and cross-entropy against its distribution per {label} (table)."
        + (" Depth d reads the true token t(i+d) and attends over every earlier true token, so depths 2 and 3"
           " measure the module, not chained drafting (which feeds it its own drafts)." if kind == "mtp" else ""),
        f"Reproduce: `/usr/bin/python3 experiments/train/train.py {kind} --data DATA --target TARGET --out DIR`.",
    ]
    header = [label] + [f"{d} {m}" for d in held for m in ("agreement", "CE")]
    rows = []
    for j in range(len(next(iter(held.values())))):
        rows.append([j + first] + [f"{held[d][j][m]:.{3 if m == 'top1_agreement' else 4}f}"
                                   for d in held for m in ("top1_agreement", "cross_entropy")])
    card = common.card(TITLES[kind], lines, (header, rows))
    if kind == "mtp":
        export.write_model_dir(args.out, mtp_config(args.target), mtp_tensors(model), card,
                               {"train_log.csv": log.csv_text()})
    else:
        export.write_model_dir(args.out, medusa_config(model, target_name), medusa_tensors(model), card,
                               {"train_log.csv": log.csv_text()}, weights_name=export.MEDUSA_WEIGHTS)
    summary = {"parameters": count, "steps": args.steps, "final": dict(zip(names, running)), "heldout": held,
               "seconds": seconds}
    print(json.dumps(summary), flush=True)
    return summary
