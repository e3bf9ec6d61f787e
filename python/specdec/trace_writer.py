"""Write specdec traces (traces/SCHEMA.md, schema 1.2) from any engine, with h5py and numpy only.

For engines that cannot link specdec's C++ library: record what each decoding step computed, then
``write()`` a trace that ``specdec trace check`` accepts and ``specdec validate --trace`` replays
against the reference. This module does not import the compiled extension ``specdec._core``.

    from specdec.trace_writer import TraceWriter, ModelInfo, checkpoint_fingerprint

    w = TraceWriter("sequential", prompt=[5, 17, 42], seed=0,
                    sampling={"mode": "greedy", "temperature": 1.0, "top_k": 0, "top_p": 1.0, "seed": 0},
                    config={"max_new_tokens": 8, "stop_at_eos": True},
                    models={"target": ModelInfo("models/target", checkpoint_fingerprint("models/target"),
                                                open("models/target/config.json").read())})
    for token, logits in my_engine_steps():
        w.add_step([token], target_logits=logits[None, :])
    w.write("run.h5", stop_reason="max_tokens")
"""

import datetime
import json
import os
import struct
import tempfile
from dataclasses import dataclass

import h5py
import numpy as np

SCHEMA_VERSION = "1.2"
EXACTNESS_CONTRACT = "2"  # reference/core/exact_math.hpp kContractVersion
FORMAT = "specdec-trace"
METHODS = ("sequential", "draft", "eagle", "eagle3", "peagle")
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
            arr = np.frombuffer(raw, dtype="<f2").astype(np.float32)
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
        d = os.path.dirname(os.path.abspath(path))
        fd, tmp = tempfile.mkstemp(prefix=".trace-", suffix=".h5.tmp", dir=d)
        os.close(fd)
        try:
            with h5py.File(tmp, "w") as f:
                self._write(f, stop_reason, logits, logit_top_k, draft_logits_storage or logits)
            os.replace(tmp, path)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise

    def _write(self, f, stop_reason, logits, k, draft_storage):
        s = h5py.string_dtype("utf-8")

        def text(group, name, value):
            group.create_dataset(name, data=value, dtype=s)

        f.attrs.create("format", FORMAT, dtype=s)
        f.attrs.create("schema_version", SCHEMA_VERSION, dtype=s)
        f.attrs.create("specdec_version", self.specdec_version, dtype=s)
        f.attrs.create("method", self.method, dtype=s)
        f.attrs.create("created_utc", self.created_utc, dtype=s)
        if self.exactness_contract:
            f.attrs.create("exactness_contract", self.exactness_contract, dtype=s)

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


def copy_run(trace_path):
    """Reads a specdec trace into a TraceWriter holding the same run (prompt, configuration, every
    step), e.g. to re-emit a reference run through this writer. Logits rows are taken in full
    (top-k traces: None)."""
    with h5py.File(trace_path, "r") as f:
        steps = f["steps"]
        models = {role: ModelInfo(g.attrs["path"], g.attrs["fingerprint"], g["config_json"].asstr()[()])
                  for role, g in f["meta/models"].items()}
        w = TraceWriter(f.attrs["method"], f["prompt/tokens"][()], int(f["meta"].attrs["seed"]),
                        json.loads(f["meta/sampling_json"].asstr()[()]), json.loads(f["meta/config_json"].asstr()[()]),
                        models, created_utc=f.attrs["created_utc"])

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
