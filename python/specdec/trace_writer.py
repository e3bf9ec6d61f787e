"""Write specdec traces (traces/SCHEMA.md: schema 1.2 for one sequence, 2.0 for a batch) from any
engine, with h5py and numpy only.

For engines that cannot link specdec's C++ library: record what each decoding step computed, then
``write()`` a trace that ``specdec trace check`` accepts and ``specdec validate --trace`` replays
against the reference. This module does not import the compiled extension ``specdec._core``.

    from specdec.trace_writer import TraceWriter, ModelInfo, checkpoint_fingerprint

    w = TraceWriter("sequential", prompt=[5, 17, 42], seed=0,
                    sampling={"mode": "greedy", "temperature": 1.0, "top_k": 0, "top_p": 1.0, "seed": 0},
                    config={"max_new_tokens": 8, "stop_at_eos": True},
                    models={"target": ModelInfo("models/target", checkpoint_fingerprint("models/target"),
                                                open("models/target/config.json").read())})
    # A drafter: checkpoint_fingerprint for a draft LM, head_fingerprint("models/eagle3") for an
    # EAGLE-family head.
    for token, logits in my_engine_steps():
        w.add_step([token], target_logits=logits[None, :])
    w.write("run.h5", stop_reason="max_tokens")

Sequences decoded together in a batch: one TraceWriter per sequence, gathered with their batch
schedule by a BatchedTraceWriter into one batched trace (schema 2.0) that ``specdec validate
--candidate`` checks sequence by sequence.
"""

import datetime
import json
import os
import re
import struct
import tempfile
from dataclasses import dataclass

import h5py
import numpy as np

SCHEMA_VERSION = "1.2"          # one sequence
BATCHED_SCHEMA_VERSION = "2.0"  # a batch: several sequences and the batch schedule (BatchedTraceWriter)
EXACTNESS_CONTRACT = "2"  # reference/core/exact_math.hpp kContractVersion
FORMAT = "specdec-trace"
# The method registry (reference/methods/registry.cpp; `specdec methods --json` prints it): each
# method's name and what it drafts with — None (no drafter), "draft_lm" (a language model), a
# head kind, or "context" (draft-free: the token history; no drafter model in the trace).
# test_trace_writer.py keeps this equal to the C++ table.
METHOD_DRAFTERS = {"sequential": None, "draft": "draft_lm", "eagle": "eagle1", "eagle3": "eagle3", "peagle": "peagle",
                   "mtp": "mtp", "medusa": "medusa", "ngram": "context", "prompt-lookup": "context", "ngram-tree": "context", "suffix": "context",
                   "suffix-tree": "context"}
METHODS = tuple(METHOD_DRAFTERS)
LAYER_SUBSTEPS = ("input_norm", "attention", "post_attention_norm", "mlp")

_FNV_OFFSET = 0xCBF29CE484222325
_FNV_PRIME = 0x100000001B3
_MASK = 0xFFFFFFFFFFFFFFFF


# ---------------------------------------------------------------------------------------------
# Hashes: FNV-1a 64 of logits rows and model weights.

class Fnv1a64:
    """FNV-1a 64 (offset basis 14695981039346656037, prime 1099511628211), as reference/io/fingerprint.hpp."""

    def __init__(self):
        self.value = _FNV_OFFSET

    def update(self, data):
        h = self.value
        for b in bytes(data):
            h = ((h ^ b) * _FNV_PRIME) & _MASK
        self.value = h

    def update_u64(self, v):
        self.update(struct.pack("<Q", v))

    def update_matrix(self, m):
        """rows, cols as u64 little-endian, then the float32 bytes row-major; None = an absent matrix (0, 0)."""
        if m is None:
            self.update_u64(0)
            self.update_u64(0)
            return
        m = np.ascontiguousarray(m, dtype="<f4")
        assert m.ndim == 2, m.shape
        self.update_u64(m.shape[0])
        self.update_u64(m.shape[1])
        self.update(m.tobytes())

    def update_vector(self, v):
        """size as u64 little-endian, then the float32 bytes; None = an absent vector (size 0)."""
        if v is None:
            self.update_u64(0)
            return
        v = np.ascontiguousarray(v, dtype="<f4").reshape(-1)
        self.update_u64(v.shape[0])
        self.update(v.tobytes())

    def str(self):
        return "fnv1a64:%016x" % self.value


def fnv1a64_row(row):
    """The checksum of a logits row (SCHEMA.md, logits groups)."""
    h = Fnv1a64()
    h.update(np.ascontiguousarray(row, dtype="<f4").tobytes())
    return h.value


def weights_fingerprint(tensors, num_hidden_layers, prefix="model."):
    """The fingerprint specdec records for a Llama-family target or draft LM
    (reference/io/llama_checkpoint.cpp weights_fingerprint).

    `tensors` maps Hugging Face tensor names to arrays (any float dtype; hashed as float32, so an
    F16/BF16 checkpoint hashes as specdec loads it). Order: embed_tokens; per layer input_layernorm,
    q_proj, k_proj, v_proj, q/k/v biases, o_proj, o_proj bias, q_norm, k_norm,
    post_attention_layernorm, gate_proj, up_proj, down_proj, gate/up/down biases; norm; lm_head
    (absent when tie_word_embeddings). A matrix is hashed as (rows u64, cols u64, bytes), a vector
    as (size u64, bytes); an absent tensor as zero sizes and no bytes.
    """
    def get(name):
        return tensors.get(name)

    h = Fnv1a64()
    h.update_matrix(get(prefix + "embed_tokens.weight"))
    for i in range(num_hidden_layers):
        p = "%slayers.%d." % (prefix, i)
        h.update_vector(get(p + "input_layernorm.weight"))
        for n in ("q_proj", "k_proj", "v_proj"):
            h.update_matrix(get(p + "self_attn.%s.weight" % n))
        for n in ("q_proj", "k_proj", "v_proj"):
            h.update_vector(get(p + "self_attn.%s.bias" % n))
        h.update_matrix(get(p + "self_attn.o_proj.weight"))
        h.update_vector(get(p + "self_attn.o_proj.bias"))
        h.update_vector(get(p + "self_attn.q_norm.weight"))
        h.update_vector(get(p + "self_attn.k_norm.weight"))
        h.update_vector(get(p + "post_attention_layernorm.weight"))
        for n in ("gate_proj", "up_proj", "down_proj"):
            h.update_matrix(get(p + "mlp.%s.weight" % n))
        for n in ("gate_proj", "up_proj", "down_proj"):
            h.update_vector(get(p + "mlp.%s.bias" % n))
    h.update_vector(get(prefix + "norm.weight"))
    h.update_matrix(get("lm_head.weight"))
    return h.str()


def load_safetensors(path):
    """The tensors of one .safetensors file (F32, F16, BF16) as float32 numpy arrays."""
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        a, b = info["data_offsets"]
        raw = data[a:b]
        dt = info["dtype"]
        if dt == "F32":
            arr = np.frombuffer(raw, dtype="<f4")
        elif dt == "F16":
            arr = _half_to_float32(np.frombuffer(raw, dtype="<u2"))
        elif dt == "BF16":
            arr = (np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16).view(np.float32)
        else:
            raise ValueError("%s: tensor %s has dtype %s, expected F32, F16 or BF16" % (path, name, dt))
        out[name] = arr.reshape(info["shape"])
    return out


def checkpoint_fingerprint(directory):
    """weights_fingerprint of a Hugging Face Llama checkpoint directory (config.json +
    model.safetensors or a sharded model.safetensors.index.json)."""
    with open(os.path.join(directory, "config.json")) as f:
        config = json.load(f)
    tensors = {}
    index = os.path.join(directory, "model.safetensors.index.json")
    if os.path.exists(index):
        with open(index) as f:
            for shard in sorted(set(json.load(f)["weight_map"].values())):
                tensors.update(load_safetensors(os.path.join(directory, shard)))
    else:
        tensors = load_safetensors(os.path.join(directory, "model.safetensors"))
    if config.get("tie_word_embeddings", False):
        tensors.pop("lm_head.weight", None)
    return weights_fingerprint(tensors, int(config["num_hidden_layers"]))


# ---------------------------------------------------------------------------------------------
# EAGLE-family drafter heads: the fingerprint specdec records for an EAGLE-1, EAGLE-3 or P-EAGLE
# head (reference/drafters/eagle_checkpoint.cpp eagle_head_fingerprint), over the head's tensors
# as reference/drafters/eagle_checkpoint.cpp load_eagle_head reads them.

_DTYPE_SIZES = {"BOOL": 1, "U8": 1, "I8": 1, "F8_E5M2": 1, "F8_E4M3": 1, "I16": 2, "U16": 2, "F16": 2,
                "BF16": 2, "I32": 4, "U32": 4, "F32": 4, "F64": 8, "I64": 8, "U64": 8}
_FLOAT_DTYPES = ("F32", "F16", "BF16", "F64", "F8_E5M2", "F8_E4M3")
_INT_DTYPES = {"U8": "u1", "I8": "i1", "I16": "<i2", "U16": "<u2", "I32": "<i4", "U32": "<u4", "I64": "<i8",
               "U64": "<u8"}
_INT64_MAX = 2 ** 63 - 1


def _half_to_float32(bits):
    """IEEE half bit patterns (uint16) widened bit for bit as reference/core/half.hpp does, NaN
    payloads included (numpy's own float16 conversion may quiet a signalling NaN)."""
    h = np.asarray(bits).astype(np.uint32)
    sign = (h & np.uint32(0x8000)) << np.uint32(16)
    exponent = (h >> np.uint32(10)) & np.uint32(0x1F)
    mantissa = h & np.uint32(0x3FF)
    normal = sign | ((exponent + np.uint32(112)) << np.uint32(23)) | (mantissa << np.uint32(13))
    special = sign | np.uint32(0x7F800000) | (mantissa << np.uint32(13))
    subnormal = sign | (mantissa.astype(np.float32) * np.float32(2.0 ** -24)).view(np.uint32)
    out = np.where(exponent == 0, subnormal, np.where(exponent == 0x1F, special, normal))
    return np.ascontiguousarray(out, dtype=np.uint32).view(np.float32)


def _e4m3_table():
    """The 256 float32 values of F8_E4M3 ("FN": bias 7, no infinities, S.1111.111 a positive quiet
    NaN), as reference/io/safetensors.cpp f8_e4m3_to_float."""
    t = np.empty(256, dtype=np.float32)
    for b in range(256):
        sign = -1.0 if b & 0x80 else 1.0
        e, m = (b >> 3) & 0xF, b & 0x7
        t[b] = sign * (m * 2.0 ** -9 if e == 0 else (8 + m) * 2.0 ** (e - 10))
    t.view(np.uint32)[0x7F] = t.view(np.uint32)[0xFF] = 0x7FC00000
    return t


_E4M3 = []


def _decode_floats(raw, dtype):
    """Bytes of a safetensors float tensor as float32, widened as specdec does."""
    if dtype == "F32":
        return np.frombuffer(raw, dtype="<f4")
    if dtype == "F16":
        return _half_to_float32(np.frombuffer(raw, dtype="<u2"))
    if dtype == "BF16":
        return (np.frombuffer(raw, dtype="<u2").astype(np.uint32) << np.uint32(16)).view(np.float32)
    if dtype == "F64":
        return np.frombuffer(raw, dtype="<f8").astype(np.float32)
    if dtype == "F8_E5M2":  # the upper byte of an IEEE half
        return _half_to_float32(np.frombuffer(raw, dtype="u1").astype(np.uint16) << np.uint16(8))
    if dtype == "F8_E4M3":
        if not _E4M3:
            _E4M3.append(_e4m3_table())
        return _E4M3[0][np.frombuffer(raw, dtype="u1")]
    raise AssertionError(dtype)


def _json_object_no_duplicates(where):
    def hook(pairs):
        seen = set()
        for k, _ in pairs:
            if k in seen:
                raise ValueError("%s: the key '%s' appears more than once" % (where, k))
            seen.add(k)
        return dict(pairs)
    return hook


def _is_uint(v):
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


class _SafetensorsFile:
    """One .safetensors file with its header checked as reference/io/safetensors.cpp checks it;
    tensor data is read on demand."""

    def __init__(self, path):
        self.path = path
        if not os.path.isfile(path):
            raise ValueError("%s: not a regular file" % path)
        size = os.path.getsize(path)
        if size < 8:
            raise ValueError("%s: file is %d bytes, shorter than the 8-byte safetensors header length" % (path, size))
        with open(path, "rb") as f:
            (n,) = struct.unpack("<Q", f.read(8))
            if n > size - 8:
                raise ValueError("%s: header length %d runs past the end of the file (%d bytes)" % (path, n, size))
            text = f.read(n)
        try:
            header = json.loads(text, object_pairs_hook=_json_object_no_duplicates(path + ": safetensors header"))
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise ValueError("%s: safetensors header is not valid JSON: %s" % (path, e)) from None
        if not isinstance(header, dict):
            raise ValueError("%s: safetensors header must be a JSON object" % path)
        self._data_start = 8 + n
        data_size = size - self._data_start
        self.tensors = {}  # name -> (dtype, shape, begin, end)
        for name, e in header.items():
            if name == "__metadata__":
                if not isinstance(e, dict) or not all(isinstance(v, str) for v in e.values()):
                    raise ValueError("%s: '__metadata__' must be an object of strings" % path)
                continue
            where = "%s: tensor '%s'" % (path, name)
            if not isinstance(e, dict) or not all(k in e for k in ("dtype", "shape", "data_offsets")):
                raise ValueError("%s: header entry must be an object with dtype, shape and data_offsets" % where)
            dtype, shape, offsets = e["dtype"], e["shape"], e["data_offsets"]
            if dtype not in _DTYPE_SIZES:
                raise ValueError("%s: unknown dtype %r (expected one of %s)" % (where, dtype, ", ".join(_DTYPE_SIZES)))
            if not isinstance(shape, list) or not all(_is_uint(d) for d in shape):
                raise ValueError("%s: 'shape' must be a list of non-negative integers, got %r" % (where, shape))
            if not (isinstance(offsets, list) and len(offsets) == 2 and all(_is_uint(o) for o in offsets)):
                raise ValueError("%s: 'data_offsets' must be a list [begin, end], got %r" % (where, offsets))
            begin, end = offsets
            numel = 1
            for d in shape:
                numel *= d
            if begin > end or end > data_size or numel * _DTYPE_SIZES[dtype] != end - begin:
                raise ValueError("%s: data_offsets [%d, %d] do not hold shape %s of %s within the %d-byte data section"
                                 % (where, begin, end, shape, dtype, data_size))
            self.tensors[name] = (dtype, [int(d) for d in shape], begin, end)
        spans = sorted((b, e, name) for name, (_, _, b, e) in self.tensors.items() if e > b)
        for (_, e0, n0), (b1, _, n1) in zip(spans, spans[1:]):
            if b1 < e0:
                raise ValueError("%s: tensors '%s' and '%s' overlap in the data section" % (path, n0, n1))

    def raw(self, name):
        _, _, begin, end = self.tensors[name]
        with open(self.path, "rb") as f:
            f.seek(self._data_start + begin)
            return f.read(end - begin)


class _TensorStore:
    """The tensors of a model directory (model.safetensors, preferred, or the shards of
    model.safetensors.index.json), a .safetensors file or a shard index, as
    reference/io/tensor_store.cpp opens them."""

    def __init__(self, path):
        self.files = {}  # tensor name -> _SafetensorsFile
        single = index = None
        if os.path.isdir(path):
            if os.path.exists(os.path.join(path, "model.safetensors")):
                single = os.path.join(path, "model.safetensors")
            elif os.path.exists(os.path.join(path, "model.safetensors.index.json")):
                index = os.path.join(path, "model.safetensors.index.json")
            else:
                for pickle in ("pytorch_model.bin", "pytorch_model.bin.index.json"):
                    if os.path.exists(os.path.join(path, pickle)):
                        raise ValueError("%s: its weights are in '%s' (a PyTorch pickle), which specdec does not read; "
                                         "convert them to model.safetensors first (safetensors.torch.save_file)"
                                         % (path, os.path.join(path, pickle)))
                raise ValueError("%s: has neither model.safetensors nor model.safetensors.index.json" % path)
        elif os.path.exists(path):
            if path.endswith(".index.json"):
                index = path
            else:
                single = path
        else:
            raise ValueError("%s: does not exist" % path)
        if single is not None:
            f = _SafetensorsFile(single)
            self.files = {name: f for name in f.tensors}
            return
        try:
            with open(index, "rb") as fh:
                j = json.loads(fh.read(), object_pairs_hook=_json_object_no_duplicates(index))
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise ValueError("%s: shard index is not valid JSON: %s" % (index, e)) from None
        if not isinstance(j, dict) or not isinstance(j.get("weight_map"), dict):
            raise ValueError("%s: shard index must be an object with a 'weight_map' object {tensor: file}" % index)
        shards = {}
        base = os.path.dirname(index)
        for tensor, shard in j["weight_map"].items():
            parts = shard.split("/") if isinstance(shard, str) else None
            if not parts or not shard or os.path.isabs(shard) or ".." in parts:
                raise ValueError("%s: weight_map entry for '%s' is %r, expected a file inside the model directory"
                                 % (index, tensor, shard))
            if shard not in shards:
                if not os.path.isfile(os.path.join(base, shard)):
                    raise ValueError("%s: shard '%s' (listed for tensor '%s') does not exist" % (index, shard, tensor))
                shards[shard] = _SafetensorsFile(os.path.join(base, shard))
            if tensor not in shards[shard].tensors:
                raise ValueError("%s: tensor '%s' is listed for shard '%s' but that file does not contain it"
                                 % (index, tensor, shard))
            self.files[tensor] = shards[shard]

    def names(self):
        return sorted(self.files)

    def file_of(self, name):
        return self.files[name].path

    def shape(self, name):
        return list(self.files[name].tensors[name][1])

    def read(self, name, integer):
        """float32 values (any float dtype) or, with `integer`, int64 values (an integer or BOOL
        dtype), shaped as stored."""
        f = self.files[name]
        dtype, shape = f.tensors[name][:2]
        where = "%s: tensor '%s'" % (f.path, name)
        raw = f.raw(name)
        if not integer:
            if dtype not in _FLOAT_DTYPES:
                raise ValueError("%s has dtype %s, expected a floating-point dtype (%s)"
                                 % (where, dtype, ", ".join(_FLOAT_DTYPES)))
            return _decode_floats(raw, dtype).reshape(shape)
        if dtype == "BOOL":
            b = np.frombuffer(raw, dtype="u1")
            if (b > 1).any():
                raise ValueError("%s (BOOL) holds byte value %d, expected 0 or 1" % (where, int(b[b > 1][0])))
            return b.astype(np.int64).reshape(shape)
        if dtype not in _INT_DTYPES:
            raise ValueError("%s has dtype %s, expected an integer or BOOL dtype" % (where, dtype))
        v = np.frombuffer(raw, dtype=_INT_DTYPES[dtype])
        if dtype == "U64" and (v > _INT64_MAX).any():
            raise ValueError("%s (U64) holds %d, which does not fit in int64" % (where, int(v[v > _INT64_MAX][0])))
        return v.astype(np.int64).reshape(shape)


# Hugging Face config-class defaults (reference/model/model_config.cpp ClassDefaults): vocab_size,
# hidden_size, intermediate_size, num_hidden_layers, num_attention_heads, num_key_value_heads
# (0 = num_attention_heads), head_dim (0 = hidden_size / num_attention_heads).
_CLASS_DEFAULTS = {
    "llama": (32000, 4096, 11008, 32, 32, 0, 0),
    "mistral": (32000, 4096, 14336, 32, 32, 8, 0),
    "qwen2": (151936, 4096, 22016, 32, 32, 32, 0),
    "qwen3": (151936, 4096, 22016, 32, 32, 32, 128),
}
_ARCH_PREFIXES = (("Llama", "llama"), ("Mistral", "mistral"), ("Qwen2", "qwen2"), ("Qwen3", "qwen3"))


def _present(j, key):
    return key in j and j[key] is not None


def _config_int(j, key, fallback, source, strings=False, where=""):
    if not _present(j, key):
        return fallback
    v = j[key]
    # Head configs may store token ids and sizes as decimal strings (eagle_config.cpp get_int).
    if strings and isinstance(v, str):
        v = int(v) if re.fullmatch(r"\s*[+-]?[0-9]+", v) else None
    if not isinstance(v, int) or isinstance(v, bool):
        raise ValueError("%s: field '%s%s' must be an integer, got %s" % (source, where, key, json.dumps(j[key])))
    if not -2 ** 31 <= v < 2 ** 31:
        raise ValueError("%s: field '%s%s' = %d is out of range" % (source, where, key, v))
    return v


def _config_bool(j, key, fallback, source):
    if not _present(j, key):
        return fallback
    if not isinstance(j[key], bool):
        raise ValueError("%s: field '%s' must be true or false, got %s" % (source, key, json.dumps(j[key])))
    return j[key]


def _layer_shape(j, source):
    """The shape-deciding fields of a Llama-family config.json, defaults filled in as
    reference/model/model_config.cpp parse_model_config does: a dict of hidden_size,
    intermediate_size, num_hidden_layers, num_attention_heads, num_key_value_heads, head_dim,
    vocab_size and the flags attention_bias, o_proj_bias, mlp_bias, qk_norm."""
    if not isinstance(j, dict):
        raise ValueError("%s: config must be a JSON object" % source)
    arch = ""
    if _present(j, "architectures"):
        a = j["architectures"]
        if not isinstance(a, list) or not a or not isinstance(a[0], str):
            raise ValueError("%s: field 'architectures' must be a non-empty list of strings" % source)
        arch = a[0]
    model_type = j.get("model_type") or next((t for p, t in _ARCH_PREFIXES if arch.startswith(p)), "")
    if not model_type:
        raise ValueError("%s: neither 'model_type' nor a known 'architectures' entry (LlamaForCausalLM, "
                         "MistralForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM) is given" % source)
    if model_type not in _CLASS_DEFAULTS:
        raise ValueError("%s: model_type %r is not supported (expected llama, mistral, qwen2 or qwen3)"
                         % (source, model_type))
    dv, dh, di, dl, dnh, dnkv, dhd = _CLASS_DEFAULTS[model_type]
    s = {"vocab_size": _config_int(j, "vocab_size", dv, source),
         "hidden_size": _config_int(j, "hidden_size", dh, source),
         "intermediate_size": _config_int(j, "intermediate_size", di, source),
         "num_hidden_layers": _config_int(j, "num_hidden_layers", dl, source),
         "num_attention_heads": _config_int(j, "num_attention_heads", dnh, source)}
    nh = s["num_attention_heads"]
    # Absent: the class default; explicit null: one KV head per head.
    s["num_key_value_heads"] = (_config_int(j, "num_key_value_heads", nh, source) if "num_key_value_heads" in j
                                else dnkv or nh)
    if _present(j, "head_dim"):
        s["head_dim"] = _config_int(j, "head_dim", 0, source)
    elif "head_dim" not in j and dhd:
        s["head_dim"] = dhd
    else:
        if nh <= 0 or s["hidden_size"] % nh:
            raise ValueError("%s: hidden_size %d is not divisible by num_attention_heads %d and no 'head_dim' is given"
                             % (source, s["hidden_size"], nh))
        s["head_dim"] = s["hidden_size"] // nh
    bias = _config_bool(j, "attention_bias", False, source) if model_type in ("llama", "qwen3") else False
    s["attention_bias"] = bias or model_type == "qwen2"  # Qwen2 always biases q/k/v, never o_proj
    s["o_proj_bias"] = bias
    s["mlp_bias"] = _config_bool(j, "mlp_bias", False, source) if model_type == "llama" else False
    s["qk_norm"] = model_type == "qwen3"
    for key in ("hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
                "num_key_value_heads", "head_dim", "vocab_size"):
        if s[key] <= 0:
            raise ValueError("%s: field '%s' must be positive, got %d" % (source, key, s[key]))
    if nh % s["num_key_value_heads"]:
        raise ValueError("%s: num_attention_heads %d is not a multiple of num_key_value_heads %d"
                         % (source, nh, s["num_key_value_heads"]))
    if s["head_dim"] % 2:
        raise ValueError("%s: field 'head_dim' must be even, got %d" % (source, s["head_dim"]))
    return s


@dataclass
class HeadConfig:
    """What decides an EAGLE-family head's tensors (reference/drafters/eagle_config.hpp
    EagleHeadConfig): kind "eagle1" | "eagle3" | "peagle", layout "safeailab" | "speculators" |
    "aws", the drafter layers' shape (`layer`, as _layer_shape), the vocabularies and widths."""
    kind: str
    layout: str
    layer: dict
    target_vocab: int
    draft_vocab: int
    target_hidden: int
    aux_layers: list      # ascending; empty = the target's default {2, L/2, L-3}
    fc_bias: bool
    own_embeddings: bool  # the head carries embed_tokens.weight; else it uses the target's

    @property
    def num_layers(self):
        return self.layer["num_hidden_layers"]

    def feature_width(self):
        """EAGLE-1: Ht; else n_aux * Ht (the default fuses three layers)."""
        if self.kind == "eagle1":
            return self.target_hidden
        return (len(self.aux_layers) or 3) * self.target_hidden

    def fc_in(self):
        return self.layer["hidden_size"] + self.target_hidden if self.kind == "eagle1" else self.feature_width()

    def describe(self):
        return "%s %s head in the %s layout" % ("a" if self.kind == "peagle" else "an", self.kind, self.layout)


def _default_aux_layers(L):
    v = sorted((2, L // 2, L - 3))
    if v[0] < 0 or len(set(v)) != 3:
        raise ValueError("a target with %d layers is too shallow for EAGLE-3's default fused layers {2, L/2, L-3}; "
                         "list them in the head config's 'eagle_aux_hidden_state_layer_ids'" % L)
    return v


def _check_trained_depth(depth, source):
    if depth < 0:
        raise ValueError("%s: trained_depth must not be negative, got %d" % (source, depth))


def parse_head_config(config, tensor_names, source="config.json", target_config=None, target_source="target config"):
    """The HeadConfig of a head's config.json (a dict) and its checkpoint's tensor names, as
    reference/drafters/eagle_config.cpp parse_eagle_config and validate_eagle_config decide it.
    With `target_config` (the target's config.json as a dict), also checks the head against the
    target as the loader does and fills in default fused layers from the target's depth."""
    j = config
    names = set(tensor_names)
    if not isinstance(j, dict):
        raise ValueError("%s: config must be a JSON object" % source)
    if "speculators_model_type" in j:
        t = j["speculators_model_type"]
        kind = t if isinstance(t, str) else json.dumps(t)
        if kind not in ("eagle3", "peagle"):
            raise ValueError("%s: speculators_model_type '%s' is not supported (expected eagle3 or peagle)"
                             % (source, kind))
        layout = "speculators"
        if not isinstance(j.get("transformer_layer_config"), dict):
            raise ValueError("%s: speculators config has no 'transformer_layer_config' object" % source)
        layer = _layer_shape(j["transformer_layer_config"], source + " (transformer_layer_config)")
        sc = j.get("speculators_config")
        if kind == "peagle" and isinstance(sc, dict) and isinstance(sc.get("proposal_methods"), list) \
                and sc["proposal_methods"] and isinstance(sc["proposal_methods"][0], dict):
            _check_trained_depth(_config_int(sc["proposal_methods"][0], "speculative_tokens", 0, source, True,
                                             "speculators_config.proposal_methods[0]."), source)
    else:
        layer = _layer_shape(j, source)
        if ("mask_hidden" in names or any(_present(j, k) for k in ("mask_token_id", "pard_token", "ptd_token_id"))):
            kind, layout = "peagle", "aws"
            _check_trained_depth(_config_int(j, "trained_depth", 0, source, strings=True), source)
        elif ("midlayer.self_attn.q_proj.weight" in names or "midlayer.hidden_norm.weight" in names
              or _present(j, "draft_vocab_size")):
            kind, layout = "eagle3", "safeailab"
        elif "layers.0.self_attn.q_proj.weight" in names and "fc.weight" in names:
            kind, layout = "eagle1", "safeailab"
        else:
            raise ValueError("%s: cannot tell which drafter head this is: expected a speculators config "
                             "(speculators_model_type), P-EAGLE's mask_hidden / ptd_token_id, EAGLE-3's midlayer.* "
                             "tensors, or EAGLE-1's fc.weight with layers.0.*" % source)
    for key in ("norm_before_fc", "fc_norm", "norm_output"):
        if _present(j, key) and j[key] is not False:
            raise ValueError("%s: option '%s' = %s is not supported (only false / absent)"
                             % (source, key, json.dumps(j[key])))
    V, H = layer["vocab_size"], layer["hidden_size"]
    aux = []
    if kind == "eagle1":
        draft_vocab, target_hidden = V, H
        fc_bias = _config_bool(j, "bias", True, source)  # SafeAILab's default
    else:
        draft_vocab = _config_int(j, "draft_vocab_size", V, source, strings=True)
        target_hidden = _config_int(j, "target_hidden_size", H, source, strings=True)
        _config_bool(j, "norm_before_residual", False, source)
        key = "eagle_aux_hidden_state_layer_ids"
        if _present(j, key):
            a = j[key]
            if not isinstance(a, list) or not all(isinstance(v, int) and not isinstance(v, bool) for v in a):
                raise ValueError("%s: field '%s' must be a list of integers, got %s" % (source, key, json.dumps(a)))
            if any(v < 0 for v in a):
                raise ValueError("%s: field '%s' holds a negative hidden-state index" % (source, key))
            aux = sorted(a)  # the target concatenates the states in layer order
        fc_bias = "fc.bias" in names
        if kind == "peagle":
            mask = next((k for k in ("mask_token_id", "pard_token", "ptd_token_id") if _present(j, k)), None)
            if mask is None:
                raise ValueError("%s: P-EAGLE head config has no mask token: expected 'mask_token_id', "
                                 "'pard_token' or 'ptd_token_id'" % source)
            mask_token = _config_int(j, mask, -1, source, strings=True)
            if not 0 <= mask_token < V:
                raise ValueError("%s: P-EAGLE mask token id %d is outside the vocabulary [0, %d)"
                                 % (source, mask_token, V))
    if target_hidden <= 0:
        raise ValueError("%s: target_hidden_size must be positive, got %d" % (source, target_hidden))
    if not 1 <= draft_vocab <= V:
        raise ValueError("%s: draft_vocab_size %d must be in [1, vocab_size = %d]" % (source, draft_vocab, V))
    if len(set(aux)) != len(aux):
        raise ValueError("%s: aux layers %s must be distinct" % (source, aux))
    c = HeadConfig(kind, layout, layer, V, draft_vocab, target_hidden, aux, fc_bias, "embed_tokens.weight" in names)
    if target_config is not None:
        t = _layer_shape(target_config, target_source)
        if kind != "eagle1" and not c.aux_layers:
            try:
                c.aux_layers = _default_aux_layers(t["num_hidden_layers"])
            except ValueError as e:
                raise ValueError("%s: %s" % (source, e)) from None
        if V != t["vocab_size"]:
            raise ValueError("%s: head vocab_size %d does not match the target's vocab_size %d"
                             % (source, V, t["vocab_size"]))
        if target_hidden != t["hidden_size"]:
            raise ValueError("%s: head target_hidden_size %d does not match the target's hidden_size %d"
                             % (source, target_hidden, t["hidden_size"]))
        if not c.own_embeddings and H != t["hidden_size"]:
            raise ValueError("%s: the head has no embed_tokens.weight and its hidden_size %d differs from the "
                             "target's %d, so it cannot share the target's embeddings" % (source, H, t["hidden_size"]))
        if any(a > t["num_hidden_layers"] for a in c.aux_layers):
            raise ValueError("%s: aux layers %s are outside [0, %d] for the target"
                             % (source, c.aux_layers, t["num_hidden_layers"]))
    return c


def head_tensors(c):
    """The float tensors a head of config `c` is loaded from, in checkpoint order
    (reference/drafters/eagle_tensors.cpp eagle_tensors): [(slot, name, shape)], slot naming the
    EagleWeights member ("fc", (layer, "q_proj"), ...). mask_hidden may be stored with leading
    1-dimensions. d2t and t2d (integer tensors) are not listed."""
    L = c.layer
    H, I, V, Vd = L["hidden_size"], L["intermediate_size"], c.target_vocab, c.draft_vocab
    q, kv, hd = L["num_attention_heads"] * L["head_dim"], L["num_key_value_heads"] * L["head_dim"], L["head_dim"]
    eagle1 = c.kind == "eagle1"
    out = []
    if c.own_embeddings:
        out.append(("embed_tokens", "embed_tokens.weight", (V, H)))
    out.append(("fc", "fc.weight", (H, c.fc_in())))
    if c.fc_bias:
        out.append(("fc_bias", "fc.bias", (H,)))
    for i in range(c.num_layers):
        p = "midlayer." if i == 0 and not eagle1 and c.layout != "speculators" else "layers.%d." % i
        inner = 2 * H if i == 0 and not eagle1 else H  # layer 0 attends over cat(norm(emb), norm(h))
        if i == 0 and not eagle1:
            out.append(("hidden_norm", p + "hidden_norm.weight", (H,)))
        if not (eagle1 and i == 0):
            out.append(((i, "input_layernorm"), p + "input_layernorm.weight", (H,)))
        for n, rows in (("q", q), ("k", kv), ("v", kv)):
            out.append(((i, n + "_proj"), p + "self_attn.%s_proj.weight" % n, (rows, inner)))
            if L["attention_bias"]:
                out.append(((i, n + "_bias"), p + "self_attn.%s_proj.bias" % n, (rows,)))
        out.append(((i, "o_proj"), p + "self_attn.o_proj.weight", (H, q)))
        if L["o_proj_bias"]:
            out.append(((i, "o_bias"), p + "self_attn.o_proj.bias", (H,)))
        if L["qk_norm"]:
            out.append(((i, "q_norm"), p + "self_attn.q_norm.weight", (hd,)))
            out.append(((i, "k_norm"), p + "self_attn.k_norm.weight", (hd,)))
        out.append(((i, "post_attention_layernorm"), p + "post_attention_layernorm.weight", (H,)))
        for n, shape in (("gate", (I, H)), ("up", (I, H)), ("down", (H, I))):
            out.append(((i, n + "_proj"), p + "mlp.%s_proj.weight" % n, shape))
            if L["mlp_bias"]:
                out.append(((i, n + "_bias"), p + "mlp.%s_proj.bias" % n, (shape[0],)))
    if not eagle1:
        out.append(("norm", "norm.weight", (H,)))
        out.append(("lm_head", "lm_head.weight", (Vd, H)))
    if c.kind == "peagle":
        out.append(("mask_hidden", "mask_hidden", (c.feature_width(),)))
    return out


# hash_layer_weights (reference/io/llama_checkpoint.cpp): (member, is_matrix) in hash order.
_LAYER_HASH_ORDER = (("input_layernorm", False), ("q_proj", True), ("k_proj", True), ("v_proj", True),
                     ("q_bias", False), ("k_bias", False), ("v_bias", False), ("o_proj", True), ("o_bias", False),
                     ("q_norm", False), ("k_norm", False), ("post_attention_layernorm", False),
                     ("gate_proj", True), ("up_proj", True), ("down_proj", True),
                     ("gate_bias", False), ("up_bias", False), ("down_bias", False))


def _head_fingerprint(c, names, shape_of, read, where, allow_unused):
    """eagle_head_fingerprint over tensors reached through shape_of(name), read(name, integer)
    and where(name) (the file, for messages)."""
    listed = head_tensors(c)
    unused = sorted(set(names) - {name for _, name, _ in listed} - {"d2t", "t2d"})
    if unused and not allow_unused:
        # specdec loads a head without them, so its fingerprint would not cover them.
        shown = ", ".join("'%s'" % n for n in unused[:5]) + (", ..." if len(unused) > 5 else "")
        raise ValueError("%s: unexpected tensor%s %s for %s: specdec does not read %s, so the fingerprint would not "
                         "cover %s; pass allow_unused=True to hash the head as specdec loads it"
                         % (where(unused[0]), "s" if len(unused) > 1 else "", shown, c.describe(),
                            *(("them", "them") if len(unused) > 1 else ("it", "it"))))
    members = {}
    for slot, name, shape in listed:
        if name not in names:
            raise ValueError("%s: missing tensor '%s' (expected for %s)" % (where(None), name, c.describe()))
        got = tuple(shape_of(name))
        if slot == "mask_hidden":
            ok = len(got) >= 1 and got[-1] == shape[0] and all(d == 1 for d in got[:-1])
        else:
            ok = got == shape
        if not ok:
            raise ValueError("%s: tensor '%s' has shape %s, expected %s%s for %s"
                             % (where(name), name, list(got), list(shape),
                                " (optionally with leading 1-dimensions)" if slot == "mask_hidden" else "",
                                c.describe()))
        members[slot] = name
    V, Vd = c.target_vocab, c.draft_vocab
    if Vd != V and "d2t" not in names:
        raise ValueError("%s: missing tensor 'd2t' (expected for %s: draft_vocab_size %d differs from vocab_size %d)"
                         % (where(None), c.describe(), Vd, V))
    d2t = t2d = None
    if "d2t" in names:
        if tuple(shape_of("d2t")) != (Vd,):
            raise ValueError("%s: tensor 'd2t' has shape %s, expected [%d] (draft_vocab_size)"
                             % (where("d2t"), list(shape_of("d2t")), Vd))
        d2t = read("d2t", True)
    if "t2d" in names:
        if d2t is None:
            raise ValueError("%s: tensor 't2d' is present without 'd2t'" % where("t2d"))
        if tuple(shape_of("t2d")) != (V,):
            raise ValueError("%s: tensor 't2d' has shape %s, expected [%d] (vocab_size)"
                             % (where("t2d"), list(shape_of("t2d")), V))
        t2d = read("t2d", True)
        bad = (t2d != 0) & (t2d != 1)
        if bad.any():
            raise ValueError("%s: tensor 't2d' holds %d, expected booleans (0 or 1)" % (where("t2d"), int(t2d[bad][0])))
    if d2t is not None:
        # target id = draft id + d2t[draft id]: inside [0, V) and injective (check_eagle_weights).
        ok = (d2t > -2 ** 62) & (d2t < 2 ** 62)
        target = np.where(ok, np.arange(Vd, dtype=np.int64) + np.where(ok, d2t, 0), -1)
        bad = np.flatnonzero((target < 0) | (target >= V))
        if bad.size:
            d = int(bad[0])
            raise ValueError("%s: tensor 'd2t' maps draft id %d (offset %d) to target id %d + %d, outside [0, %d)"
                             % (where("d2t"), d, int(d2t[d]), d, int(d2t[d]), V))
        first = np.unique(target, return_index=True)[1]
        if first.size != Vd:
            d = int(np.setdiff1d(np.arange(Vd), first)[0])
            raise ValueError("%s: tensor 'd2t' maps two draft ids to target id %d" % (where("d2t"), int(target[d])))
        seen = np.zeros(V, dtype=np.uint8)
        seen[target] = 1
        if t2d is not None and (t2d != seen).any():
            t = int(np.flatnonzero(t2d != seen)[0])
            raise ValueError("%s: tensor 't2d' disagrees with 'd2t' at target id %d" % (where("t2d"), t))
        t2d = seen  # the loaded head keeps t2d explicit, derived from d2t when absent

    def get(slot):
        name = members.get(slot)
        return None if name is None else read(name, False)

    h = Fnv1a64()
    h.update_matrix(get("fc"))
    h.update_vector(get("fc_bias"))
    h.update_vector(get("hidden_norm"))
    for i in range(c.num_layers):
        for member, is_matrix in _LAYER_HASH_ORDER:
            (h.update_matrix if is_matrix else h.update_vector)(get((i, member)))
    h.update_vector(get("norm"))
    h.update_matrix(get("lm_head"))       # EAGLE-1 uses the target's: hashed as empty
    h.update_matrix(get("embed_tokens"))  # without embed_tokens.weight the target's: empty
    if d2t is not None:
        h.update(np.ascontiguousarray(d2t, dtype="<i8").tobytes())  # each entry as a u64
        h.update(np.ascontiguousarray(t2d, dtype=np.uint8).tobytes())
    h.update_vector(get("mask_hidden"))
    return h.str()


def _array_as_float32(a, where):
    a = np.asarray(a)
    if a.dtype == np.float16:
        return _half_to_float32(a.view(np.uint16))
    if a.dtype.name == "bfloat16":  # e.g. ml_dtypes
        return (a.view(np.uint16).astype(np.uint32) << np.uint32(16)).view(np.float32)
    if a.dtype.kind != "f" and not a.dtype.name.startswith("float8"):
        raise ValueError("%s has dtype %s, expected a floating-point dtype" % (where, a.dtype))
    return a.astype("<f4")


def eagle_head_fingerprint(tensors, config, source="drafter head", allow_unused=False):
    """The fingerprint specdec records for an EAGLE-family head given as tensors: `tensors` maps
    the checkpoint's names in the head's layout (head_tensors) to arrays (floats of any float
    dtype, widened exactly to float32; "d2t" and "t2d" integers or booleans); `config` is its
    HeadConfig (parse_head_config). `source` names the head in messages. A tensor the head has
    no place for raises ValueError unless `allow_unused` (specdec ignores it)."""
    def shape_of(name):
        return np.shape(tensors[name])

    def read(name, integer):
        where = "%s: tensor '%s'" % (source, name)
        a = np.asarray(tensors[name])
        if not integer:
            return _array_as_float32(a, where)
        if a.dtype.kind not in "biu":
            raise ValueError("%s has dtype %s, expected an integer or boolean dtype" % (where, a.dtype))
        if a.dtype.kind == "u" and a.size and int(a.max()) > _INT64_MAX:
            raise ValueError("%s holds a value that does not fit in int64" % where)
        return a.astype(np.int64)

    return _head_fingerprint(config, list(tensors), shape_of, read, lambda name: source, allow_unused)


def _head_paths(path):
    path = os.fspath(path)
    if not os.path.exists(path):
        raise ValueError("drafter head checkpoint '%s' does not exist" % path)
    # A weight file (.safetensors or the shard index) takes its config.json from its directory.
    directory = path if os.path.isdir(path) else (os.path.dirname(path) or ".")
    return path, os.path.join(directory, "config.json")


def _read_json(path, what):
    try:
        with open(path, "rb") as f:
            return json.loads(f.read())
    except OSError:
        raise ValueError("cannot open %s '%s'" % (what, path)) from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ValueError("%s: not valid JSON: %s" % (path, e)) from None


def _parse_head(path, config_path, store, target):
    target_path = None if target is None else os.path.join(os.fspath(target), "config.json")
    target_config = None if target is None else _read_json(target_path, "target config")
    return parse_head_config(_read_json(config_path, "drafter head config"), store.names(), config_path,
                             target_config, target_path)


def head_config(path, target=None):
    """The HeadConfig of the drafter head checkpoint at `path` (a directory with config.json and
    model.safetensors or a shard index, or one of those weight files); `target`, the target's
    checkpoint directory, adds the loader's checks against it."""
    path, config_path = _head_paths(path)
    return _parse_head(path, config_path, _TensorStore(path), target)


def head_fingerprint(path, target=None, allow_unused=False):
    """The fingerprint specdec records for the EAGLE-1, EAGLE-3 or P-EAGLE head at `path` (see
    head_config), without running specdec: FNV-1a 64 over the head's tensors as specdec loads
    them, widened to float32 (reference/drafters/eagle_checkpoint.cpp eagle_head_fingerprint;
    traces/SCHEMA.md "Fingerprints"). The layouts are those specdec reads: SafeAILab EAGLE-1 and
    EAGLE-3, AWS P-EAGLE, speculators EAGLE-3 and P-EAGLE; dtypes F32, F16, BF16, F64, F8_E5M2,
    F8_E4M3, and any integer or BOOL dtype for d2t / t2d. `target` (the target's checkpoint
    directory) also checks the head against it; the fingerprint itself does not depend on it.

    Raises ValueError naming the file and what was unexpected for anything the loader refuses (an
    unrecognised layout, a missing or mis-shaped tensor, a dtype, an inconsistent d2t / t2d) and
    for a tensor the head has no place for, which specdec ignores; `allow_unused` ignores those
    too. Config fields that decide no tensor (RoPE, eps, ...) are not checked here. The hash runs
    in pure Python, at a few MB of float32 per second."""
    path, config_path = _head_paths(path)
    store = _TensorStore(path)
    c = _parse_head(path, config_path, store, target)

    def where(name):
        return store.file_of(name) if name is not None else path

    return _head_fingerprint(c, store.names(), store.shape, store.read, where, allow_unused)


# ---------------------------------------------------------------------------------------------
# Logits summaries.

def topk_summary(row, k):
    """(ids, values, logsumexp, checksum) of a logits row, as traces/logit_summary.cpp computes them:
    ids by descending logit, equal logits by lower id, NaN last; logsumexp in double, shifted by the
    row maximum, summed in index order."""
    row = np.asarray(row, dtype=np.float32)
    V = row.shape[0]
    k = min(k, V)
    key = np.where(np.isnan(row), -np.inf, row.astype(np.float64))
    nan_rank = np.isnan(row).astype(np.int8)
    order = np.lexsort((np.arange(V), -key, nan_rank))  # last key is primary
    ids = order[:k].astype(np.int32)
    values = row[ids]
    if np.isnan(row).any():
        lse = float("nan")
    else:
        m = float(np.max(row.astype(np.float64)))
        if np.isinf(m):
            lse = m
        else:
            s = 0.0
            for x in row.astype(np.float64):
                s += float(np.exp(x - m))
            lse = m + float(np.log(s))
    return ids, values, lse, fnv1a64_row(row)


# ---------------------------------------------------------------------------------------------
# The writer.

@dataclass
class ModelInfo:
    path: str          # where the checkpoint was loaded from (provenance)
    fingerprint: str   # "fnv1a64:<16 hex digits>", see weights_fingerprint
    config_json: str   # the model's config.json text (or a dict)


def _write_file_attributes(f, schema_version, specdec_version, created_utc, exactness_contract):
    """The root attributes every trace file carries, one sequence's or a batch's."""
    s = h5py.string_dtype("utf-8")
    f.attrs.create("format", FORMAT, dtype=s)
    f.attrs.create("schema_version", schema_version, dtype=s)
    f.attrs.create("specdec_version", specdec_version, dtype=s)
    f.attrs.create("created_utc", created_utc, dtype=s)
    if exactness_contract:
        f.attrs.create("exactness_contract", exactness_contract, dtype=s)


def _write_atomically(path, fill):
    """Writes an HDF5 file under a temporary name beside `path`, renamed into place on success."""
    d = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".trace-", suffix=".h5.tmp", dir=d)
    os.close(fd)
    try:
        with h5py.File(tmp, "w") as f:
            fill(f)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


class TraceWriter:
    """Collects steps, then writes one trace file atomically."""

    def __init__(self, method, prompt, seed, sampling, config, models, created_utc=None,
                 specdec_version="python-trace-writer", exactness_contract=EXACTNESS_CONTRACT):
        if method not in METHODS:
            raise ValueError("method %r, expected one of %s" % (method, ", ".join(METHODS)))
        self.method = method
        self.prompt = np.asarray(prompt, dtype=np.int32)
        self.seed = int(seed)
        self.sampling = dict(sampling)
        self.config = dict(config)
        self.config.setdefault("method", {"method": method})
        self.models = dict(models)
        self.created_utc = created_utc or datetime.datetime.utcnow().strftime("%Y-%m-%dT%H:%M:%SZ")
        self.specdec_version = specdec_version
        self.exactness_contract = exactness_contract
        self.steps = []
        self.target_layers = None  # (num_layers, hidden_size, substeps)
        self.drafter_widths = None  # dict feature_size / hidden_size / vocab_size

    def set_target_layers(self, num_layers, hidden_size, substeps=("attention", "mlp")):
        """Declare the optional per-layer target tensors (every step must then pass layer_hidden)."""
        self.target_layers = (int(num_layers), int(hidden_size), tuple(substeps))

    def set_drafter_io(self, feature_size=0, hidden_size=0, vocab_size=0):
        """Declare the optional drafter inputs/outputs (every step may pass drafter_*; 0 = not recorded)."""
        self.drafter_widths = {"features": int(feature_size), "hidden": int(hidden_size), "logits": int(vocab_size)}

    def add_step(self, emitted_tokens, target_logits=None, draft_tokens=None, draft_parents=None,
                 accepted_path=None, accept_decisions=None, accept_nodes=None, accept_uniforms=None,
                 bonus_token=-1, random_counters=None, draft_logits=None, draft_logit_nodes=None,
                 layer_row_nodes=None, layer_hidden=None, drafter_tokens=None, drafter_positions=None,
                 drafter_calls=None, drafter_features=None, drafter_hidden=None, drafter_logits=None):
        """One target forward that emitted `emitted_tokens`. target_logits: (1 + draft nodes, V)
        raw logits; layer_hidden: (R, L, U, H) for the rows `layer_row_nodes` (-1 = root)."""
        self.steps.append(dict(locals()))
        del self.steps[-1]["self"]

    # -- writing ------------------------------------------------------------------------------

    def write(self, path, stop_reason, logits="full", logit_top_k=20, draft_logits_storage=None):
        """Writes the trace to `path` atomically. logits: "full" or "topk" (target rows)."""
        if stop_reason not in ("max_tokens", "eos"):
            raise ValueError("stop_reason %r, expected 'max_tokens' or 'eos'" % stop_reason)
        _write_atomically(path, lambda f: self._write(f, stop_reason, logits, logit_top_k, draft_logits_storage or logits))

    def _write(self, f, stop_reason, logits, k, draft_storage):
        _write_file_attributes(f, SCHEMA_VERSION, self.specdec_version, self.created_utc, self.exactness_contract)
        self._write_run(f, stop_reason, logits, k, draft_storage)

    def _write_run(self, f, stop_reason, logits, k, draft_storage):
        """The sequence's run under `f`: the file's root (schema 1.2) or a sequence group (2.0)."""
        s = h5py.string_dtype("utf-8")

        def text(group, name, value):
            group.create_dataset(name, data=value, dtype=s)

        f.attrs.create("method", self.method, dtype=s)
        meta = f.create_group("meta")
        meta.attrs.create("seed", self.seed, dtype="<u8")
        text(meta, "config_json", json.dumps(self.config, separators=(",", ":")))
        text(meta, "sampling_json", json.dumps(self.sampling, separators=(",", ":")))
        models = meta.create_group("models")
        for role, m in self.models.items():
            g = models.create_group(role)
            g.attrs.create("path", m.path, dtype=s)
            g.attrs.create("fingerprint", m.fingerprint, dtype=s)
            cj = m.config_json if isinstance(m.config_json, str) else json.dumps(m.config_json)
            text(g, "config_json", cj)

        f.create_dataset("prompt/tokens", data=self.prompt, dtype="<i4")
        steps = f.create_group("steps")
        P = len(self.prompt)
        positions, output = [], []
        for st in self.steps:
            positions.append(P + len(output))
            output.extend(int(t) for t in st["emitted_tokens"])
        steps.create_dataset("positions", data=np.asarray(positions, dtype="<i8"), dtype="<i8")

        def column(name, key, dtype, aligned=False, required=False):
            vals = [np.asarray(st[key] if st[key] is not None else [], dtype=dtype).reshape(-1) for st in self.steps]
            if not required and not any(len(v) for v in vals):
                return False
            flat = np.concatenate(vals) if vals else np.zeros(0, dtype)
            steps.create_dataset(name, data=flat.astype(dtype), dtype=dtype)
            if not aligned:
                off = np.concatenate([[0], np.cumsum([len(v) for v in vals])]).astype("<i8")
                steps.create_dataset(name + "_offsets", data=off, dtype="<i8")
            return True

        column("emitted_tokens", "emitted_tokens", "<i4", required=True)
        if column("draft_tokens", "draft_tokens", "<i4"):
            column("draft_parents", "draft_parents", "<i4", aligned=True, required=True)
        column("accepted_path", "accepted_path", "<i4")
        if column("accept_decisions", "accept_decisions", "u1"):
            column("accept_nodes", "accept_nodes", "<i4", aligned=True)
        column("accept_uniforms", "accept_uniforms", "<f8")
        bonus = [int(st["bonus_token"]) for st in self.steps]
        if any(b != -1 for b in bonus):
            steps.create_dataset("bonus_token", data=np.asarray(bonus, dtype="<i4"), dtype="<i4")
        counters = [np.asarray(st["random_counters"] if st["random_counters"] is not None else np.zeros((0, 4)),
                               dtype="<u4").reshape(-1, 4) for st in self.steps]
        if any(len(c) for c in counters):
            steps.create_dataset("random_counters", data=np.concatenate(counters), dtype="<u4")
            off = np.concatenate([[0], np.cumsum([len(c) for c in counters])]).astype("<i8")
            steps.create_dataset("random_counters_offsets", data=off, dtype="<i8")

        self._logits(steps, "target_logits", "target_logits", logits, k, None)
        self._logits(steps, "draft_logits", "draft_logits", draft_storage, k, "draft_logit_nodes")
        self._layers(steps)
        self._drafter_io(steps)

        f.create_dataset("output/tokens", data=np.asarray(output, dtype="<i4"), dtype="<i4")
        text(f["output"], "stop_reason", stop_reason)
        timing = f.create_group("timing")
        timing.attrs.create("prefill_ns", 0, dtype="<i8")
        timing.attrs.create("total_ns", 0, dtype="<i8")

    def _logits(self, steps, name, key, storage, k, nodes_key):
        rows = [None if st[key] is None else np.asarray(st[key], dtype=np.float32) for st in self.steps]
        if all(r is None or r.size == 0 for r in rows):
            return
        V = next(r.shape[-1] for r in rows if r is not None and r.size)
        rows = [np.zeros((0, V), np.float32) if r is None else r.reshape(-1, V) for r in rows]
        g = steps.create_group(name)
        s = h5py.string_dtype("utf-8")
        off = np.concatenate([[0], np.cumsum([len(r) for r in rows])]).astype("<i8")
        g.create_dataset("row_offsets", data=off, dtype="<i8")
        g.attrs.create("vocab_size", V, dtype="<i8")
        allrows = np.concatenate(rows)
        if storage == "full":
            g.attrs.create("storage", "full", dtype=s)
            g.create_dataset("full", data=allrows, dtype="<f4")
        else:
            kk = min(k, V)
            g.attrs.create("storage", "topk", dtype=s)
            g.attrs.create("k", kk, dtype="<i8")
            summaries = [topk_summary(r, kk) for r in allrows]
            g.create_dataset("topk_ids", data=np.asarray([x[0] for x in summaries], "<i4").reshape(-1, kk), dtype="<i4")
            g.create_dataset("topk_values", data=np.asarray([x[1] for x in summaries], "<f4").reshape(-1, kk), dtype="<f4")
            g.create_dataset("logsumexp", data=np.asarray([x[2] for x in summaries], "<f8"), dtype="<f8")
            g.create_dataset("checksum", data=np.asarray([x[3] for x in summaries], "<u8"), dtype="<u8")
        if nodes_key is not None:
            nodes = [np.asarray(st[nodes_key] if st[nodes_key] is not None else [], "<i4") for st in self.steps]
            g.create_dataset("row_nodes", data=np.concatenate(nodes) if nodes else np.zeros(0, "<i4"), dtype="<i4")

    def _layers(self, steps):
        if self.target_layers is None:
            return
        L, H, subs = self.target_layers
        U = len(subs)
        g = steps.create_group("target_layers")
        s = h5py.string_dtype("utf-8")
        g.attrs.create("num_layers", L, dtype="<i8")
        g.attrs.create("hidden_size", H, dtype="<i8")
        g.attrs.create("substeps", ",".join(subs), dtype=s)
        nodes, hidden = [], []
        for st in self.steps:
            n = np.asarray(st["layer_row_nodes"] if st["layer_row_nodes"] is not None else [], "<i4")
            h = np.asarray(st["layer_hidden"] if st["layer_hidden"] is not None else np.zeros((0, L, U, H)), "<f4")
            if h.shape != (len(n), L, U, H):
                raise ValueError("layer_hidden of step %d has shape %s, expected %s" % (len(nodes), h.shape, (len(n), L, U, H)))
            nodes.append(n)
            hidden.append(h.reshape(-1, H))
        off = np.concatenate([[0], np.cumsum([len(n) for n in nodes])]).astype("<i8")
        g.create_dataset("row_offsets", data=off, dtype="<i8")
        g.create_dataset("row_nodes", data=np.concatenate(nodes), dtype="<i4")
        g.create_dataset("hidden", data=np.concatenate(hidden), dtype="<f4")

    def _drafter_io(self, steps):
        if self.drafter_widths is None:
            return
        g = steps.create_group("drafter_io")

        def col(key, dtype):
            return [np.asarray(st[key] if st[key] is not None else [], dtype).reshape(-1) for st in self.steps]

        tokens = col("drafter_tokens", "<i4")
        off = np.concatenate([[0], np.cumsum([len(t) for t in tokens])]).astype("<i8")
        g.create_dataset("row_offsets", data=off, dtype="<i8")
        g.create_dataset("tokens", data=np.concatenate(tokens), dtype="<i4")
        g.create_dataset("positions", data=np.concatenate(col("drafter_positions", "<i8")), dtype="<i8")
        g.create_dataset("calls", data=np.concatenate(col("drafter_calls", "<i4")), dtype="<i4")
        for name, width in self.drafter_widths.items():
            if width <= 0:
                continue
            blocks = [np.asarray(st["drafter_" + name] if st["drafter_" + name] is not None else np.zeros((0, width)), "<f4").reshape(-1, width)
                      for st in self.steps]
            g.create_dataset(name, data=np.concatenate(blocks), dtype="<f4")


class BatchedTraceWriter:
    """Several sequences an engine decoded together (continuous batching), written as one batched
    trace (traces/SCHEMA.md "Batched traces", schema 2.0) that ``specdec validate --candidate``
    checks sequence by sequence.

    Each sequence is a TraceWriter holding its run exactly as a one-sequence trace would (its
    prompt, configuration and steps), under its sequence id: the id its random streams are keyed
    by, written into its configuration as "sequence". The schedule says, per batch step (one
    target forward of the batch), which sequences it held in row order and how many rows each fed
    (its prompt at its first step, else 1 + its draft nodes).

        b = BatchedTraceWriter(max_in_flight=2)
        b.add_sequence(0, writer_0, "max_tokens")
        b.add_sequence(1, writer_1, "eos")
        b.add_batch_step([(0, len(prompt_0)), (1, len(prompt_1))])   # both prefills
        b.add_batch_step([(0, 4), (1, 4)])                            # then K = 3 chains
        b.write("batch.h5")
    """

    def __init__(self, max_in_flight, created_utc=None, specdec_version="python-trace-writer",
                 exactness_contract=EXACTNESS_CONTRACT):
        self.max_in_flight = int(max_in_flight)
        if self.max_in_flight < 1:
            raise ValueError("max_in_flight %d, expected >= 1" % self.max_in_flight)
        self.created_utc = created_utc or datetime.datetime.utcnow().strftime("%Y-%m-%dT%H:%M:%SZ")
        self.specdec_version = specdec_version
        self.exactness_contract = exactness_contract
        self.sequences = []  # (id, writer, stop_reason, logits, logit_top_k, draft_logits_storage)
        self.schedule = []   # per batch step: [(sequence, step, rows)]

    def add_sequence(self, sequence, writer, stop_reason, logits="full", logit_top_k=20, draft_logits_storage=None):
        """The run of sequence `sequence` (0 <= id < 2**32, distinct); arguments as TraceWriter.write."""
        sequence = int(sequence)
        if not 0 <= sequence < 2 ** 32:
            raise ValueError("sequence id %d, expected 0 <= id < 2**32" % sequence)
        if any(q[0] == sequence for q in self.sequences):
            raise ValueError("sequence id %d added twice; ids must be distinct" % sequence)
        if writer.config.get("sequence", sequence) != sequence:
            raise ValueError("sequence %d: its configuration says sequence %r" % (sequence, writer.config["sequence"]))
        if stop_reason not in ("max_tokens", "eos"):
            raise ValueError("sequence %d: stop_reason %r, expected 'max_tokens' or 'eos'" % (sequence, stop_reason))
        writer.config["sequence"] = sequence
        self.sequences.append((sequence, writer, stop_reason, logits, logit_top_k, draft_logits_storage or logits))

    def add_batch_step(self, entries):
        """One target forward of the batch: (sequence, rows) per entry in row order, or
        (sequence, step, rows) to name the sequence's step (default: its next unscheduled one)."""
        step = []
        for e in entries:
            if len(e) == 2:
                q, rows = int(e[0]), int(e[1])
                s = sum(1 for t in self.schedule for x in t if x[0] == q)
            else:
                q, s, rows = int(e[0]), int(e[1]), int(e[2])
            step.append((q, s, rows))
        self.schedule.append(step)

    def write(self, path):
        """Writes the batch to `path` atomically."""
        ids = {q[0] for q in self.sequences}
        if not self.sequences:
            raise ValueError("no sequences; add_sequence at least one")
        for t, step in enumerate(self.schedule):
            for q, _, _ in step:
                if q not in ids:
                    raise ValueError("batch step %d names sequence %d, which was not added" % (t, q))
        _write_atomically(path, self._write)

    def _write(self, f):
        _write_file_attributes(f, BATCHED_SCHEMA_VERSION, self.specdec_version, self.created_utc, self.exactness_contract)
        batch = f.create_group("batch")
        batch.attrs.create("max_in_flight", self.max_in_flight, dtype="<i8")
        batch.create_dataset("sequence_ids", data=np.asarray([q[0] for q in self.sequences], "<i8"), dtype="<i8")
        g = batch.create_group("schedule")
        flat = [e for step in self.schedule for e in step]
        g.create_dataset("sequence", data=np.asarray([e[0] for e in flat], "<i8"), dtype="<i8")
        g.create_dataset("sequence_offsets", data=np.concatenate([[0], np.cumsum([len(t) for t in self.schedule])]).astype("<i8"),
                         dtype="<i8")
        g.create_dataset("step", data=np.asarray([e[1] for e in flat], "<i8"), dtype="<i8")
        g.create_dataset("rows", data=np.asarray([e[2] for e in flat], "<i8"), dtype="<i8")
        for q, w, stop, logits, k, draft_storage in self.sequences:
            w._write_run(f.create_group("sequences/%d" % q), stop, logits, k, draft_storage)


def copy_batched_run(trace_path):
    """Reads a specdec batched trace into a BatchedTraceWriter holding the same sequences and
    schedule (each sequence as copy_run gives it), e.g. to re-emit a batch through this writer."""
    with h5py.File(trace_path, "r") as f:
        created = f.attrs["created_utc"]
        b = BatchedTraceWriter(int(f["batch"].attrs["max_in_flight"]), created_utc=created)
        for q in f["batch/sequence_ids"][()]:
            w, stop = _copy_run(f["sequences/%d" % q], created)
            b.add_sequence(int(q), w, stop)
        g = f["batch/schedule"]
        off, seq, step, rows = (g[n][()] for n in ("sequence_offsets", "sequence", "step", "rows"))
        for t in range(len(off) - 1):
            b.add_batch_step([(seq[e], step[e], rows[e]) for e in range(off[t], off[t + 1])])
    return b


def copy_run(trace_path):
    """Reads a specdec trace into a TraceWriter holding the same run (prompt, configuration, every
    step), e.g. to re-emit a reference run through this writer. Logits rows are taken in full
    (top-k traces: None)."""
    with h5py.File(trace_path, "r") as f:
        return _copy_run(f, f.attrs["created_utc"])


def _copy_run(f, created_utc):
    """(TraceWriter, stop_reason) of the run under `f`: a 1.x file's root or a sequence group."""
    steps = f["steps"]
    models = {role: ModelInfo(g.attrs["path"], g.attrs["fingerprint"], g["config_json"].asstr()[()])
              for role, g in f["meta/models"].items()}
    w = TraceWriter(f.attrs["method"], f["prompt/tokens"][()], int(f["meta"].attrs["seed"]),
                    json.loads(f["meta/sampling_json"].asstr()[()]), json.loads(f["meta/config_json"].asstr()[()]),
                    models, created_utc=created_utc)

    def ragged(name, S):
        if name not in steps:
            return [None] * S
        off = steps[name + "_offsets"][()]
        flat = steps[name][()]
        return [flat[off[i]:off[i + 1]] for i in range(S)]

    def aligned(name, base, S):
        if name not in steps:
            return [None] * S
        off = steps[base + "_offsets"][()]
        flat = steps[name][()]
        return [flat[off[i]:off[i + 1]] for i in range(S)]

    S = len(steps["positions"])
    cols = {k: ragged(k, S) for k in ("emitted_tokens", "draft_tokens", "accepted_path", "accept_decisions", "accept_uniforms")}
    cols["draft_parents"] = aligned("draft_parents", "draft_tokens", S)
    cols["accept_nodes"] = aligned("accept_nodes", "accept_decisions", S)
    bonus = steps["bonus_token"][()] if "bonus_token" in steps else [-1] * S
    counters = ragged("random_counters", S)

    def rows(name):
        if name not in steps or steps[name].attrs["storage"] != "full":
            return [None] * S, [None] * S
        g = steps[name]
        off = g["row_offsets"][()]
        full = g["full"][()]
        nodes = g["row_nodes"][()] if "row_nodes" in g else None
        return ([full[off[i]:off[i + 1]] for i in range(S)],
                [None if nodes is None else nodes[off[i]:off[i + 1]] for i in range(S)])

    tl, _ = rows("target_logits")
    dl, dn = rows("draft_logits")
    for i in range(S):
        w.add_step(cols["emitted_tokens"][i], target_logits=tl[i], draft_tokens=cols["draft_tokens"][i],
                   draft_parents=cols["draft_parents"][i], accepted_path=cols["accepted_path"][i],
                   accept_decisions=cols["accept_decisions"][i], accept_nodes=cols["accept_nodes"][i],
                   accept_uniforms=cols["accept_uniforms"][i], bonus_token=int(bonus[i]),
                   random_counters=counters[i], draft_logits=dl[i], draft_logit_nodes=dn[i])
    stop = f["output/stop_reason"].asstr()[()]
    return w, stop
