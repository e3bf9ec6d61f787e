"""GGUF files written by llama.cpp's own Python package (`gguf`) load in specdec as llama.cpp's
converter meant them.

* Dequantization, bit for bit: a llama-architecture model is written once per tensor type specdec
  reads (F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K) -- quantized by
  `gguf.quants.quantize` where the package can, random valid blocks for the K-quants, which it only
  dequantizes -- and `specdec convert` writes it back as float32 safetensors: every tensor must equal
  `gguf.quants.dequantize` of its stored bytes exactly, with llama.cpp's q/k row interleaving
  undone.
* Models end to end: a transformers model written to GGUF (float32) the way llama.cpp's
  convert_hf_to_gguf.py writes it -- q/k rows permuted for the llama architecture, not for qwen2 --
  decodes greedily to exactly transformers' tokens, from a text prompt through the tokenizer
  rebuilt from the GGUF metadata.
* Tokenizers: byte-level BPE tokenizers trained by `tokenizers` with each pre-tokenizer GGUF names
  (qwen2, llama-bpe, smollm, gpt-2) give, from GGUF metadata alone, the ids the `tokenizers`
  library gives on the cross-library corpus, and `specdec convert`'s tokenizer.json loads in
  `tokenizers` with the same ids.
* Refusals: an unsupported tensor type or architecture is named.
"""
import json
import os

import gguf
import numpy as np
import pytest
import torch
import transformers
from gguf import GGMLQuantizationType as Q
from safetensors.numpy import load_file
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

import test_tokenizers as tt

QUANTIZABLE = [Q.F32, Q.F16, Q.BF16, Q.Q8_0, Q.Q4_0, Q.Q4_1, Q.Q5_0, Q.Q5_1]
K_QUANTS = {Q.Q4_K: [0, 2], Q.Q5_K: [0, 2], Q.Q6_K: [208]}  # byte offsets of each block's f16 scales
NEW_TOKENS = 16
ROPE_THETA = 10000.0


def hf_config(arch, vocab_size):
    """Dimensions that are whole K-quant blocks (256) along every row."""
    cls = {"llama": transformers.LlamaConfig, "qwen2": transformers.Qwen2Config}[arch]
    return cls(vocab_size=vocab_size, hidden_size=256, intermediate_size=512, num_hidden_layers=2,
               num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512, rms_norm_eps=1e-5,
               rope_theta=ROPE_THETA, bos_token_id=1, eos_token_id=2, tie_word_embeddings=False)


def random_model(arch, vocab_size, seed):
    torch.manual_seed(seed)
    model = transformers.AutoModelForCausalLM.from_config(hf_config(arch, vocab_size), dtype=torch.float32).eval()
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            noise = torch.randn(p.shape, generator=g)
            p.copy_(1 + 0.1 * noise if "norm" in name else 0.1 * noise if name.endswith("bias") else
                    noise if "embed" in name else 0.08 * noise)
    return model


def permute(w, n_head, n_head_kv):
    """convert_hf_to_gguf.py's LlamaModel.permute: each head's two RoPE halves interleaved."""
    if n_head_kv is not None and n_head != n_head_kv:
        n_head = n_head_kv
    return w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def unpermute(w, n_head):
    return w.reshape(n_head, w.shape[0] // n_head // 2, 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


GGUF_NAMES = {"model.embed_tokens.weight": "token_embd.weight", "model.norm.weight": "output_norm.weight",
              "lm_head.weight": "output.weight"}
LAYER_NAMES = {"input_layernorm.weight": "attn_norm.weight", "self_attn.q_proj": "attn_q",
               "self_attn.k_proj": "attn_k", "self_attn.v_proj": "attn_v", "self_attn.o_proj": "attn_output",
               "post_attention_layernorm.weight": "ffn_norm.weight", "mlp.gate_proj": "ffn_gate",
               "mlp.up_proj": "ffn_up", "mlp.down_proj": "ffn_down"}


def gguf_name(hf):
    if hf in GGUF_NAMES:
        return GGUF_NAMES[hf]
    parts = hf.split(".")  # model.layers.{i}.{rest}
    rest = ".".join(parts[3:])
    for k, v in LAYER_NAMES.items():
        if rest.startswith(k):
            return f"blk.{parts[2]}." + v + rest[len(k):]
    raise KeyError(hf)


def random_k_blocks(rows, cols, qtype, rng):
    """Random blocks of a K-quant whose f16 scales are small and finite."""
    block, size = gguf.GGML_QUANT_SIZES[qtype]
    data = rng.integers(0, 256, size=(rows, cols // block, size), dtype=np.uint8)
    for offset in K_QUANTS[qtype]:
        scale = rng.uniform(1e-3, 2e-2, size=(rows, cols // block)).astype(np.float16)
        data[..., offset:offset + 2] = scale.view(np.uint8).reshape(rows, cols // block, 2)
    return data.reshape(rows, -1)


def add_tokenizer(w, tok, pre, add_bos):
    """The metadata convert_hf_to_gguf.py's _set_vocab_gpt2 writes for a byte-level BPE."""
    j = json.loads(tok.to_str())
    vocab = tok.get_vocab(with_added_tokens=True)
    by_id = {i: t for t, i in vocab.items()}
    added = {a["id"]: a for a in j["added_tokens"]}
    tokens, types = [], []
    for i in range(max(by_id) + 1):
        tokens.append(by_id.get(i, f"[PAD{i}]"))
        if i not in by_id:
            types.append(gguf.TokenType.UNUSED)
        elif i in added:
            types.append(gguf.TokenType.CONTROL if added[i]["special"] else gguf.TokenType.USER_DEFINED)
        else:
            types.append(gguf.TokenType.NORMAL)
    merges = [" ".join(m) if isinstance(m, list) else m for m in j["model"]["merges"]]
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre(pre)
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_merges(merges)
    if add_bos is not None:
        w.add_bos_token_id(add_bos)
        w.add_add_bos_token(True)
    else:
        w.add_add_bos_token(False)
    return len(tokens)


def write_gguf(path, model, arch, qtype=Q.F32, tok=None, pre=None, add_bos=None, seed=0, raw_blocks=None, metadata=None):
    """`model` as convert_hf_to_gguf.py writes it; matrices as `qtype`, or random blocks of the
    type raw_blocks names for the one GGUF tensor it names ({"blk.0.ffn_down.weight": Q.Q2_K})."""
    c = model.config
    w = gguf.GGUFWriter(str(path), arch)
    w.add_context_length(c.max_position_embeddings)
    w.add_embedding_length(c.hidden_size)
    w.add_block_count(c.num_hidden_layers)
    w.add_feed_forward_length(c.intermediate_size)
    w.add_rope_dimension_count(c.hidden_size // c.num_attention_heads)
    w.add_head_count(c.num_attention_heads)
    w.add_head_count_kv(c.num_key_value_heads)
    w.add_layer_norm_rms_eps(c.rms_norm_eps)
    w.add_rope_freq_base(ROPE_THETA)  # transformers v5 keeps it in rope_parameters
    w.add_vocab_size(c.vocab_size)
    if tok is not None:
        add_tokenizer(w, tok, pre, add_bos)
    if metadata is not None:
        metadata(w)
    w.add_eos_token_id(c.eos_token_id)
    rng = np.random.default_rng(seed)
    stored = {}
    for name, t in model.state_dict().items():
        if "rotary" in name:
            continue
        x = t.numpy()
        if arch == "llama" and name.endswith(("q_proj.weight", "q_proj.bias")):
            x = permute(x, c.num_attention_heads, c.num_attention_heads)
        if arch == "llama" and name.endswith(("k_proj.weight", "k_proj.bias")):
            x = permute(x, c.num_attention_heads, c.num_key_value_heads)
        x = np.ascontiguousarray(x, dtype=np.float32)
        if raw_blocks and gguf_name(name) in raw_blocks:
            block, size = gguf.GGML_QUANT_SIZES[raw_blocks[gguf_name(name)]]
            data = rng.integers(0, 256, size=(x.shape[0], x.shape[1] // block * size), dtype=np.uint8)
            raw = raw_blocks[gguf_name(name)]
        elif x.ndim == 1 or qtype == Q.F32:
            data, raw = x, None
        elif qtype in K_QUANTS:
            data, raw = random_k_blocks(x.shape[0], x.shape[1], qtype, rng), qtype
        else:
            data, raw = gguf.quants.quantize(x, qtype), qtype
        w.add_tensor(gguf_name(name), data, raw_dtype=raw)
        stored[gguf_name(name)] = (data, raw or Q.F32, name)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return stored


@pytest.fixture(scope="module")
def llama(tmp_path_factory):
    return random_model("llama", 256, seed=11)


@pytest.mark.parametrize("qtype", QUANTIZABLE + list(K_QUANTS), ids=lambda q: q.name)
def test_dequantization_is_the_gguf_package_s(qtype, llama, specdec, tmp_path):
    path = tmp_path / f"{qtype.name}.gguf"
    stored = write_gguf(path, llama, "llama", qtype, seed=int(qtype))
    out = tmp_path / "hf"
    specdec.run("convert", "--model", path, "--out", out, "--dtype", "F32")
    got = load_file(str(out / "model.safetensors"))
    c = llama.config
    checked = 0
    for gname, (data, t, hf) in stored.items():
        want = gguf.quants.dequantize(data, t).reshape(got[hf].shape)
        if hf.endswith("q_proj.weight"):
            want = unpermute(want, c.num_attention_heads)
        if hf.endswith("k_proj.weight"):
            want = unpermute(want, c.num_key_value_heads)
        a, b = got[hf].view(np.uint32), np.ascontiguousarray(want, dtype=np.float32).view(np.uint32)
        if not np.array_equal(a, b):
            k = np.flatnonzero(a != b)[0]
            pytest.fail(f"{qtype.name}: tensor {gname} ({hf}) differs at flat index {k}: specdec "
                        f"{got[hf].flat[k]!r}, gguf {want.flat[k]!r}")
        checked += 1
    assert checked == len(got), (checked, sorted(got))


def greedy(model, ids):
    with torch.no_grad():
        g = model.generate(torch.tensor([ids]), attention_mask=torch.ones(1, len(ids), dtype=torch.long),
                           do_sample=False, max_new_tokens=NEW_TOKENS, min_new_tokens=NEW_TOKENS,
                           eos_token_id=None, pad_token_id=0)
    return g[0, len(ids):].tolist()


@pytest.mark.parametrize("arch,pre,builder", [("llama", "llama-bpe", tt.llama3), ("qwen2", "qwen2", tt.qwen2)])
def test_model_decodes_as_transformers(arch, pre, builder, specdec, tmp_path):
    tok = builder()
    bos = tok.token_to_id("<|begin_of_text|>") if arch == "llama" else None
    vocab = tok.get_vocab_size(with_added_tokens=True)
    model = random_model(arch, vocab, seed=5)
    path = tmp_path / "m.gguf"
    write_gguf(path, model, arch, Q.F32, tok=tok, pre=pre, add_bos=bos)
    prompt = "The quick brown fox jumps over 13 lazy dogs."
    ids = tok.encode(prompt).ids
    want = greedy(model, ids)
    j = specdec.json("generate", "--model", path, "--prompt", prompt, "--max-new-tokens", NEW_TOKENS, "--ignore-eos")
    assert j["prompt_tokens"] == ids, f"{arch}: specdec tokenized the prompt as {j['prompt_tokens']}, tokenizers as {ids}"
    assert j["output_tokens"] == want, f"{arch}: specdec {j['output_tokens']}, transformers {want}"
    # Speculative decoding with the same model as its own drafter is lossless and accepts everything.
    spec = specdec.json("generate", "--model", path, "--prompt", prompt, "--max-new-tokens", NEW_TOKENS,
                        "--ignore-eos", "--method", "draft", "--drafter", path, "--k", 3)
    assert spec["output_tokens"] == want


def smollm():
    t = Tokenizer(models.BPE())
    t.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Digits(individual_digits=True),
                                               pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)])
    t.decoder = decoders.ByteLevel()
    t.train_from_iterator(tt.training_text(), trainers.BpeTrainer(
        vocab_size=600, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        special_tokens=["<|endoftext|>", "<|im_start|>", "<|im_end|>"], show_progress=False))
    return t


TOKENIZERS = {"qwen2": tt.qwen2, "llama-bpe": tt.llama3, "smollm": smollm, "gpt-2": tt.gpt2}


@pytest.mark.parametrize("pre", list(TOKENIZERS))
def test_tokenizer_from_metadata(pre, specdec, tmp_path):
    tok = TOKENIZERS[pre]()
    bos = tok.token_to_id("<|begin_of_text|>") if pre == "llama-bpe" else None
    path = tmp_path / "t.gguf"
    w = gguf.GGUFWriter(str(path), "llama")
    add_tokenizer(w, tok, pre, bos)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    for i, text in enumerate(tt.CORPUS):
        (tmp_path / "text.txt").write_bytes(text.encode("utf-8"))
        got = specdec.json("tokenize", "--model", path, "--file", tmp_path / "text.txt")["ids"]
        want = tok.encode(text).ids
        assert got == want, f"{pre}: corpus text {i} ({text[:40]!r}): specdec {got[:20]}..., tokenizers {want[:20]}..."
        decoded = specdec.json("tokenize", "--model", path, "--decode", ",".join(map(str, want)) or "0")["text"]
        if want:
            assert decoded == tok.decode(want, skip_special_tokens=False), f"{pre}: decoding corpus text {i}"


def test_sentencepiece_tokenizer_from_metadata(specdec, tmp_path):
    """A SentencePiece BPE with Llama's normalizer settings (identity, dummy prefix, whitespace
    kept), written as convert_hf_to_gguf.py's _set_vocab_sentencepiece writes it: specdec's
    tokenizer rebuilt from the metadata gives sentencepiece's ids, BOS first, and `specdec
    convert`'s tokenizer.model loads in sentencepiece with the same ids."""
    import sentencepiece as spm
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(t for t in tt.training_text() if t.strip()), encoding="utf-8")
    spm.SentencePieceTrainer.train(input=str(corpus), model_prefix=str(tmp_path / "sp"), vocab_size=600, model_type="bpe",
                                   byte_fallback=True, character_coverage=0.9995, bos_id=1, eos_id=2, unk_id=0,
                                   normalization_rule_name="identity", remove_extra_whitespaces=False,
                                   minloglevel=2, num_threads=1)
    sp = spm.SentencePieceProcessor(model_file=str(tmp_path / "sp.model"))
    tokens, scores, types = [], [], []
    for i in range(sp.get_piece_size()):
        tokens.append(sp.id_to_piece(i))
        scores.append(sp.get_score(i))
        types.append(gguf.TokenType.UNKNOWN if sp.is_unknown(i) else gguf.TokenType.CONTROL if sp.is_control(i) else
                     gguf.TokenType.UNUSED if sp.is_unused(i) else gguf.TokenType.BYTE if sp.is_byte(i) else
                     gguf.TokenType.NORMAL)

    def sentencepiece_metadata(w):
        w.add_tokenizer_model("llama")
        w.add_tokenizer_pre("default")
        w.add_token_list(tokens)
        w.add_token_scores(scores)
        w.add_token_types(types)
        w.add_bos_token_id(1)
        w.add_unk_token_id(0)
        w.add_add_space_prefix(True)

    model = random_model("llama", sp.get_piece_size(), seed=9)
    path = tmp_path / "m.gguf"
    write_gguf(path, model, "llama", Q.Q8_0, metadata=sentencepiece_metadata)
    for i, text in enumerate(tt.CORPUS):
        (tmp_path / "text.txt").write_bytes(text.encode("utf-8"))
        got = specdec.json("tokenize", "--model", path, "--file", tmp_path / "text.txt")["ids"]
        want = [1] + sp.encode(text)
        assert got == want, f"corpus text {i} ({text[:40]!r}): specdec {got[:20]}, sentencepiece {want[:20]}"
    specdec.run("convert", "--model", path, "--out", tmp_path / "hf")
    back = spm.SentencePieceProcessor(model_file=str(tmp_path / "hf" / "tokenizer.model"))
    for text in tt.CORPUS:
        assert back.encode(text) == sp.encode(text), text[:40]


def test_converted_tokenizer_json_loads_in_tokenizers(specdec, tmp_path):
    tok = tt.qwen2()
    path = tmp_path / "m.gguf"
    model = random_model("qwen2", tok.get_vocab_size(with_added_tokens=True), seed=3)
    write_gguf(path, model, "qwen2", Q.Q8_0, tok=tok, pre="qwen2")
    specdec.run("convert", "--model", path, "--out", tmp_path / "hf")
    back = Tokenizer.from_file(str(tmp_path / "hf" / "tokenizer.json"))
    for text in tt.CORPUS:
        assert back.encode(text).ids == tok.encode(text).ids, text[:40]
    # transformers reads the converted checkpoint as it is.
    hf = transformers.AutoModelForCausalLM.from_pretrained(str(tmp_path / "hf"), dtype=torch.float32)
    assert hf.config.model_type == "qwen2"


def test_refusals(llama, specdec, tmp_path):
    path = tmp_path / "q2k.gguf"
    write_gguf(path, llama, "llama", raw_blocks={"blk.0.ffn_down.weight": Q.Q2_K})
    err = specdec.fails("generate", "--model", path, "--prompt-ids", "1,2")
    assert "tensor 'blk.0.ffn_down.weight'" in err and "Q2_K" in err and "Q4_K" in err, err
    path = tmp_path / "falcon.gguf"
    w = gguf.GGUFWriter(str(path), "falcon")
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    err = specdec.fails("generate", "--model", path, "--prompt-ids", "1,2")
    assert "architecture 'falcon' is not supported" in err, err
