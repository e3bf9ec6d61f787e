"""Drafter-head checkpoints as the libraries users have write them, for test_heads.py.

- a small Llama target written by transformers (save_pretrained);
- EAGLE-3 and P-EAGLE heads built and saved by vLLM's speculators library with its own config and
  model classes (Eagle3SpeculatorConfig / Eagle3DraftModel, PEagleSpeculatorConfig /
  PEagleDraftModel), its own draft-vocabulary mapping (build_vocab_mappings_from_distribution,
  load_vocab_mappings) and its own verifier loading (load_verifier_weights);
- EAGLE-1 and EAGLE-3 heads in SafeAILab EAGLE's published layout (tensor names and config keys of
  its released heads), written with safetensors, and an EAGLE-1 head as SafeAILab released most of
  them: a pickled pytorch_model.bin.

- MTP modules (test_mtp_medusa.py) in DeepSeek-V3's, Qwen3-Next's and MiMo's layouts, written from
  the PyTorch modules of heads_torch.py (their state dicts carry each layout's names), beside the
  target or inside its own model.safetensors; and a speculators MTPDraftModel built and saved with
  the library's own classes;
- Medusa heads in FasterDecoding's (medusa_lm_head.safetensors) and vLLM's layouts, from the
  PyTorch Medusa modules of heads_torch.py.

Every weight is random and seeded; nothing is downloaded.
"""
import json
import os

import torch

# The target: 8 layers, so EAGLE-3's default fused layers {2, L/2, L-3} = {2, 4, 5} exist; RoPE
# theta and norm epsilon differ from every default, so a field read from the wrong place shows.
TARGET = dict(vocab_size=96, hidden_size=32, intermediate_size=64, num_hidden_layers=8, num_attention_heads=4,
              num_key_value_heads=2, head_dim=8, max_position_embeddings=256, rms_norm_eps=3e-5,
              rope_theta=20000.0, bos_token_id=1, eos_token_id=2)
DEFAULT_AUX = [2, 4, 5]
MASK_TOKEN = 3  # P-EAGLE's mask token


def _randomize(module, seed, skip=()):
    """Seeded weights of a useful size: matrices N(0, 1/fan_in) scaled up a little, norm weights
    around 1 (so a forgotten norm weight shows)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in sorted(module.named_parameters()):
            if any(name.startswith(s) for s in skip):
                continue
            if name.endswith(".bias"):  # linear biases (Qwen2's q/k/v, Medusa's blocks): small, around 0
                p.copy_(0.1 * torch.randn(p.shape, generator=g))
            elif p.dim() == 1:
                p.copy_(1.0 + 0.2 * torch.randn(p.shape, generator=g))
            else:
                p.copy_(torch.randn(p.shape, generator=g) * (1.5 / p.shape[-1] ** 0.5))


# A Qwen3 target: q/k norms, head_dim 16 != hidden / heads (speculators' default layer class).
QWEN3 = dict(head_dim=16)


def model_config(arch="llama", **overrides):
    """transformers' config of the target (arch llama, qwen2 or qwen3) or of a drafter's layers."""
    from transformers import LlamaConfig, Qwen2Config, Qwen3Config
    c = dict(TARGET)
    theta = c.pop("rope_theta")
    if arch == "qwen3":
        c.update(QWEN3)
    c.update(overrides)
    c.setdefault("rope_parameters", {"rope_type": "default", "rope_theta": theta})
    cls = {"llama": LlamaConfig, "qwen2": Qwen2Config, "qwen3": Qwen3Config}[arch]
    return cls(tie_word_embeddings=False, **c)


def make_target(out, seed=1, arch="llama", **overrides):
    """A transformers-written Llama, Qwen2 (q/k/v biases) or Qwen3 (config.json + model.safetensors);
    overrides change its shape."""
    from transformers import LlamaForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM
    torch.manual_seed(seed)
    cls = {"llama": LlamaForCausalLM, "qwen2": Qwen2ForCausalLM, "qwen3": Qwen3ForCausalLM}[arch]
    model = cls(model_config(arch, **overrides))
    _randomize(model, seed)
    model.eval()
    model.save_pretrained(out)
    return out


def _speculators_config(kind, target_dir, layers, draft_vocab, aux, depth, norm_before_residual=False,
                        norm_before_fc=False, arch="llama"):
    from speculators.config import SpeculatorsConfig, VerifierConfig
    from speculators.models.eagle3 import Eagle3SpeculatorConfig
    from speculators.models.peagle import PEagleSpeculatorConfig
    from speculators.proposals.greedy import GreedyTokenProposalConfig
    layer = model_config(arch, num_hidden_layers=layers)
    common = dict(
        transformer_layer_config=layer, draft_vocab_size=draft_vocab, eagle_aux_hidden_state_layer_ids=aux,
        norm_before_residual=norm_before_residual, norm_before_fc=norm_before_fc,
        speculators_config=SpeculatorsConfig(
            algorithm=kind, proposal_methods=[GreedyTokenProposalConfig(speculative_tokens=depth)],
            default_proposal_method="greedy", verifier=VerifierConfig.from_pretrained(target_dir)))
    if kind == "peagle":
        return PEagleSpeculatorConfig(mask_token_id=MASK_TOKEN, **common)
    return Eagle3SpeculatorConfig(**common)


def _token_frequencies(vocab, seed):
    g = torch.Generator().manual_seed(seed)
    counts = torch.randint(1, 1000, (vocab,), generator=g)
    return {i: int(c) for i, c in enumerate(counts)}


def make_speculators_head(out, target_dir, kind="eagle3", seed=2, layers=1, draft_vocab=None, aux=None,
                          depth=4, norm_before_residual=False, norm_before_fc=False, arch="llama",
                          dtype=torch.float32):
    """An EAGLE-3 (kind eagle3) or P-EAGLE (kind peagle) head built and saved by speculators.
    draft_vocab < the target's vocabulary gives a reduced draft vocabulary (d2t / t2d from a token
    frequency table, as speculators' training does); aux None leaves the fused layers to the
    library's default; arch qwen3 gives the head Qwen3 layers (for a Qwen3 target); dtype is the
    stored precision (released heads are mostly bfloat16)."""
    from speculators.models.eagle3 import Eagle3DraftModel
    from speculators.models.peagle import PEagleDraftModel
    vocab = TARGET["vocab_size"]
    draft_vocab = draft_vocab or vocab
    cfg = _speculators_config(kind, target_dir, layers, draft_vocab, aux, depth, norm_before_residual,
                              norm_before_fc, arch)
    cls = PEagleDraftModel if kind == "peagle" else Eagle3DraftModel
    torch.manual_seed(seed)
    model = cls(cfg)
    # Random trainable weights; embeddings and LM head come from the verifier as in speculators'
    # own from_training_args (P-EAGLE trains its embeddings: randomize them after loading).
    _randomize(model, seed, skip=("embed_tokens", "lm_head", "verifier_"))
    if draft_vocab != vocab:
        from speculators.train.vocab_mapping import build_vocab_mappings_from_distribution
        d2t, t2d = build_vocab_mappings_from_distribution(_token_frequencies(vocab, seed), draft_vocab, vocab)
        model.load_vocab_mappings(t2d, d2t)
    model.load_verifier_weights()
    if kind == "peagle":
        _randomize(model.embed_tokens, seed + 100)
    model.eval()
    model.to(dtype).save_pretrained(out)
    return out


# --- SafeAILab EAGLE layouts -----------------------------------------------------------------

def _layer_tensors(prefix, g, H, I, q, kv, attn_in, input_norm, hidden_norm=False, scale=1.5):
    def mat(rows, cols):
        return torch.randn(rows, cols, generator=g) * (scale / cols ** 0.5)

    def norm(n):
        return 1.0 + 0.2 * torch.randn(n, generator=g)
    t = {}
    if hidden_norm:
        t[prefix + "hidden_norm.weight"] = norm(H)
    if input_norm:
        t[prefix + "input_layernorm.weight"] = norm(H)
    t[prefix + "self_attn.q_proj.weight"] = mat(q, attn_in)
    t[prefix + "self_attn.k_proj.weight"] = mat(kv, attn_in)
    t[prefix + "self_attn.v_proj.weight"] = mat(kv, attn_in)
    t[prefix + "self_attn.o_proj.weight"] = mat(H, q)
    t[prefix + "post_attention_layernorm.weight"] = norm(H)
    t[prefix + "mlp.gate_proj.weight"] = mat(I, H)
    t[prefix + "mlp.up_proj.weight"] = mat(I, H)
    t[prefix + "mlp.down_proj.weight"] = mat(H, I)
    return t


def _safeailab_config(kind, **extra):
    """A config.json as SafeAILab's released heads have it: a Llama config of the drafter (one
    layer) with the target's vocabulary; EAGLE-1 adds 'bias', EAGLE-3 'draft_vocab_size'."""
    c = {k: v for k, v in TARGET.items()}
    c.update({"architectures": ["LlamaForCausalLM"] if kind == "eagle1" else ["LlamaForCausalLMEagle3"],
              "model_type": "llama", "num_hidden_layers": 1, "hidden_act": "silu", "pad_token_id": None,
              "pretraining_tp": 1, "rope_scaling": None, "tie_word_embeddings": False, "torch_dtype": "float32",
              "use_cache": True, "attention_bias": False, "initializer_range": 0.02})
    c.pop("head_dim")  # the released configs derive it from hidden_size / heads
    c.update(extra)
    return c


def safeailab_tensors(kind, seed=3, draft_vocab=None, embed=False, fc_bias=True):
    """The state dict of a SafeAILab EAGLE-1 or EAGLE-3 head (float32)."""
    g = torch.Generator().manual_seed(seed)
    T = TARGET
    H, I, V = T["hidden_size"], T["intermediate_size"], T["vocab_size"]
    q, kv = T["num_attention_heads"] * T["head_dim"], T["num_key_value_heads"] * T["head_dim"]
    t = {}
    if embed:
        t["embed_tokens.weight"] = 0.3 * torch.randn(V, H, generator=g)
    if kind == "eagle1":
        # Its output goes un-normed into the target's LM head: smaller weights keep the logits at
        # the size of the target's.
        t["fc.weight"] = torch.randn(H, 2 * H, generator=g) * (1.0 / (2 * H) ** 0.5)
        if fc_bias:
            t["fc.bias"] = 0.1 * torch.randn(H, generator=g)
        # layer 0 of EAGLE-1 has no input_layernorm
        t.update(_layer_tensors("layers.0.", g, H, I, q, kv, H, input_norm=False, scale=0.7))
        return t
    Vd = draft_vocab or V
    t["fc.weight"] = torch.randn(H, 3 * H, generator=g) * (1.5 / (3 * H) ** 0.5)
    t.update(_layer_tensors("midlayer.", g, H, I, q, kv, 2 * H, input_norm=True, hidden_norm=True))
    t["norm.weight"] = 1.0 + 0.2 * torch.randn(H, generator=g)
    t["lm_head.weight"] = torch.randn(Vd, H, generator=g) * (1.5 / H ** 0.5)
    # d2t / t2d as SafeAILab writes them: offsets (target = draft + d2t[draft]) and a boolean mask
    ids = sorted(torch.randperm(V, generator=g)[:Vd].tolist())
    t["d2t"] = torch.tensor([v - i for i, v in enumerate(ids)], dtype=torch.int64)
    t["t2d"] = torch.tensor([i in set(ids) for i in range(V)], dtype=torch.bool)
    return t


def make_safeailab_head(out, kind, seed=3, draft_vocab=None, embed=False, fc_bias=True, pickle=False):
    from safetensors.torch import save_file
    os.makedirs(out, exist_ok=True)
    t = safeailab_tensors(kind, seed, draft_vocab, embed, fc_bias)
    extra = {"bias": fc_bias} if kind == "eagle1" else {"draft_vocab_size": draft_vocab or TARGET["vocab_size"]}
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(_safeailab_config(kind, **extra), f, indent=2)
    if pickle:
        torch.save(t, os.path.join(out, "pytorch_model.bin"))
    else:
        save_file({k: v.contiguous() for k, v in t.items()}, os.path.join(out, "model.safetensors"),
                  metadata={"format": "pt"})
    return out


# --- MTP modules ------------------------------------------------------------------------------

# The config.json field that counts a layout's modules (DeepSeek-V3, MiMo) or its one module's
# layers (Qwen3-Next).
MTP_COUNT_FIELD = {"deepseek": "num_nextn_predict_layers", "mimo": "num_nextn_predict_layers",
                   "qwen3_next": "mtp_num_hidden_layers"}


def mtp_tensors(target_dir, layout, seed, modules=1, layers=1, own_embeddings=False, own_head=False):
    """The tensors of `modules` MTP modules of `layout` for the target at target_dir: the state
    dicts of heads_torch's layout classes (seeded random weights) under each module's prefix."""
    import heads_torch as R
    from transformers import AutoConfig
    config = AutoConfig.from_pretrained(target_dir)
    t = {}
    for j in range(modules):
        torch.manual_seed(seed + j)
        m = R.new_mtp_module(config, layout, num_layers=layers, own_embeddings=own_embeddings, own_head=own_head)
        _randomize(m, seed + 31 * j)
        prefix = R.mtp_prefix(layout, j, config.num_hidden_layers)
        t.update({prefix + k: v.detach().clone().contiguous() for k, v in m.state_dict().items()})
    return t


def make_mtp_head(out, target_dir, layout, seed=20, modules=1, layers=1, own_embeddings=False, own_head=False,
                  inside_target=False):
    """An MTP checkpoint as the models that carry one ship it: config.json = the target's with
    num_nextn_predict_layers (DeepSeek-V3, MiMo) or mtp_num_hidden_layers (Qwen3-Next), and the
    module tensors in model.safetensors: alone in `out`, or (inside_target) added to a copy of the
    target's own model.safetensors, so that `out` is both the target and the drafter."""
    import shutil
    from safetensors.torch import load_file, save_file
    t = mtp_tensors(target_dir, layout, seed, modules, layers, own_embeddings, own_head)
    with open(os.path.join(target_dir, "config.json")) as f:
        config = json.load(f)
    config[MTP_COUNT_FIELD[layout]] = layers if layout == "qwen3_next" else modules
    if inside_target:
        shutil.copytree(target_dir, out)
        weights = load_file(os.path.join(out, "model.safetensors"))
        weights.update(t)
        t = weights
    else:
        os.makedirs(out, exist_ok=True)
    save_file(t, os.path.join(out, "model.safetensors"), metadata={"format": "pt"})
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    return out


def make_speculators_mtp(out, target_dir, seed=30, steps=3):
    """A speculators MTPDraftModel for the target, built with the library's own classes
    (MTPSpeculatorConfig over the verifier's transformers config, as its from_training_args makes
    it), random trainable weights, embed_tokens / lm_head filled from the verifier by the library's
    load_verifier_weights, saved with save_pretrained (which leaves those two out)."""
    from speculators.config import SpeculatorsConfig, VerifierConfig
    from speculators.models.mtp import MTPDraftModel, MTPSpeculatorConfig
    from speculators.proposals.greedy import GreedyTokenProposalConfig
    from transformers import AutoConfig
    cfg = MTPSpeculatorConfig(
        transformer_layer_config=AutoConfig.from_pretrained(target_dir),
        speculators_config=SpeculatorsConfig(
            algorithm="mtp", proposal_methods=[GreedyTokenProposalConfig(speculative_tokens=steps)],
            default_proposal_method="greedy", verifier=VerifierConfig.from_pretrained(target_dir)))
    torch.manual_seed(seed)
    model = MTPDraftModel(cfg)
    _randomize(model, seed, skip=("embed_tokens", "lm_head", "verifier_"))
    model.load_verifier_weights()
    model.eval()
    model.save_pretrained(out)
    return out


# --- Medusa heads -----------------------------------------------------------------------------

def make_medusa_heads(out, target_dir, layout, seed=40, heads=4, layers=1, bias=True, shared_head=False,
                      logit_scale=1.0):
    """Medusa heads for the target from heads_torch's PyTorch Medusa, saved in `layout`:
    medusa (FasterDecoding: config.json {medusa_num_heads, medusa_num_layers,
    base_model_name_or_path}, medusa_lm_head.safetensors = the medusa_head state dict) or vllm
    (config.json as vLLM's MedusaConfig writes it, model.safetensors)."""
    import heads_torch as R
    from safetensors.torch import save_file
    H, V = TARGET["hidden_size"], TARGET["vocab_size"]
    torch.manual_seed(seed)
    os.makedirs(out, exist_ok=True)
    if layout == "medusa":
        assert bias and not shared_head and logit_scale == 1.0, "FasterDecoding's layout has none of these"
        m = R.FasterDecodingMedusa(H, V, heads, layers)
        _randomize(m, seed)
        state, weights = m.medusa_head.state_dict(), "medusa_lm_head.safetensors"
        config = {"architectures": ["MedusaModel"], "base_model_name_or_path": target_dir, "medusa_num_heads": heads,
                  "medusa_num_layers": layers, "transformers_version": "4.33.3"}
    else:
        m = R.VllmMedusa(H, V, heads, layers, bias=bias, shared_head=shared_head, logit_scale=logit_scale)
        _randomize(m, seed)
        state, weights = m.state_dict(), "model.safetensors"
        config = {"architectures": ["MedusaModel"], "model_type": "medusa", "hidden_size": H, "vocab_size": V,
                  "num_heads": heads, "num_hidden_layers": layers, "max_paths": 64, "topk": 10,
                  "truncated_vocab_size": V, "medusa_fc_bias": bias, "original_lm_head": shared_head,
                  "logit_scale": logit_scale}
    save_file({k: v.detach().clone().contiguous() for k, v in state.items()}, os.path.join(out, weights),
              metadata={"format": "pt"})
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    return out
