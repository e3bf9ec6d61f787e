"""PyTorch forwards that specdec's drafter heads are compared with, for test_heads.py.

Conventions (those of experiments/train/crosscheck.py): the target's hidden states are transformers'
output_hidden_states (L+1, T, H); the head's teacher-forced first step pairs the target feature f_i
with the token t_{i+1} at position i, i < N = T-1; "hidden" is the last layer's output before the
final norm. P-EAGLE appends K-1 mask slots (the mask token, the learned mask_hidden) at positions
N..N+K-2, attending causally to the N real pairs and to each other.

- speculators heads run through the library's own model classes and forward (Eagle3DraftModel /
  PEagleDraftModel loaded with from_pretrained, eager attention); logits and hidden are taken
  from its lm_head and final norm with forward hooks. P-EAGLE's training forward samples its
  slots at random (COD); its sampler is replaced by the fixed layout above.
- SafeAILab heads run through the small forward below, written from SafeAILab EAGLE's published
  architecture: EAGLE-1 = fc(cat(emb, f)) -> one Llama layer without input norm -> the target's
  LM head; EAGLE-3 = fc(cat(aux states)) -> a layer over cat(input_norm(emb), hidden_norm(g)) with
  residual g -> norm -> own LM head over the draft vocabulary.
"""
import json
import os

import torch
import torch.nn.functional as F


def target_forward(target_dir, tokens):
    """(logits (T, V), hidden (L+1, T, H)) of transformers' forward, float32."""
    from transformers import AutoModelForCausalLM
    model = AutoModelForCausalLM.from_pretrained(target_dir, dtype=torch.float32)
    model.eval()
    with torch.no_grad():
        out = model(torch.tensor([tokens]), output_hidden_states=True)
    return out.logits[0], torch.stack([h[0] for h in out.hidden_states])


class _Stop(Exception):
    pass


def _hooked(model, stop_after_lm_head):
    """Forward hooks that record the final norm's input and the LM head's output."""
    seen = {}

    def on_norm(_m, args, _out):
        seen["hidden"] = args[0][0].detach().clone()

    def on_head(_m, _args, out):
        seen["logits"] = out[0].detach().clone()
        if stop_after_lm_head:
            raise _Stop()
    handles = [model.norm.register_forward_hook(on_norm), model.lm_head.register_forward_hook(on_head)]
    return seen, handles


def load_speculators(head_dir):
    """The head as speculators loads it (its from_pretrained, verifier weights from the path in
    its config), with eager attention so that it runs on the CPU without compiling."""
    from speculators import SpeculatorModel, SpeculatorModelConfig
    config = SpeculatorModelConfig.from_pretrained(head_dir)
    config.transformer_layer_config._attn_implementation = "eager"
    # float32 whatever the stored precision: the same function specdec computes from those weights
    model = SpeculatorModel.from_pretrained(head_dir, config=config, dtype=torch.float32)
    model.eval()
    return model


def speculators_aux_layers(model, num_target_layers):
    ids = model.config.eagle_aux_hidden_state_layer_ids
    return list(ids) if ids else [2, num_target_layers // 2, num_target_layers - 3]


def speculators_eagle3_step(model, tokens, hidden):
    """Teacher-forced first step of a speculators EAGLE-3 head: (logits (N, Vd), hidden (N, H))."""
    N = len(tokens) - 1
    aux = speculators_aux_layers(model, hidden.shape[0] - 1)
    feats = torch.cat([hidden[a, :N] for a in aux], dim=-1)[None]
    seen, handles = _hooked(model, stop_after_lm_head=False)
    try:
        with torch.no_grad():
            model(hidden_states=feats, input_ids=torch.tensor([tokens[1:]]),
                  document_ids=torch.zeros(1, N, dtype=torch.long),
                  position_ids=torch.arange(N)[None], ttt_steps=1)
    finally:
        for h in handles:
            h.remove()
    return seen["logits"], seen["hidden"]


def speculators_peagle_step(model, tokens, hidden, K):
    """One parallel forward of a speculators P-EAGLE head over the N real pairs and K-1 mask slots:
    (logits (N+K-1, Vd), hidden (N+K-1, H), slot tokens, slot positions)."""
    import speculators.models.peagle.core as core
    N = len(tokens) - 1
    S = N + K - 1
    aux = speculators_aux_layers(model, hidden.shape[0] - 1)
    feats = torch.cat([hidden[a, :N] for a in aux], dim=-1)
    # The library gathers ids and states at every slot's position before choosing mask values,
    # so both are padded to S (the padding is replaced by the mask token / mask_hidden).
    feats = torch.cat([feats, torch.zeros(K - 1, feats.shape[1])])[None]
    ids = torch.tensor([tokens[1:] + [0] * (K - 1)])
    anchors = torch.cat([torch.arange(N), torch.full((K - 1,), N - 1)])
    depths = torch.cat([torch.zeros(N, dtype=torch.long), torch.arange(1, K)])

    def fixed_layout(**_kw):
        return anchors, depths
    saved = core.generate_cod_sample_indices
    core.generate_cod_sample_indices = fixed_layout
    seen, handles = _hooked(model, stop_after_lm_head=True)
    try:
        with torch.no_grad():
            model(hidden_states=feats, input_ids=ids, document_ids=torch.zeros(1, S, dtype=torch.long),
                  verifier_last_hidden_states=torch.zeros(1, S, model.hidden_size), num_depths=K)
    except _Stop:
        pass
    finally:
        core.generate_cod_sample_indices = saved
        for h in handles:
            h.remove()
    slot_tokens = tokens[1:] + [model.config.mask_token_id] * (K - 1)
    return seen["logits"], seen["hidden"], slot_tokens, list(range(S))


# --- SafeAILab EAGLE architecture ----------------------------------------------------------

def _rms(x, w, eps):
    return w * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps))


def _rope(x, positions, theta):
    hd = x.shape[-1]
    inv = 1.0 / (theta ** (torch.arange(0, hd, 2, dtype=torch.int64).float() / hd))
    freqs = positions.float()[:, None] * inv[None]
    emb = torch.cat([freqs, freqs], dim=-1)
    cos, sin = emb.cos(), emb.sin()
    half = hd // 2
    rot = torch.cat([-x[..., half:], x[..., :half]], dim=-1)
    return x * cos + rot * sin


def _layer(t, p, c, attn_in, residual, positions):
    heads, kvh = c["num_attention_heads"], c["num_key_value_heads"]
    hd = c["hidden_size"] // heads
    T = attn_in.shape[0]
    q = (attn_in @ t[p + "self_attn.q_proj.weight"].T).view(T, heads, hd).transpose(0, 1)
    k = (attn_in @ t[p + "self_attn.k_proj.weight"].T).view(T, kvh, hd).transpose(0, 1)
    v = (attn_in @ t[p + "self_attn.v_proj.weight"].T).view(T, kvh, hd).transpose(0, 1)
    theta = c.get("rope_theta", 10000.0)
    q, k = _rope(q, positions, theta), _rope(k, positions, theta)
    k = k.repeat_interleave(heads // kvh, dim=0)
    v = v.repeat_interleave(heads // kvh, dim=0)
    scores = q @ k.transpose(-1, -2) / hd ** 0.5
    scores = scores.masked_fill(torch.ones(T, T, dtype=torch.bool).triu(1), float("-inf"))
    a = (torch.softmax(scores, dim=-1) @ v).transpose(0, 1).reshape(T, heads * hd)
    x = residual + a @ t[p + "self_attn.o_proj.weight"].T
    h = _rms(x, t[p + "post_attention_layernorm.weight"], c["rms_norm_eps"])
    m = F.silu(h @ t[p + "mlp.gate_proj.weight"].T) * (h @ t[p + "mlp.up_proj.weight"].T)
    return x + m @ t[p + "mlp.down_proj.weight"].T


def safeailab_step(head_dir, target_dir, kind, tokens, hidden, tensors=None):
    """Teacher-forced first step of a SafeAILab EAGLE-1 / EAGLE-3 head: (logits, hidden)."""
    from safetensors.torch import load_file
    c = json.load(open(os.path.join(head_dir, "config.json")))
    t = tensors if tensors is not None else load_file(os.path.join(head_dir, "model.safetensors"))
    target = load_file(os.path.join(target_dir, "model.safetensors"))
    N = len(tokens) - 1
    emb_w = t.get("embed_tokens.weight", target["model.embed_tokens.weight"])
    emb = emb_w[torch.tensor(tokens[1:])]
    positions = torch.arange(N)
    L = hidden.shape[0] - 1
    if kind == "eagle1":
        f = hidden[L, :N]  # the target's final (normed) hidden state
        x = torch.cat([emb, f], dim=-1) @ t["fc.weight"].T
        if "fc.bias" in t:
            x = x + t["fc.bias"]
        out = _layer(t, "layers.0.", c, x, x, positions)
        return out @ target["lm_head.weight"].T, out
    aux = [2, L // 2, L - 3]
    g = torch.cat([hidden[a, :N] for a in aux], dim=-1) @ t["fc.weight"].T
    eps = c["rms_norm_eps"]
    attn_in = torch.cat([_rms(emb, t["midlayer.input_layernorm.weight"], eps),
                         _rms(g, t["midlayer.hidden_norm.weight"], eps)], dim=-1)
    out = _layer(t, "midlayer.", c, attn_in, g, positions)
    return _rms(out, t["norm.weight"], eps) @ t["lm_head.weight"].T, out
