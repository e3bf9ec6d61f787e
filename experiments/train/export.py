"""Writes the trained models in the formats specdec reads (FORMATS.md): Hugging Face Llama
checkpoints (config.json + model.safetensors + vocab.json) for the target and the draft LM; the
SafeAILab layouts for EAGLE-1 and EAGLE-3 heads; the AWS layout for the P-EAGLE drafter; the
DeepSeek-V3 layout for the MTP module and FasterDecoding/Medusa's for the Medusa heads
(mtp_medusa.py builds their configs and tensor names).
Every file is written to a temporary name and renamed; a model directory appears only once
complete."""
import json
import os
import shutil
import struct

import numpy as np
import torch

import corpus

MEDUSA_WEIGHTS = "medusa_lm_head.safetensors"  # FasterDecoding/Medusa's file name (safetensors form)

_DTYPES = {torch.float32: ("F32", np.float32), torch.int64: ("I64", np.int64), torch.bool: ("BOOL", np.bool_)}


def write_safetensors(path, tensors, metadata=None):
    """tensors: name -> torch tensor (float32, int64 or bool), written in sorted name order."""
    header, blobs, offset = {}, [], 0
    for name in sorted(tensors):
        t = tensors[name].detach().contiguous().cpu()
        code, np_type = _DTYPES[t.dtype]
        raw = t.numpy().astype(np_type, copy=False).tobytes()
        header[name] = {"dtype": code, "shape": list(t.shape), "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    header["__metadata__"] = metadata or {"format": "pt"}
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for b in blobs:
            f.write(b)


def read_safetensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    inverse = {code: np_type for code, np_type in _DTYPES.values()}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        b, e = info["data_offsets"]
        out[name] = torch.from_numpy(np.frombuffer(data[b:e], dtype=inverse[info["dtype"]]).reshape(info["shape"]).copy())
    return out


def llama_config(shape, num_hidden_layers=None, extra=None):
    c = {
        "architectures": ["LlamaForCausalLM"],
        "attention_bias": False,
        "attention_dropout": 0.0,
        "bos_token_id": corpus.BOS,
        "eos_token_id": corpus.EOS,
        "head_dim": shape.head_dim,
        "hidden_act": "silu",
        "hidden_size": shape.hidden_size,
        "initializer_range": 0.02,
        "intermediate_size": shape.intermediate_size,
        "max_position_embeddings": shape.max_position_embeddings,
        "mlp_bias": False,
        "model_type": "llama",
        "num_attention_heads": shape.num_attention_heads,
        "num_hidden_layers": shape.num_hidden_layers if num_hidden_layers is None else num_hidden_layers,
        "num_key_value_heads": shape.num_key_value_heads,
        "rms_norm_eps": shape.rms_norm_eps,
        "rope_scaling": None,
        "rope_theta": shape.rope_theta,
        "tie_word_embeddings": shape.tie_word_embeddings,
        "torch_dtype": "float32",
        "use_cache": True,
        "vocab_size": shape.vocab_size,
    }
    c.update(extra or {})
    return c


def vocab_json():
    return {"byte_offset": corpus.BYTE_OFFSET, "format": "specdec-vocab",
            "special_tokens": {"<bos>": corpus.BOS, "<eos>": corpus.EOS, "<pad>": corpus.PAD},
            "type": "bytes", "version": 1}


def layer_tensors(prefix, layer):
    """A DecoderLayer's tensors under `prefix` (e.g. 'model.layers.0.'), HF names."""
    out = {}
    for name, p in layer.named_parameters():
        out[prefix + name] = p
    return out


def write_model_dir(out_dir, config, tensors, card, extra_files=None, weights_name="model.safetensors"):
    """Writes config.json, the tensors (weights_name: model.safetensors, or Medusa's
    medusa_lm_head.safetensors), README.md (the model card) and extra_files (name -> text, or a
    dict written as JSON) into out_dir atomically (a sibling temporary directory renamed)."""
    tmp = out_dir.rstrip("/") + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    with open(os.path.join(tmp, "config.json"), "w") as f:
        json.dump(config, f, indent=2, sort_keys=True)
        f.write("\n")
    write_safetensors(os.path.join(tmp, weights_name), tensors)
    with open(os.path.join(tmp, "README.md"), "w") as f:
        f.write(card)
    for name, value in (extra_files or {}).items():
        with open(os.path.join(tmp, name), "w") as f:
            if isinstance(value, str):
                f.write(value)
            else:
                json.dump(value, f, indent=2, sort_keys=True)
                f.write("\n")
    if os.path.exists(out_dir):
        shutil.rmtree(out_dir)
    os.makedirs(os.path.dirname(os.path.abspath(out_dir)), exist_ok=True)
    os.replace(tmp, out_dir)


def llama_tensors(model):
    """LlamaLM -> HF LlamaForCausalLM tensor names."""
    t = {"model.embed_tokens.weight": model.embed_tokens.weight, "model.norm.weight": model.norm.weight}
    for i, layer in enumerate(model.layers):
        t.update(layer_tensors(f"model.layers.{i}.", layer))
    if model.lm_head is not None:
        t["lm_head.weight"] = model.lm_head.weight
    return t


def load_llama(model_dir):
    """Reads back a checkpoint written by export: (LlamaShape, LlamaLM)."""
    from llama import LlamaLM, LlamaShape
    c = json.load(open(os.path.join(model_dir, "config.json")))
    shape = LlamaShape(vocab_size=c["vocab_size"], hidden_size=c["hidden_size"],
                       intermediate_size=c["intermediate_size"], num_hidden_layers=c["num_hidden_layers"],
                       num_attention_heads=c["num_attention_heads"], num_key_value_heads=c["num_key_value_heads"],
                       rms_norm_eps=c["rms_norm_eps"], rope_theta=c["rope_theta"],
                       max_position_embeddings=c["max_position_embeddings"],
                       tie_word_embeddings=c["tie_word_embeddings"])
    model = LlamaLM(shape)
    tensors = read_safetensors(os.path.join(model_dir, "model.safetensors"))
    own = llama_tensors(model)
    with torch.no_grad():
        for name, p in own.items():
            p.copy_(tensors[name])
    return shape, model
