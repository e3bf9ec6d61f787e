"""Training recipes for the EAGLE-family drafters, on the target's own hidden states and
distributions (REFERENCES.md):

EAGLE-1: drafter position i pairs the target's final (post-norm) hidden state f_i with the token
  t_{i+1}: x = fc(cat(embed(t_{i+1}), f_i)) -> one decoder layer without input norm -> h_i.
  Loss = SmoothL1(h_i, f_{i+1}) + 0.1 * CE(target p_{i+1}, lm_head(h_i)) with the target's
  (frozen) embeddings and LM head, as EAGLE-1 does; uniform noise on the input features.
EAGLE-3: g_i = fc(cat(aux_i)) over the states entering layers (2, L/2, L-3); layer input
  cat(input_norm(embed(t_{i+1})), hidden_norm(g_i)), residual g_i; own norm and LM head.
  Training-time test: step j feeds the drafter's own output of step j-1 back (skipping fc) with
  token t_{i+j+1} at position i+j; a query at step j attends to the step-0 keys at positions <= i
  and to its own keys of steps 1..j (exactly what it sees when drafting). Loss sum_j 0.8^j * CE
  against the target's distribution at i+j+1.
P-EAGLE: EAGLE-3's layer 0 plus N-1 standard layers; mask slots carry the <pad> token (the mask
  token) and the learned mask_hidden through fc. Depth 0 is every real position; depth d keeps a
  random fraction max(0.7^d, 0.2) of depth d-1's anchors (COD subsampling); a slot (anchor a,
  depth d) sits at position a+d and attends to real slots <= a and to slots of its own anchor
  with depth <= d. Loss KL(target || draft) at position a+d+1, averaged over all slots, no decay;
  embeddings trainable, LM head frozen (copied from the target).
"""
import json
import math
import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

import common
import corpus
import export
from llama import DecoderLayer, LlamaShape, RMSNorm, causal_mask, init_weights, parameter_count, rope_cos_sin

MASK_TOKEN = corpus.PAD


def aux_layer_ids(num_layers):
    return [2, num_layers // 2, num_layers - 3]


class EagleHead(nn.Module):
    """kind: 'eagle1' | 'eagle3' | 'peagle'. The target supplies the frozen embeddings (EAGLE-1,
    EAGLE-3) and EAGLE-1's LM head."""

    def __init__(self, kind, target, layers=1):
        super().__init__()
        s = target.shape
        self.kind, self.shape = kind, s
        self.target = [target]  # not a submodule: frozen, never saved with the head
        H = s.hidden_size
        if kind == "eagle1":
            self.fc = nn.Linear(2 * H, H, bias=True)
            self.layers = nn.ModuleList([DecoderLayer(s, input_norm=False)])
        else:
            self.aux = aux_layer_ids(s.num_hidden_layers)
            self.fc = nn.Linear(len(self.aux) * H, H, bias=False)
            self.hidden_norm = RMSNorm(H, s.rms_norm_eps)
            self.layers = nn.ModuleList([DecoderLayer(s, attn_in_features=2 * H)] +
                                        [DecoderLayer(s) for _ in range(layers - 1)])
            self.norm = RMSNorm(H, s.rms_norm_eps)
            self.lm_head = nn.Linear(H, s.vocab_size, bias=False)
        init_weights(self)
        if kind != "eagle1":
            with torch.no_grad():
                self.norm.weight.copy_(target.norm.weight)
                self.lm_head.weight.copy_(target.output_weight())
        if kind == "peagle":
            self.embed_tokens = nn.Embedding(s.vocab_size, H)
            with torch.no_grad():
                self.embed_tokens.weight.copy_(target.embed_tokens.weight)
            self.mask_hidden = nn.Parameter(torch.zeros(len(self.aux) * H))
            self.lm_head.weight.requires_grad_(False)

    def embed(self, tokens):
        if self.kind == "peagle":
            return self.embed_tokens(tokens)
        return self.target[0].embed_tokens(tokens).detach()

    def features(self, hidden):
        """The target's features per position: (B, T, F)."""
        if self.kind == "eagle1":
            return hidden[-1]
        return torch.cat([hidden[i] for i in self.aux], dim=-1)

    def forward(self, tokens, feats, projected, positions, mask, past=None):
        """tokens (B, T); feats (B, T, F) or, when projected, (B, T, H); positions (B, T);
        mask (T, S) or (B, T, S). Returns (logits (B, T, V), out (B, T, H) before the norm, kv)."""
        emb = self.embed(tokens)
        cos, sin = rope_cos_sin(positions, self.shape.head_dim, self.shape.rope_theta)
        kvs = []
        if self.kind == "eagle1":
            x = self.fc(torch.cat([emb, feats], dim=-1))
            x, kv = self.layers[0](x, cos, sin, mask, past=None if past is None else past[0])
            kvs.append(kv)
            return x @ self.target[0].output_weight().detach().t(), x, kvs
        h = feats if projected else self.fc(feats)
        attn_in = torch.cat([self.layers[0].input_layernorm(emb), self.hidden_norm(h)], dim=-1)
        x, kv = self.layers[0](h, cos, sin, mask, attn_in=attn_in, past=None if past is None else past[0])
        kvs.append(kv)
        for n, layer in enumerate(self.layers[1:], start=1):
            x, kv = layer(x, cos, sin, mask, past=None if past is None else past[n])
            kvs.append(kv)
        return self.lm_head(self.norm(x)), x, kvs


def soft_ce(logits, target_probs):
    return -(target_probs * F.log_softmax(logits, dim=-1)).sum(-1).mean()


def kl(logits, target_probs):
    logq = F.log_softmax(logits, dim=-1)
    return (target_probs * (torch.log(target_probs.clamp_min(1e-30)) - logq)).sum(-1).mean()


def eagle1_loss(head, tokens, hidden, probs, noise=0.2):
    f = hidden[-1]
    N = tokens.shape[1] - 1
    feats = f[:, :N] + (torch.rand_like(f[:, :N]) - 0.5) * noise
    positions = torch.arange(N)[None].expand(tokens.shape[0], N)
    logits, out, _ = head(tokens[:, 1:], feats, False, positions, causal_mask(N))
    reg = F.smooth_l1_loss(out[:, :N - 1], f[:, 1:N])
    cls = soft_ce(logits[:, :N - 1], probs[:, 1:N])
    return reg + 0.1 * cls, [reg.item(), cls.item()]


def eagle3_loss(head, tokens, hidden, probs, steps):
    """Training-time test over `steps` unrolled drafting steps."""
    B, T = tokens.shape
    N = T - 1  # pairs (g_i, t_{i+1}), i < N
    feats = head.features(hidden)[:, :N]
    base = torch.arange(N)[None].expand(B, N)
    eye = torch.eye(N, dtype=torch.bool)
    total, parts, past = 0.0, [], None
    out = None
    for j in range(steps):
        valid = N - j  # rows i with a target distribution at i + j + 1 <= T - 1
        if valid <= 0:
            break
        toks = torch.cat([tokens[:, 1 + j:], torch.full((B, j), corpus.PAD, dtype=tokens.dtype)], dim=1)
        mask = causal_mask(N) if j == 0 else torch.cat([causal_mask(N)] + [eye] * j, dim=1)
        logits, out, kvs = head(toks, feats if j == 0 else out, j > 0, base + j, mask, past)
        layer_kv = kvs[0]
        past = [layer_kv]  # the attention layer returns (past + own) keys: the next step's past
        loss_j = soft_ce(logits[:, :valid], probs[:, 1 + j:1 + j + valid])
        total = total + (0.8 ** j) * loss_j
        parts.append(loss_j.item())
    return total, parts


def cod_layout(N, depth, rng, rate=0.7, floor=0.2):
    """COD subsampling: (anchors, depths) of every slot, depth 0 = all N real positions."""
    anchors, depths = [np.arange(N)], [np.zeros(N, dtype=np.int64)]
    kept = np.arange(N)
    for d in range(1, depth):
        kept = kept[kept + d + 1 <= N]  # the slot needs a target distribution at anchor + d + 1
        n = int(math.ceil(max(rate ** d, floor) * kept.size))
        if n == 0:
            break
        kept = np.sort(rng.choice(kept, size=n, replace=False))
        anchors.append(kept)
        depths.append(np.full(kept.size, d, dtype=np.int64))
    return np.concatenate(anchors), np.concatenate(depths)


def peagle_loss(head, tokens, hidden, probs, depth, rng):
    B, T = tokens.shape
    N = T - 1
    anchors, depths = cod_layout(N, depth, rng)
    a = torch.from_numpy(anchors)
    d = torch.from_numpy(depths)
    real = d == 0
    S = a.numel()
    toks = torch.where(real, tokens[:, 1:][:, a.clamp(max=N - 1)], torch.full((S,), MASK_TOKEN))
    mask_feat = head.fc(head.mask_hidden)  # (H): projected once, like inference
    real_feats = head.fc(head.features(hidden)[:, :N])  # (B, N, H)
    feats = torch.where(real[None, :, None], real_feats[:, a], mask_feat.expand(B, S, -1))
    positions = (a + d)[None].expand(B, S)
    mask = ((d[None, :] == 0) & (a[None, :] <= a[:, None])) | ((a[None, :] == a[:, None]) & (d[None, :] <= d[:, None]))
    logits, _, _ = head(toks, feats, True, positions, mask)
    target_pos = (a + d + 1).clamp(max=T - 1)
    valid = (a + d + 1) <= N
    loss = kl(logits[:, valid], probs[:, target_pos[valid]])
    per_depth = []
    with torch.no_grad():
        agree = (logits.argmax(-1) == probs[:, target_pos].argmax(-1)).float()
        for k in range(int(d.max()) + 1):
            sel = (d == k) & valid
            per_depth.append(agree[:, sel].mean().item() if sel.any() else float("nan"))
    return loss, [loss.item()] + per_depth[:3]


@torch.no_grad()
def target_pass(target, tokens):
    logits, hidden = target(tokens)
    return [h.detach() for h in hidden], torch.softmax(logits, dim=-1)


@torch.no_grad()
def heldout_agreement(head, target, args, depth):
    """Per domain: the fraction of held-out positions where the drafter's argmax (teacher-forced
    step 0, or P-EAGLE depth k) equals the target's, and the step-0 cross-entropy."""
    head.eval()
    out = {}
    for domain in corpus.DOMAINS:
        x = common.heldout_windows(args.data, domain, args.seq, args.eval_windows)[:, :-1]
        hidden, probs = target_pass(target, x)
        B, T = x.shape
        N = T - 1
        feats = head.features(hidden)[:, :N]
        positions = torch.arange(N)[None].expand(B, N)
        logits, _, _ = head(x[:, 1:], feats, False, positions, causal_mask(N))
        agree = (logits[:, :N - 1].argmax(-1) == probs[:, 1:N].argmax(-1)).float().mean().item()
        ce = soft_ce(logits[:, :N - 1], probs[:, 1:N]).item()
        out[domain] = {"top1_agreement": agree, "cross_entropy": ce}
    head.train()
    return out


def head_config(kind, head, args, depth):
    s = head.shape
    if kind == "eagle1":
        return export.llama_config(s, num_hidden_layers=1, extra={"bias": True})
    extra = {"draft_vocab_size": s.vocab_size, "eagle_aux_hidden_state_layer_ids": head.aux}
    if kind == "peagle":
        extra.update({"ptd_token_id": MASK_TOKEN, "trained_depth": depth})
    return export.llama_config(s, num_hidden_layers=len(head.layers), extra=extra)


def head_tensors(kind, head):
    t = {"fc.weight": head.fc.weight}
    if kind == "eagle1":
        t["fc.bias"] = head.fc.bias
        for name, p in head.layers[0].named_parameters():
            t["layers.0." + name] = p
        return t
    for name, p in head.layers[0].named_parameters():
        t["midlayer." + name] = p
    t["midlayer.hidden_norm.weight"] = head.hidden_norm.weight
    for n, layer in enumerate(head.layers[1:], start=1):
        for name, p in layer.named_parameters():
            t[f"layers.{n}." + name] = p
    t["norm.weight"] = head.norm.weight
    t["lm_head.weight"] = head.lm_head.weight
    if kind == "peagle":
        t["embed_tokens.weight"] = head.embed_tokens.weight
        t["mask_hidden"] = head.mask_hidden.detach().reshape(1, -1)
    return t


TITLES = {"eagle1": "EAGLE-1 head (SafeAILab layout)", "eagle3": "EAGLE-3 head (SafeAILab layout)",
          "peagle": "P-EAGLE drafter (AWS layout)"}


def train_head(args):
    kind = args.command
    torch.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)
    _, target = export.load_llama(args.target)
    target.requires_grad_(False)
    target.eval()
    layers = (args.layers or 2) if kind == "peagle" else 1
    depth = args.depth or (8 if kind == "peagle" else 7)
    if args.smoke:
        depth = min(depth, 3)
    head = EagleHead(kind, target, layers)
    params = [p for p in head.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=args.lr, betas=(0.9, 0.95), weight_decay=0.0)
    batches = common.Batches(args.data, args.seq, args.batch, args.seed, limit_tokens=args.limit_tokens)
    names = {"eagle1": ["loss", "reg", "cls"], "eagle3": ["loss"] + [f"ce{j}" for j in range(depth)],
             "peagle": ["loss", "kl", "agree0", "agree1", "agree2"]}[kind]
    log = common.LossLog(names)
    running = None
    for step in range(args.steps):
        lr = common.lr_at(step, args.steps, args.lr, args.warmup)
        common.set_lr(opt, lr)
        tokens = batches.next()[:, :-1]
        hidden, probs = target_pass(target, tokens)
        if kind == "eagle1":
            loss, parts = eagle1_loss(head, tokens, hidden, probs)
        elif kind == "eagle3":
            loss, parts = eagle3_loss(head, tokens, hidden, probs, depth)
        else:
            loss, parts = peagle_loss(head, tokens, hidden, probs, depth, rng)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        values = [loss.item()] + parts
        running = values if running is None else [0.9 * r + 0.1 * v for r, v in zip(running, values)]
        if step % args.log_every == 0 or step == args.steps - 1:
            log.log(step, lr, (running + [float("nan")] * len(names))[:len(names)])
    seconds = log.seconds()
    held = heldout_agreement(head, target, args, depth)
    count = sum(p.numel() for n, p in head.named_parameters())
    shape = head.shape
    lines = [
        f"Drafter for the bundled target (`{os.path.basename(os.path.normpath(args.target))}`): {len(head.layers)} layer(s),"
        f" hidden {shape.hidden_size}, {count:,} parameters"
        + (f", aux layers {head.aux}" if kind != "eagle1" else "")
        + (f", mask token <pad> ({MASK_TOKEN}), trained for {depth} parallel depths" if kind == "peagle" else "")
        + (f", training-time test over {depth} steps" if kind == "eagle3" else "") + ".",
        "Trained on the target's own hidden states and distributions over the corpus of the target"
        " (experiments/train/heads.py describes the objective).",
        f"Training: {args.steps} steps of {args.batch} x {args.seq} tokens, AdamW (lr {args.lr}, warmup {args.warmup},"
        f" cosine to 10%), gradient clip 1.0, seed {args.seed}, fp32 on the CPU ({args.threads} threads).",
        "Final training losses (EMA): " + ", ".join(f"{n} {v:.4f}" for n, v in zip(names, running) if not math.isnan(v))
        + f". Wall time: {seconds / 60:.1f} min.",
        "Held-out (teacher-forced first draft position): " + ", ".join(
            f"{d} top-1 agreement with the target {v['top1_agreement']:.3f}, cross-entropy {v['cross_entropy']:.4f} nats"
            for d, v in held.items()) + ".",
        f"Reproduce: `/usr/bin/python3 experiments/train/train.py {kind} --data DATA --target TARGET --out DIR`.",
    ]
    export.write_model_dir(args.out, head_config(kind, head, args, depth), head_tensors(kind, head),
                           common.card(TITLES[kind], lines), {"train_log.csv": log.csv_text()})
    summary = {"parameters": count, "steps": args.steps, "final": dict(zip(names, running)), "heldout": held,
               "seconds": seconds}
    print(json.dumps(summary), flush=True)
    return summary
