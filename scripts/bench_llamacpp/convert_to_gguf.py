#!/usr/bin/env python3
"""Convert a Hugging Face-layout Llama checkpoint (config.json + safetensors, sharded or not; F32,
F16 or BF16) into a GGUF file that llama.cpp loads as the same model, at the stored precision.

Written for specdec's random-weight checkpoints (`specdec init-model`), which have no tokenizer:
the GGUF gets a minimal SentencePiece-style vocabulary of the model's size (<unk>, <s>, </s>, the
256 byte tokens, then placeholders), enough for llama.cpp to load the model and feed it token ids.

Tensors keep their dtype except the 1-D norm weights, which llama.cpp wants in F32 (exact for
F16/BF16). The q_proj and k_proj rows are reordered per head from Hugging Face's rotary layout
(the first and second halves of a head rotate together) to llama.cpp's (adjacent pairs rotate
together), so both programs compute the same function.

Usage: convert_to_gguf.py CHECKPOINT_DIR OUT.gguf [--name NAME]
Needs the `gguf` package (PyPI) and numpy.
"""

import argparse
import json
import struct
import sys
from pathlib import Path

import numpy as np
import gguf

ST_DTYPES = {"F32": np.float32, "F16": np.float16, "BF16": np.uint16}  # BF16 kept as raw bits


class Fail(Exception):
    pass


def read_safetensors(path):
    """Map every tensor of one .safetensors file: name -> (dtype string, numpy view)."""
    with open(path, "rb") as f:
        head = f.read(8)
        if len(head) != 8:
            raise Fail(f"{path}: truncated (no header length)")
        (n,) = struct.unpack("<Q", head)
        try:
            header = json.loads(f.read(n))
        except ValueError as e:
            raise Fail(f"{path}: header is not JSON ({e})")
    size = Path(path).stat().st_size
    data = np.memmap(path, dtype=np.uint8, mode="r", offset=8 + n, shape=(size - 8 - n,))
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        dt = info["dtype"]
        if dt not in ST_DTYPES:
            raise Fail(f"{path}: tensor {name} has dtype {dt}; only F32, F16 and BF16 are converted")
        b, e = info["data_offsets"]
        shape = tuple(info["shape"])
        arr = data[b:e].view(ST_DTYPES[dt])
        if arr.size != int(np.prod(shape, dtype=np.int64)):
            raise Fail(f"{path}: tensor {name} holds {arr.size} values for shape {list(shape)}")
        out[name] = (dt, arr.reshape(shape))
    return out


def load_tensors(ckpt):
    index = ckpt / "model.safetensors.index.json"
    if index.exists():
        files = sorted(set(json.loads(index.read_text())["weight_map"].values()))
    else:
        files = [p.name for p in sorted(ckpt.glob("*.safetensors"))]
    if not files:
        raise Fail(f"{ckpt}: no .safetensors files")
    tensors = {}
    for f in files:
        tensors.update(read_safetensors(ckpt / f))
    return tensors


def to_f32(dt, a):
    if dt == "BF16":
        return (a.astype(np.uint32) << 16).view(np.float32)
    return a.astype(np.float32)


def rotary_rows_to_llamacpp(w, n_heads):
    """Reorder the output rows of q_proj / k_proj (n_heads * head_dim, in) within each head from
    [x_0 .. x_{d/2-1}, y_0 .. y_{d/2-1}] (rotate-half pairs i and i + d/2) to
    [x_0, y_0, x_1, y_1, ...] (llama.cpp's LLAMA rope rotates rows 2i and 2i+1 together)."""
    rows = w.shape[0]
    if rows % (2 * n_heads):
        raise Fail(f"rotary projection with {rows} rows does not split into {n_heads} heads of even size")
    half = rows // n_heads // 2
    return np.ascontiguousarray(w.reshape(n_heads, 2, half, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("checkpoint", type=Path)
    ap.add_argument("out", type=Path)
    ap.add_argument("--name", default=None, help="general.name (default: the checkpoint folder's name)")
    args = ap.parse_args()

    cfg_path = args.checkpoint / "config.json"
    if not cfg_path.exists():
        raise Fail(f"{args.checkpoint}: no config.json")
    cfg = json.loads(cfg_path.read_text())
    arch = cfg.get("model_type", "llama")
    if arch != "llama":
        raise Fail(f"{cfg_path}: model_type {arch!r}; only llama is converted")
    H = cfg["hidden_size"]
    L = cfg["num_hidden_layers"]
    n_head = cfg["num_attention_heads"]
    n_kv = cfg.get("num_key_value_heads", n_head)
    head_dim = cfg.get("head_dim") or H // n_head
    V = cfg["vocab_size"]
    if cfg.get("rope_scaling"):
        raise Fail(f"{cfg_path}: rope_scaling is not converted")

    tensors = load_tensors(args.checkpoint)
    dtypes = {dt for dt, _ in tensors.values()}
    if len(dtypes) != 1:
        raise Fail(f"{args.checkpoint}: mixed dtypes {sorted(dtypes)}")
    (st_dtype,) = dtypes
    ftype = {"F32": gguf.LlamaFileType.ALL_F32, "F16": gguf.LlamaFileType.MOSTLY_F16,
             "BF16": gguf.LlamaFileType.MOSTLY_BF16}[st_dtype]

    used = set()

    def take(name):
        if name not in tensors:
            raise Fail(f"{args.checkpoint}: tensor {name} is missing")
        used.add(name)
        return tensors[name]

    T = gguf.MODEL_TENSOR
    N = gguf.TENSOR_NAMES
    plan = []  # (gguf name, hf name, n_heads to reorder rows for, or 0)
    plan.append((N[T.TOKEN_EMBD] + ".weight", "model.embed_tokens.weight", 0))
    for i in range(L):
        hf = f"model.layers.{i}."
        plan += [
            (N[T.ATTN_NORM].format(bid=i) + ".weight", hf + "input_layernorm.weight", 0),
            (N[T.ATTN_Q].format(bid=i) + ".weight", hf + "self_attn.q_proj.weight", n_head),
            (N[T.ATTN_K].format(bid=i) + ".weight", hf + "self_attn.k_proj.weight", n_kv),
            (N[T.ATTN_V].format(bid=i) + ".weight", hf + "self_attn.v_proj.weight", 0),
            (N[T.ATTN_OUT].format(bid=i) + ".weight", hf + "self_attn.o_proj.weight", 0),
            (N[T.FFN_NORM].format(bid=i) + ".weight", hf + "post_attention_layernorm.weight", 0),
            (N[T.FFN_GATE].format(bid=i) + ".weight", hf + "mlp.gate_proj.weight", 0),
            (N[T.FFN_UP].format(bid=i) + ".weight", hf + "mlp.up_proj.weight", 0),
            (N[T.FFN_DOWN].format(bid=i) + ".weight", hf + "mlp.down_proj.weight", 0),
        ]
    plan.append((N[T.OUTPUT_NORM] + ".weight", "model.norm.weight", 0))
    if not cfg.get("tie_word_embeddings", False):
        plan.append((N[T.OUTPUT] + ".weight", "lm_head.weight", 0))  # tied: llama.cpp reuses token_embd

    w = gguf.GGUFWriter(args.out, "llama")
    w.add_name(args.name or args.checkpoint.name)
    w.add_file_type(ftype)
    w.add_context_length(cfg.get("max_position_embeddings", 4096))
    w.add_embedding_length(H)
    w.add_block_count(L)
    w.add_feed_forward_length(cfg["intermediate_size"])
    w.add_head_count(n_head)
    w.add_head_count_kv(n_kv)
    w.add_rope_dimension_count(head_dim)
    if head_dim != H // n_head:
        w.add_key_length(head_dim)
        w.add_value_length(head_dim)
    w.add_rope_freq_base(float(cfg.get("rope_theta", 10000.0)))
    w.add_layer_norm_rms_eps(float(cfg.get("rms_norm_eps", 1e-5)))
    w.add_vocab_size(V)

    # A minimal SentencePiece ("llama") vocabulary: ids 0..2 special, 3..258 the bytes, the rest
    # placeholders. llama.cpp looks up <0x0A> for the newline, so the byte tokens must be there.
    bos = cfg.get("bos_token_id", 1)
    eos = cfg.get("eos_token_id", 2)
    if isinstance(eos, list):
        eos = eos[0]
    if V < 259:
        raise Fail(f"vocab_size {V} is too small for the placeholder vocabulary (259 ids at least)")
    tokens, scores, types = [], [], []
    for t in range(V):
        if t == 0:
            tok, ty = "<unk>", gguf.TokenType.UNKNOWN
        elif t == 1:
            tok, ty = "<s>", gguf.TokenType.CONTROL
        elif t == 2:
            tok, ty = "</s>", gguf.TokenType.CONTROL
        elif t < 259:
            tok, ty = f"<0x{t - 3:02X}>", gguf.TokenType.BYTE
        else:
            tok, ty = f"[t{t}]", gguf.TokenType.NORMAL
        tokens.append(tok)
        scores.append(-float(t))
        types.append(ty)
    w.add_tokenizer_model("llama")
    w.add_tokenizer_pre("default")
    w.add_token_list(tokens)
    w.add_token_scores(scores)
    w.add_token_types(types)
    w.add_bos_token_id(bos if 0 <= bos < V else 1)
    w.add_eos_token_id(eos if 0 <= eos < V else 2)
    w.add_unk_token_id(0)
    w.add_add_bos_token(False)

    for gname, hfname, heads in plan:
        dt, a = take(hfname)
        if a.ndim == 1:
            w.add_tensor(gname, to_f32(dt, a))
            continue
        if heads:
            a = rotary_rows_to_llamacpp(a, heads)
        if dt == "BF16":
            w.add_tensor(gname, a, raw_dtype=gguf.GGMLQuantizationType.BF16)
        else:
            w.add_tensor(gname, a)
    left = sorted(set(tensors) - used)
    if left:
        raise Fail(f"{args.checkpoint}: tensors not converted: {', '.join(left[:5])}{' ...' if len(left) > 5 else ''}")

    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    print(f"wrote {args.out}: llama, {L} layers, hidden {H}, {n_head}/{n_kv} heads, vocab {V}, {st_dtype}")


if __name__ == "__main__":
    try:
        main()
    except Fail as e:
        print(f"convert_to_gguf: {e}", file=sys.stderr)
        sys.exit(1)
