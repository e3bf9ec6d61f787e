"""Writes the seed corpus of fuzz_gguf (tests/fuzz/seeds/gguf) with llama.cpp's `gguf` package:
small files that reach every part of the reader -- a llama model with a byte-level BPE tokenizer and
tensors of the simple quantizations, a qwen2 model with biases, K-quant blocks, and a SentencePiece
tokenizer alone. Run from the cross-library environment:
    $(scripts/pyenv.sh) tests/fuzz/make_gguf_seeds.py tests/fuzz/seeds/gguf
"""
import os
import sys

import gguf
import numpy as np
from gguf import GGMLQuantizationType as Q


def write(path, arch, fill):
    w = gguf.GGUFWriter(path, arch)
    fill(w)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def model(w, arch, rng, types, biases=False, hidden=32, layers=1, vocab=16):
    w.add_context_length(64)
    w.add_embedding_length(hidden)
    w.add_block_count(layers)
    w.add_feed_forward_length(2 * hidden)
    w.add_head_count(4)
    w.add_head_count_kv(2)
    w.add_rope_dimension_count(hidden // 4)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_rope_freq_base(10000.0)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    hd = hidden // 4
    shapes = {"token_embd.weight": (vocab, hidden), "output_norm.weight": (hidden,), "output.weight": (vocab, hidden)}
    for i in range(layers):
        b = f"blk.{i}."
        shapes.update({b + "attn_norm.weight": (hidden,), b + "attn_q.weight": (hidden, hidden),
                       b + "attn_k.weight": (2 * hd, hidden), b + "attn_v.weight": (2 * hd, hidden),
                       b + "attn_output.weight": (hidden, hidden), b + "ffn_norm.weight": (hidden,),
                       b + "ffn_gate.weight": (2 * hidden, hidden), b + "ffn_up.weight": (2 * hidden, hidden),
                       b + "ffn_down.weight": (hidden, 2 * hidden)})
        if biases:
            shapes.update({b + "attn_q.bias": (hidden,), b + "attn_k.bias": (2 * hd,), b + "attn_v.bias": (2 * hd,)})
    for k, (name, shape) in enumerate(shapes.items()):
        x = rng.standard_normal(shape).astype(np.float32)
        t = types[k % len(types)] if len(shape) == 2 else Q.F32
        w.add_tensor(name, x if t == Q.F32 else gguf.quants.quantize(x, t), raw_dtype=None if t == Q.F32 else t)


def bpe(w):
    tokens = ["a", "b", "c", "\u0120", "bc", "ab", "abc", "<s>", "</s>", "<|im_start|>", "1", "2", "\u0120a", "\u0120ab", "x", "y"]
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("qwen2")
    w.add_token_list(tokens)
    w.add_token_types([gguf.TokenType.CONTROL if t.startswith("<") else gguf.TokenType.NORMAL for t in tokens])
    w.add_token_merges(["b c", "a b", "a bc", "\u0120 a", "\u0120a b"])
    w.add_add_bos_token(True)


def main(out):
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(0)
    write(os.path.join(out, "llama_bpe.gguf"), "llama",
          lambda w: (model(w, "llama", rng, [Q.F16, Q.Q8_0, Q.Q4_0, Q.Q4_1, Q.Q5_0, Q.Q5_1, Q.BF16]), bpe(w)))
    write(os.path.join(out, "qwen2_biases.gguf"), "qwen2", lambda w: model(w, "qwen2", rng, [Q.F32, Q.Q8_0], biases=True))

    def kquants(w):
        for t, (_, size) in ((t, gguf.GGML_QUANT_SIZES[t]) for t in (Q.Q4_K, Q.Q5_K, Q.Q6_K)):
            blocks = rng.integers(0, 256, size=(2, size), dtype=np.uint8)
            w.add_tensor(f"k.{t.name}", blocks, raw_dtype=t)
    write(os.path.join(out, "kquants.gguf"), "llama", kquants)

    def spm(w):
        tokens = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)] + ["\u2581", "a", "b", "\u2581a", "ab"]
        w.add_tokenizer_model("llama")
        w.add_token_list(tokens)
        w.add_token_scores([0.0] * 259 + [-1.0, -2.0, -3.0, -5.0, -4.0])
        w.add_token_types([2, 3, 3] + [6] * 256 + [1] * 5)
        w.add_bos_token_id(1)
        w.add_eos_token_id(2)
    write(os.path.join(out, "spm_tokenizer.gguf"), "llama", spm)


if __name__ == "__main__":
    main(sys.argv[1])
