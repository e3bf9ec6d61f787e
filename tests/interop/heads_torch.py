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
- MTP modules (test_mtp_medusa.py) in the DeepSeek-V3, Qwen3-Next and MiMo layouts: the modules
  below, written from the published math around transformers' decoder layers; chained steps
  follow the drafting rule of reference/drafting/eagle_proposer.hpp (mtp_chain). speculators'
  MTPDraftModel runs through the library's own forward and MTP layer.
- Medusa heads in FasterDecoding's and vLLM's layouts: the small modules below.
"""
import copy
import json
import os

import torch
import torch.nn.functional as F
from torch import nn


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


# --- MTP modules (DeepSeek-V3, Qwen3-Next, MiMo layouts) -----------------------------------
#
# Written from the published math (REFERENCES.md, "MTP"; the DeepSeek-V3 report, vLLM's
# deepseek_mtp.py / qwen3_next_mtp.py / mimo_mtp.py), not from specdec: module j on a pair (h, t)
#   e = embed_norm(Emb(t)), h' = hidden_norm(h), x = proj(cat[e, h']) (MiMo: cat[h', e]; no bias),
#   x -> decoder layer(s) of the target's kind (transformers' own LlamaDecoderLayer /
#   Qwen2DecoderLayer / Qwen3DecoderLayer, eager attention, the target's RoPE) -> "prenorm",
#   logits = head(norm(prenorm)), head and Emb the module's own where it stores them, else the
#   target's.
# The norms are RMSNorms of the target's kind (weight * x): the layouts are exercised with the
# target's own layer kind, which is what specdec computes (a real Qwen3-Next / Qwen3.5 module
# has zero-centred (1 + w) norms and a gated attention, on targets specdec refuses).
#
# The classes mirror each layout's module structure, so that state_dict() names the tensors as the
# layout does: DeepSeek-V3 and MiMo put the module's one decoder layer at the module's prefix
# (a decoder layer with extra members), Qwen3-Next numbers its layers under mtp.layers.{l}.

def _transformers_classes(model_type):
    """(decoder layer, RMSNorm, rotary embedding) classes of transformers for the target's kind."""
    if model_type == "llama":
        from transformers.models.llama import modeling_llama as m
        return m.LlamaDecoderLayer, m.LlamaRMSNorm, m.LlamaRotaryEmbedding
    if model_type == "qwen2":
        from transformers.models.qwen2 import modeling_qwen2 as m
        return m.Qwen2DecoderLayer, m.Qwen2RMSNorm, m.Qwen2RotaryEmbedding
    if model_type == "qwen3":
        from transformers.models.qwen3 import modeling_qwen3 as m
        return m.Qwen3DecoderLayer, m.Qwen3RMSNorm, m.Qwen3RotaryEmbedding
    raise ValueError(f"no MTP reference for model_type {model_type}")


def _eager(config):
    config = copy.deepcopy(config)
    config._attn_implementation = "eager"
    return config


def _causal(T):
    return torch.full((T, T), float("-inf")).triu(1)[None, None]


def _run_layers(layers, rotary, x, positions):
    """x (T, H) through transformers decoder layers, causal over the rows in order."""
    pos = torch.as_tensor(positions, dtype=torch.long)[None]
    x = x[None]
    cos_sin = rotary(x, pos)
    mask = _causal(x.shape[1])
    for layer in layers:
        x = layer(x, attention_mask=mask, position_ids=pos, position_embeddings=cos_sin)
        if isinstance(x, tuple):
            x = x[0]
    return x[0]


class _MTPForward:
    """The module forward shared by the layouts' classes (their members: embed_norm, hidden_norm,
    proj, final_norm, own_embed, own_head, mtp_layers, rotary, hidden_first)."""

    def run(self, tokens, features, positions, target_embed, target_head, zero_embedding_at_position_0=False):
        """Rows (t, h) at `positions`, causal in row order: (logits (T, V), prenorm (T, H), normed (T, H))."""
        tokens = torch.as_tensor(tokens, dtype=torch.long)
        positions = torch.as_tensor(positions, dtype=torch.long)
        embed = self.own_embed().weight if self.own_embed() is not None else target_embed
        e = embed[tokens].clone()
        if zero_embedding_at_position_0:  # vLLM's deepseek_mtp.py: inputs_embeds[positions == 0] = 0
            e[positions == 0] = 0
        e, h = self.embed_norm()(e), self.hidden_norm()(features)
        x = self.proj()(torch.cat([h, e] if self.hidden_first else [e, h], dim=-1))
        pre = _run_layers(self.mtp_layers(), self.rotary, x, positions)
        normed = self.final_norm()(pre)
        head = self.own_head().weight if self.own_head() is not None else target_head
        return normed @ head.T, pre, normed


def _deepseek_class(Layer, Norm, Rotary):
    class DeepSeekMTPLayer(Layer, _MTPForward):
        """DeepSeek-V3's module j: model.layers.{L+j}.{enorm, hnorm, eh_proj, shared_head.{norm, head},
        embed_tokens} around a decoder layer whose tensors share the prefix."""
        hidden_first = False

        def __init__(self, config, own_embeddings, own_head):
            super().__init__(config, layer_idx=0)
            H, V, eps = config.hidden_size, config.vocab_size, config.rms_norm_eps
            self.enorm, self.hnorm = Norm(H, eps=eps), Norm(H, eps=eps)
            self.eh_proj = nn.Linear(2 * H, H, bias=False)
            self.shared_head = nn.Module()
            self.shared_head.norm = Norm(H, eps=eps)
            if own_head:
                self.shared_head.head = nn.Linear(H, V, bias=False)
            if own_embeddings:
                self.embed_tokens = nn.Embedding(V, H)
            object.__setattr__(self, "rotary", Rotary(config=config))

        def embed_norm(self): return self.enorm
        def hidden_norm(self): return self.hnorm
        def proj(self): return self.eh_proj
        def final_norm(self): return self.shared_head.norm
        def own_embed(self): return getattr(self, "embed_tokens", None)
        def own_head(self): return getattr(self.shared_head, "head", None)
        def mtp_layers(self): return [self]  # calling it runs the decoder layer's own forward
    return DeepSeekMTPLayer


def _mimo_class(Layer, Norm, Rotary):
    class MiMoMTPLayer(Layer, _MTPForward):
        """MiMo's module j: model.mtp_layers.{j}.{token_layernorm, hidden_layernorm, input_proj,
        final_layernorm} around a decoder layer at the same prefix; input_proj reads [hidden; embedding]."""
        hidden_first = True

        def __init__(self, config, own_embeddings=False, own_head=False):
            super().__init__(config, layer_idx=0)
            H, eps = config.hidden_size, config.rms_norm_eps
            self.token_layernorm, self.hidden_layernorm = Norm(H, eps=eps), Norm(H, eps=eps)
            self.input_proj = nn.Linear(2 * H, H, bias=False)
            self.final_layernorm = Norm(H, eps=eps)
            object.__setattr__(self, "rotary", Rotary(config=config))

        def embed_norm(self): return self.token_layernorm
        def hidden_norm(self): return self.hidden_layernorm
        def proj(self): return self.input_proj
        def final_norm(self): return self.final_layernorm
        def own_embed(self): return None
        def own_head(self): return None
        def mtp_layers(self): return [self]
    return MiMoMTPLayer


def _qwen3_next_class(Layer, Norm, Rotary):
    class Qwen3NextMTP(nn.Module, _MTPForward):
        """Qwen3-Next's module: mtp.{pre_fc_norm_embedding, pre_fc_norm_hidden, fc, layers.{l}, norm}."""
        hidden_first = False

        def __init__(self, config, num_layers=1):
            super().__init__()
            H, eps = config.hidden_size, config.rms_norm_eps
            self.pre_fc_norm_embedding, self.pre_fc_norm_hidden = Norm(H, eps=eps), Norm(H, eps=eps)
            self.fc = nn.Linear(2 * H, H, bias=False)
            self.layers = nn.ModuleList(Layer(config, layer_idx=l) for l in range(num_layers))
            self.norm = Norm(H, eps=eps)
            object.__setattr__(self, "rotary", Rotary(config=config))

        def embed_norm(self): return self.pre_fc_norm_embedding
        def hidden_norm(self): return self.pre_fc_norm_hidden
        def proj(self): return self.fc
        def final_norm(self): return self.norm
        def own_embed(self): return None
        def own_head(self): return None
        def mtp_layers(self): return list(self.layers)
    return Qwen3NextMTP


def mtp_prefix(layout, module, num_target_layers):
    return {"deepseek": f"model.layers.{num_target_layers + module}.", "qwen3_next": "mtp.",
            "mimo": f"model.mtp_layers.{module}."}[layout]


def new_mtp_module(config, layout, num_layers=1, own_embeddings=False, own_head=False):
    """An MTP module of `layout` for a target of transformers config `config` (random init)."""
    Layer, Norm, Rotary = _transformers_classes(config.model_type)
    config = _eager(config)
    if layout == "deepseek":
        return _deepseek_class(Layer, Norm, Rotary)(config, own_embeddings, own_head)
    if layout == "mimo":
        return _mimo_class(Layer, Norm, Rotary)(config)
    return _qwen3_next_class(Layer, Norm, Rotary)(config, num_layers)


def _checkpoint_tensors(path):
    """Every tensor of a checkpoint directory (one file or shards), float32."""
    from safetensors.torch import load_file
    out = {}
    for name in sorted(os.listdir(path)):
        if name.endswith(".safetensors"):
            out.update(load_file(os.path.join(path, name)))
    return {k: v.float() if v.is_floating_point() else v for k, v in out.items()}


def load_mtp_module(path, config, layout, module=0, num_layers=1):
    """Module `module` of the checkpoint at `path` read into the class of its layout: every
    parameter must be in the file under the layout's name and every file tensor under the
    module's prefix must be a parameter (strict in both directions)."""
    t = _checkpoint_tensors(path)
    prefix = mtp_prefix(layout, module, config.num_hidden_layers)
    mine = {k[len(prefix):]: v for k, v in t.items() if k.startswith(prefix)}
    m = new_mtp_module(config, layout, num_layers=num_layers, own_embeddings="embed_tokens.weight" in mine,
                       own_head="shared_head.head.weight" in mine)
    m.load_state_dict(mine, strict=True)
    m.eval()
    return m


class _Pinned:
    """A module run with the target's embedding and LM head (what each layout shares)."""

    def __init__(self, module, target_embed, target_head):
        self.module, self.embed, self.head = module, target_embed, target_head

    def __call__(self, tokens, features, positions, zero_embedding_at_position_0=False):
        with torch.no_grad():
            return self.module.run(tokens, features, positions, self.embed, self.head, zero_embedding_at_position_0)


def target_embed_head(target_dir):
    from safetensors.torch import load_file
    t = {}
    for name in sorted(os.listdir(target_dir)):
        if name.endswith(".safetensors"):
            t.update(load_file(os.path.join(target_dir, name)))
    embed = t["model.embed_tokens.weight"].float()
    return embed, t.get("lm_head.weight", t["model.embed_tokens.weight"]).float()


def mtp_runners(path, target_dir, layout, modules=1, num_layers=1):
    """One callable per module: (tokens, features, positions, zero0) -> (logits, prenorm, normed)."""
    from transformers import AutoConfig
    config = AutoConfig.from_pretrained(target_dir)
    embed, head = target_embed_head(target_dir)
    return [_Pinned(load_mtp_module(path, config, layout, j, num_layers), embed, head) for j in range(modules)]


# --- speculators' MTPDraftModel ----------------------------------------------------------

class SpeculatorsMTPRunner:
    """The speculators library's own MTP layer (MTPDraftModel.mtp_layers[0], its rotary embedding,
    its embed_tokens and lm_head loaded from the verifier) run over rows with explicit positions;
    the layer returns final_layernorm(layer(...)), prenorm is taken with a hook on that norm."""

    def __init__(self, model):
        self.model = model

    def __call__(self, tokens, features, positions, zero_embedding_at_position_0=False):
        m = self.model
        layer = m.mtp_layers[0]
        seen = {}
        handle = layer.final_layernorm.register_forward_hook(lambda _m, a, _o: seen.__setitem__("pre", a[0].detach().clone()))
        try:
            with torch.no_grad():
                ids = torch.as_tensor([tokens], dtype=torch.long)
                emb = m.embed_tokens(ids).clone()
                pos = torch.as_tensor([positions], dtype=torch.long)
                if zero_embedding_at_position_0:
                    emb[pos == 0] = 0
                normed = layer(hidden_states=features[None], token_embeddings=emb, attention_mask=_causal(len(tokens)),
                               position_ids=pos, position_embeddings=m.rotary_emb(features[None], pos))
                logits = m.lm_head(normed)
        finally:
            handle.remove()
        return logits[0], seen["pre"][0], normed[0]


def speculators_mtp_runners(head_dir):
    return [SpeculatorsMTPRunner(load_speculators(head_dir))]


def speculators_mtp_step(model, tokens, hidden):
    """Teacher-forced first step through the library's own MTPDraftModel.forward: (logits (N, V),
    prenorm (N, H)). Its forward runs num_speculative_steps steps over seq_len − steps − 1 rows; the
    inputs are padded by that many rows so that step 0 covers the N = T − 1 pairs (causal: the
    padding is never attended to by them)."""
    steps = model.config.num_speculative_steps
    N = len(tokens) - 1
    L = hidden.shape[0] - 1
    feats = torch.cat([hidden[L], torch.zeros(steps, hidden.shape[-1])])[None]
    ids = torch.tensor([list(tokens) + [0] * steps])
    seen = []
    layer = model.mtp_layers[0]
    handle = layer.final_layernorm.register_forward_hook(lambda _m, a, _o: seen.append(a[0].detach().clone()))
    try:
        with torch.no_grad():
            logits, _, _ = model(input_ids=ids, hidden_states=feats)
    finally:
        handle.remove()
    assert logits[0].shape[1] == N, (logits[0].shape, N)
    return logits[0][0], seen[0][0]


def mtp_chain(runners, final_hidden, seq, pos, drafts, feedback, zero0):
    """The distributions a K-chain of MTP drafting computes at one step, as specdec's EagleProposer
    defines it (the header of reference/drafting/eagle_proposer.hpp): committed pairs (h_i, t_{i+1})
    at positions i <= pos − 2 (the last one, with the pending token, is the root); the row that
    drafts depth d + 1 (d >= 1) is (fb, drafts[d − 1]) at position pos − 2 + d, run by module
    d mod n over that module's own rows (the committed pairs and the drafted rows it computed
    itself), fb being the previous row's output before (prenorm) or after (normed) the module's
    final norm. Returns the logits rows of nodes −1, 0, ..., len(drafts) − 2."""
    n = len(runners)
    base_tokens = list(seq[1:pos])
    base_feats = final_hidden[:pos - 1]
    base_pos = list(range(pos - 1))
    own = [([], [], []) for _ in range(n)]
    logits, pre, normed = runners[0](base_tokens, base_feats, base_pos, zero0)
    rows = [logits[-1]]
    fb = (pre if feedback == "prenorm" else normed)[-1]
    for d in range(1, len(drafts)):
        m = d % n
        toks, feats, poss = own[m]
        toks.append(drafts[d - 1])
        feats.append(fb)
        poss.append(pos - 2 + d)
        logits, pre, normed = runners[m](base_tokens + toks, torch.cat([base_feats, torch.stack(feats)]), base_pos + poss,
                                         zero0)
        rows.append(logits[-1])
        fb = (pre if feedback == "prenorm" else normed)[-1]
    return rows


# --- Medusa heads ----------------------------------------------------------------------------
#
# Medusa (Cai et al. 2024), written from the paper and the published layouts: head k applies L
# residual blocks x + SiLU(W x + b) to the target's final hidden state (after its norm), then a
# Linear H -> V without bias; vLLM multiplies the logits by logit_scale. Two classes mirror the
# layouts' module trees, so that state_dict() names the tensors as each does.

class MedusaResBlock(nn.Module):
    """FasterDecoding's ResBlock: x + SiLU(linear(x))."""

    def __init__(self, hidden):
        super().__init__()
        self.linear = nn.Linear(hidden, hidden)

    def forward(self, x):
        return x + F.silu(self.linear(x))


class FasterDecodingMedusa(nn.Module):
    """FasterDecoding/Medusa's medusa_head: ModuleList of Sequential(ResBlock x L, Linear(H, V, no
    bias)); its state dict is what medusa_lm_head.safetensors holds: {k}.{l}.linear.{weight,bias},
    {k}.{L}.weight."""

    def __init__(self, hidden, vocab, heads, layers):
        super().__init__()
        self.medusa_head = nn.ModuleList(
            nn.Sequential(*[MedusaResBlock(hidden) for _ in range(layers)], nn.Linear(hidden, vocab, bias=False))
            for _ in range(heads))

    def forward(self, h):
        return [head(h) for head in self.medusa_head]


class _VllmResidualBlock(nn.Module):
    def __init__(self, hidden, layers, bias):
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(hidden, hidden, bias=bias) for _ in range(layers))

    def forward(self, x):
        for layer in self.layers:
            x = x + F.silu(layer(x))
        return x


class VllmMedusa(nn.Module):
    """vLLM models/medusa.py's module tree: blocks.{k}.layers.{l}.{weight[,bias]},
    lm_heads.{k}.weight (one, lm_heads.0, under original_lm_head), logits times logit_scale."""

    def __init__(self, hidden, vocab, heads, layers, bias=False, shared_head=False, logit_scale=1.0):
        super().__init__()
        self.blocks = nn.ModuleList(_VllmResidualBlock(hidden, layers, bias) for _ in range(heads))
        self.lm_heads = nn.ModuleList(nn.Linear(hidden, vocab, bias=False) for _ in range(1 if shared_head else heads))
        self.logit_scale = logit_scale

    def forward(self, h):
        return [self.logit_scale * self.lm_heads[min(k, len(self.lm_heads) - 1)](b(h)) for k, b in enumerate(self.blocks)]


def load_medusa(head_dir):
    """The heads of a checkpoint written in either layout, read back strictly into their class."""
    from safetensors.torch import load_file
    c = json.load(open(os.path.join(head_dir, "config.json")))
    if c.get("model_type") == "medusa":
        t = load_file(os.path.join(head_dir, "model.safetensors"))
        H, V = c["hidden_size"], c["vocab_size"]
        m = VllmMedusa(H, V, c["num_heads"], c["num_hidden_layers"], c.get("medusa_fc_bias", False),
                       c.get("original_lm_head", False), c.get("logit_scale", 1.0))
    else:
        t = load_file(os.path.join(head_dir, "medusa_lm_head.safetensors"))
        V, H = t[f"0.{c['medusa_num_layers']}.weight"].shape
        m = FasterDecodingMedusa(H, V, c["medusa_num_heads"], c["medusa_num_layers"]).medusa_head
    m.load_state_dict({k: v.float() for k, v in t.items()}, strict=True)
    m.eval()
    return m


def medusa_logits(heads, hidden_row):
    """logits (K, V) of every head on one hidden row (H)."""
    with torch.no_grad():
        if isinstance(heads, nn.ModuleList):  # FasterDecoding's medusa_head
            return torch.stack([h(hidden_row) for h in heads])
        return torch.stack(heads(hidden_row))
