"""Checkpoints written by Hugging Face transformers load unchanged in specdec and agree with
transformers' own forward pass and greedy generation.

Every architecture specdec supports is built with transformers from a seeded random
initialisation (tiny shapes), written with save_pretrained, and then:

* loaded by specdec as written (no conversion step): ``specdec forward`` writes the logits and
  the output_hidden_states of one causal forward pass, compared with transformers' forward;
* decoded greedily by both: transformers ``generate(do_sample=False)`` and ``specdec generate
  --ignore-eos --json`` must emit the same 16 tokens. The smallest gap between the two largest
  logits along transformers' greedy path is printed per case (and the smallest over all cases at
  the end), so a near-tie that could make the comparison fragile is visible.

Cases: Llama with GQA (untied lm_head), tied embeddings, q/k/v/o and MLP biases; Llama-3 and
linear RoPE scaling (rope_type llama3, linear); Mistral with a sliding window shorter than the
sequence; Qwen2 (q/k/v biases; a sliding window on the layers transformers v5's layer_types
names); Qwen3 (q/k norms, head_dim != hidden/heads). Each is stored as F32, BF16 or F16, in one
file or sharded (model.safetensors.index.json), so that every dtype and both layouts occur, and
test_case_feature_matters checks that the feature a case is about changes transformers' logits
by far more than the bound (so agreement shows specdec implements it).

Tolerance policy. The weights are first rounded to the stored dtype, and transformers runs in
float32 on exactly those values: the reference model is transformers reading the saved files back
with dtype=float32 (BF16 and F16 widen to float32 exactly, as specdec reads them). So both sides
compute the same function in float32 and differ only by reduction order. The bounds
are those of the PyTorch cross-check of the bundled models (tests/models/pytorch_crosscheck.hpp):
logits |specdec - transformers| <= 1e-4 absolute, hidden states <= 1e-4 * max(1, |transformers|)
(the residual stream grows with depth); generated tokens are compared exactly. specdec's optimized
cpu backend (which keeps BF16/F16 weights as stored) must match its reference bit for bit.

Refusals: configs and tensors a user can plausibly hand specdec that it does not support or that
are malformed must fail with a message naming the file and the field or tensor.
"""
import importlib.metadata as md
import json
import os
import struct

import h5py
import numpy as np
import pytest
import torch
import transformers

LOGIT_BOUND = 1e-4
HIDDEN_BOUND = 1e-4
NEW_TOKENS = 16
# Prompt: 20 tokens, so that Mistral's window of 5 is exceeded several times over.
PROMPT = [1, 17, 42, 5, 99, 63, 8, 120, 31, 77, 2, 54, 90, 13, 66, 101, 27, 3, 88, 45]

DTYPES = {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16}

COMMON = dict(vocab_size=128, hidden_size=48, intermediate_size=96, num_hidden_layers=3,
              num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
              rms_norm_eps=1e-5, bos_token_id=1, eos_token_id=2, pad_token_id=0)

# id: (config class name, extra config fields, stored dtype, sharded)
CASES = {
    "llama-gqa-untied-f32-single": ("LlamaConfig", {}, "f32", False),
    "llama-tied-bf16-sharded": ("LlamaConfig", {"tie_word_embeddings": True}, "bf16", True),
    "llama-biases-f16-single": ("LlamaConfig", {"attention_bias": True, "mlp_bias": True}, "f16", False),
    "llama3-rope-f16-sharded": ("LlamaConfig", {"rope_parameters": {
        "rope_type": "llama3", "rope_theta": 10000.0, "factor": 8.0, "low_freq_factor": 1.0,
        "high_freq_factor": 4.0, "original_max_position_embeddings": 16}}, "f16", True),
    "llama-linear-rope-f32-single": ("LlamaConfig", {"rope_parameters": {
        "rope_type": "linear", "rope_theta": 10000.0, "factor": 4.0}}, "f32", False),
    "mistral-window5-bf16-single": ("MistralConfig", {"sliding_window": 5}, "bf16", False),
    "qwen2-qkv-bias-f32-sharded": ("Qwen2Config", {}, "f32", True),
    # transformers v5 follows layer_types over max_window_layers (here its default, 28).
    "qwen2-layer-types-window4-f16-single": ("Qwen2Config", {
        "use_sliding_window": True, "sliding_window": 4,
        "layer_types": ["full_attention", "sliding_attention", "sliding_attention"]}, "f16", False),
    "qwen3-qk-norm-bf16-sharded": ("Qwen3Config", {"head_dim": 16}, "bf16", True),
    "qwen3-qk-norm-f32-single": ("Qwen3Config", {"head_dim": 16}, "f32", False),
}

# Smallest top-2 logit gap per case along transformers' greedy path (filled by the generation test).
GAPS = {}


def randomize(model, seed):
    """Seeded weights with enough spread that logits are far from uniform: matrices N(0, 0.15^2)
    (embeddings N(0, 1)), norms 1 + N(0, 0.1^2), biases N(0, 0.1^2) -- transformers would leave
    norms at 1 and biases at 0, which would hide a missing norm or bias."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            noise = torch.randn(p.shape, generator=g)
            if "norm" in name:
                p.copy_(1 + 0.1 * noise)
            elif name.endswith("bias"):
                p.copy_(0.1 * noise)
            elif "embed_tokens" in name:
                p.copy_(noise)
            else:
                p.copy_(0.15 * noise)


def build(case_id, root):
    cls_name, extra, dtype, sharded = CASES[case_id]
    config = getattr(transformers, cls_name)(**COMMON, **extra)
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    randomize(model, seed=sum(map(ord, case_id)))
    # Round to the stored dtype; the float32 reference is the rounded weights, widened exactly.
    model = model.to(DTYPES[dtype])
    out = os.path.join(root, case_id)
    model.save_pretrained(out, max_shard_size="40KB" if sharded else "1GB")
    # The float32 reference is transformers reading the same files back, widened exactly. (Not
    # model.to(float32): casting the model to BF16/F16 also rounded its RoPE inv_freq buffer,
    # which casting back does not undo; the files hold no such buffer.)
    reference = transformers.AutoModelForCausalLM.from_pretrained(out, dtype=torch.float32).eval()
    return out, reference


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory):
    root = str(tmp_path_factory.mktemp("hf"))
    cache = {}

    def get(case_id):
        if case_id not in cache:
            cache[case_id] = build(case_id, root)
        return cache[case_id]

    return get


def worst(actual, expected, bound, relative):
    """(ratio of the worst error to its bound, that error, its index)."""
    err = np.abs(actual.astype(np.float64) - expected.astype(np.float64))
    allowed = bound * (np.maximum(1.0, np.abs(expected)) if relative else 1.0)
    ratio = np.where(np.isfinite(actual), err / allowed, np.inf)
    i = np.unravel_index(np.argmax(ratio), ratio.shape)
    return float(ratio[i]), float(err[i]), tuple(int(x) for x in i)


@pytest.mark.parametrize("case_id", list(CASES))
def test_layout_as_written(case_id, checkpoints):
    """The directory holds what the case says (so the other tests really cover it)."""
    path, _ = checkpoints(case_id)
    _, _, dtype, sharded = CASES[case_id]
    files = sorted(os.listdir(path))
    index = os.path.join(path, "model.safetensors.index.json")
    assert os.path.exists(index) == sharded, f"{case_id}: files {files}"
    shards = [f for f in files if f.endswith(".safetensors")]
    assert (len(shards) > 1) == sharded, f"{case_id}: files {files}"
    want = {"f32": "F32", "bf16": "BF16", "f16": "F16"}[dtype]
    for shard in shards:
        with open(os.path.join(path, shard), "rb") as f:
            n = struct.unpack("<Q", f.read(8))[0]
            header = json.loads(f.read(n))
        dtypes = {v["dtype"] for k, v in header.items() if k != "__metadata__"}
        assert dtypes == {want}, f"{case_id}: {shard} stores {dtypes}"
    if CASES[case_id][1].get("tie_word_embeddings"):
        names = json.load(open(index))["weight_map"] if sharded else header
        assert "lm_head.weight" not in names, f"{case_id}: a tied checkpoint carries lm_head.weight"


@pytest.mark.parametrize("case_id", list(CASES))
def test_forward_matches_transformers(case_id, checkpoints, specdec, tmp_path):
    path, model = checkpoints(case_id)
    out = tmp_path / "forward.h5"
    specdec.run("forward", "--model", path, "--prompt-ids", ",".join(map(str, PROMPT)), "--out", out)
    with torch.no_grad():
        ref = model(torch.tensor([PROMPT]), output_hidden_states=True)
    want_logits = ref.logits[0].numpy()
    want_hidden = torch.stack(ref.hidden_states)[:, 0].numpy()  # (L+1, T, H)
    with h5py.File(out, "r") as f:
        assert list(f["tokens"][:]) == PROMPT, case_id
        logits, hidden = f["logits"][:], f["hidden"][:]
    assert logits.shape == want_logits.shape, f"{case_id}: logits {logits.shape} vs {want_logits.shape}"
    assert hidden.shape == want_hidden.shape, f"{case_id}: hidden {hidden.shape} vs {want_hidden.shape}"
    rl, el, il = worst(logits, want_logits, LOGIT_BOUND, False)
    rh, eh, ih = worst(hidden, want_hidden, HIDDEN_BOUND, True)
    print(f"{case_id}: max |logit error| {el:.3g} at (position, id) {il}; worst hidden error {eh:.3g} "
          f"({rh:.3g} of its bound) at (state, position, column) {ih}; |logits| up to {np.abs(want_logits).max():.3g}")
    assert rl <= 1.0, f"{case_id}: logit error {el:.3g} at (position, id) {il} exceeds {LOGIT_BOUND}"
    assert rh <= 1.0, (f"{case_id}: hidden-state error {eh:.3g} at (state, position, column) {ih} exceeds "
                       f"{HIDDEN_BOUND}*max(1,|x|)")
    # The optimized cpu backend keeps BF16/F16 weights as stored and must give the reference's bits.
    cpu = tmp_path / "forward-cpu.h5"
    r = specdec.run("forward", "--model", path, "--prompt-ids", ",".join(map(str, PROMPT)), "--out", cpu,
                    "--backend", "cpu", check=False)
    if r.returncode != 0 and "backend" in r.stderr and "cpu" in r.stderr and "not" in r.stderr:
        return  # this build has no cpu backend
    assert r.returncode == 0, f"{case_id}: specdec forward --backend cpu failed:\n{r.stderr}"
    with h5py.File(cpu, "r") as f:
        assert np.array_equal(f["logits"][:], logits), f"{case_id}: --backend cpu logits differ from the reference's"
        assert np.array_equal(f["hidden"][:], hidden), f"{case_id}: --backend cpu hidden states differ from the reference's"


# The feature a case is about must change transformers' output on the test prompt, or agreement
# would not show that specdec implements it: (case, config change that removes the feature).
FEATURES = {
    "mistral-window5-bf16-single": {"sliding_window": None},
    "llama3-rope-f16-sharded": {"rope_parameters": {"rope_type": "default", "rope_theta": 10000.0}},
    "llama-linear-rope-f32-single": {"rope_parameters": {"rope_type": "default", "rope_theta": 10000.0}},
    "qwen3-qk-norm-f32-single": "qk_norm",
    "qwen2-layer-types-window4-f16-single": {"layer_types": ["full_attention"] * 3},
    "llama-biases-f16-single": "biases",
}


@pytest.mark.parametrize("case_id", list(FEATURES))
def test_case_feature_matters(case_id, checkpoints):
    path, model = checkpoints(case_id)
    change = FEATURES[case_id]
    if isinstance(change, dict):
        config = transformers.AutoConfig.from_pretrained(path)
        for k, v in change.items():
            setattr(config, k, v)
        other = transformers.AutoModelForCausalLM.from_pretrained(path, config=config, dtype=torch.float32).eval()
    else:
        other = transformers.AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32).eval()
        with torch.no_grad():
            for name, p in other.named_parameters():
                if (change == "qk_norm" and ("q_norm" in name or "k_norm" in name)):
                    p.fill_(1.0)
                if change == "biases" and name.endswith("bias"):
                    p.zero_()
    with torch.no_grad():
        a = model(torch.tensor([PROMPT])).logits[0]
        b = other(torch.tensor([PROMPT])).logits[0]
    diff = float((a - b).abs().max())
    print(f"{case_id}: removing the feature changes the logits by up to {diff:.3g}")
    assert diff > 1000 * LOGIT_BOUND, f"{case_id}: the feature barely matters on the test prompt ({diff:.3g})"


@pytest.mark.parametrize("case_id", list(CASES))
def test_greedy_generation_matches_transformers(case_id, checkpoints, specdec):
    path, model = checkpoints(case_id)
    with torch.no_grad():
        g = model.generate(torch.tensor([PROMPT]), attention_mask=torch.ones(1, len(PROMPT), dtype=torch.long),
                           do_sample=False, max_new_tokens=NEW_TOKENS, min_new_tokens=NEW_TOKENS,
                           eos_token_id=None, pad_token_id=0, output_logits=True, return_dict_in_generate=True)
    want = g.sequences[0, len(PROMPT):].tolist()
    top2 = [torch.topk(step[0].float(), 2).values for step in g.logits]
    gaps = [float(v[0] - v[1]) for v in top2]
    GAPS[case_id] = min(gaps)
    j = specdec.json("generate", "--model", path, "--prompt-ids", ",".join(map(str, PROMPT)),
                     "--max-new-tokens", NEW_TOKENS, "--ignore-eos")
    got = j["output_tokens"]
    print(f"{case_id}: {NEW_TOKENS} greedy tokens, smallest top-2 logit gap {min(gaps):.3g} at step {gaps.index(min(gaps))}")
    if got != want:
        first = next(i for i in range(min(len(got), len(want))) if got[i] != want[i]) if len(got) == len(want) else None
        pytest.fail(f"{case_id}: specdec generated {got}, transformers {want}; first difference at step {first}, "
                    f"where transformers' top-2 gap is {gaps[first] if first is not None else 'n/a'}")


# ---- refusals ---------------------------------------------------------------------------------

def save_raw(path, tensors, config):
    from safetensors.torch import save_file
    os.makedirs(path, exist_ok=True)
    save_file(tensors, os.path.join(path, "model.safetensors"), metadata={"format": "pt"})
    with open(os.path.join(path, "config.json"), "w") as f:
        json.dump(config, f)


def test_refuses_gpt2(specdec, tmp_path):
    config = transformers.GPT2Config(vocab_size=64, n_positions=32, n_embd=32, n_layer=1, n_head=2)
    transformers.GPT2LMHeadModel(config).save_pretrained(tmp_path / "gpt2")
    err = specdec.fails("forward", "--model", tmp_path / "gpt2", "--prompt-ids", "1,2", "--out", tmp_path / "x.h5")
    print(err.strip())
    assert "config.json" in err and "model_type 'gpt2'" in err and "not supported" in err, err
    assert not (tmp_path / "x.h5").exists()


def test_refuses_unsupported_activation(specdec, tmp_path, checkpoints):
    src, _ = checkpoints("llama-gqa-untied-f32-single")
    dst = tmp_path / "gelu"
    os.makedirs(dst)
    config = json.load(open(os.path.join(src, "config.json")))
    config["hidden_act"] = "gelu"
    json.dump(config, open(dst / "config.json", "w"))
    os.symlink(os.path.join(src, "model.safetensors"), dst / "model.safetensors")
    err = specdec.fails("generate", "--model", dst, "--prompt-ids", "1,2")
    print(err.strip())
    assert "config.json" in err and "hidden_act" in err and "gelu" in err, err


def test_refuses_yarn_rope(specdec, tmp_path):
    config = transformers.LlamaConfig(**COMMON, rope_parameters={
        "rope_type": "yarn", "rope_theta": 10000.0, "factor": 4.0, "original_max_position_embeddings": 64})
    transformers.LlamaForCausalLM(config).save_pretrained(tmp_path / "yarn")
    err = specdec.fails("forward", "--model", tmp_path / "yarn", "--prompt-ids", "1,2", "--out", tmp_path / "x.h5")
    print(err.strip())
    assert "config.json" in err and "rope_parameters" in err and "yarn" in err, err


def test_refuses_alternating_layer_types(specdec, tmp_path, checkpoints):
    """A window on layers 0 and 2 but not 1 cannot be expressed as max_window_layers: refused,
    never silently computed with another pattern."""
    src, _ = checkpoints("qwen2-layer-types-window4-f16-single")
    dst = tmp_path / "alternating"
    os.makedirs(dst)
    config = json.load(open(os.path.join(src, "config.json")))
    config["layer_types"] = ["sliding_attention", "full_attention", "sliding_attention"]
    json.dump(config, open(dst / "config.json", "w"))
    os.symlink(os.path.join(src, "model.safetensors"), dst / "model.safetensors")
    err = specdec.fails("generate", "--model", dst, "--prompt-ids", "1,2")
    print(err.strip())
    assert "config.json" in err and "layer_types" in err, err


def test_refuses_wrong_shaped_tensor(specdec, tmp_path, checkpoints):
    from safetensors.torch import load_file
    src, _ = checkpoints("llama-gqa-untied-f32-single")
    tensors = load_file(os.path.join(src, "model.safetensors"))
    name = "model.layers.1.self_attn.k_proj.weight"
    tensors[name] = tensors[name][:-1].contiguous()  # one output row short
    save_raw(tmp_path / "bad", tensors, json.load(open(os.path.join(src, "config.json"))))
    err = specdec.fails("forward", "--model", tmp_path / "bad", "--prompt-ids", "1,2", "--out", tmp_path / "x.h5")
    print(err.strip())
    assert name in err and "shape" in err, err
    assert "model.safetensors" in err or str(tmp_path / "bad") in err, err
    assert not (tmp_path / "x.h5").exists()


def test_refuses_missing_tensor_and_shard(specdec, tmp_path, checkpoints):
    from safetensors.torch import load_file
    src, _ = checkpoints("llama-gqa-untied-f32-single")
    tensors = load_file(os.path.join(src, "model.safetensors"))
    del tensors["lm_head.weight"]  # untied: the LM head must be there
    save_raw(tmp_path / "nohead", tensors, json.load(open(os.path.join(src, "config.json"))))
    err = specdec.fails("generate", "--model", tmp_path / "nohead", "--prompt-ids", "1,2")
    print(err.strip())
    assert "lm_head.weight" in err, err

    sharded, _ = checkpoints("qwen2-qkv-bias-f32-sharded")
    dst = tmp_path / "lost-shard"
    os.makedirs(dst)
    shards = sorted(f for f in os.listdir(sharded) if f.endswith(".safetensors"))
    for f in os.listdir(sharded):
        if f != shards[-1]:
            os.symlink(os.path.join(sharded, f), dst / f)
    err = specdec.fails("generate", "--model", dst, "--prompt-ids", "1,2")
    print(err.strip())
    assert shards[-1] in err, err


def test_report():
    """The library versions every result above was obtained with, and the smallest top-2 logit
    gap of all greedy comparisons (a tiny gap would make token equality fragile)."""
    names = ["torch", "transformers", "tokenizers", "safetensors", "numpy", "h5py"]
    print("libraries: " + ", ".join(f"{n} {md.version(n)}" for n in names))
    if GAPS:
        case = min(GAPS, key=GAPS.get)
        print(f"smallest top-2 logit gap over {len(GAPS)} greedy comparisons: {GAPS[case]:.3g} ({case})")
