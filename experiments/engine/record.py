"""Writes an engine run as a specdec candidate trace (traces/SCHEMA.md, 1.2): every required field,
full target logits rows, log q rows of sampled drafts, and the optional diagnostics that let
`specdec validate --candidate` name the first layer out of tolerance: the target's hidden state
after every decoder layer's sub-steps (input_norm, attention, post_attention_norm, mlp) in every
target forward (the prefill's last prompt row; every row of a verify forward: the pending token
and each draft node), and the drafter's inputs and outputs.

Written with the project's pure-Python writer, python/specdec/trace_writer.py (h5py only).
"""
import json
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "python"))

from specdec import trace_writer  # noqa: E402

ENGINE_NAME = "pytorch-outside-engine"
SUBSTEPS = ("input_norm", "attention", "post_attention_norm", "mlp")

_fingerprint_cache = {}


def reference_fingerprints(model_dir, method, drafter_dir):
    """The fingerprints specdec gives the target and drafter weights (traces/SCHEMA.md
    "Fingerprints"), computed by the trace writer in Python without running specdec:
    checkpoint_fingerprint for the target and for a draft LM, head_fingerprint for an EAGLE-family
    head; and the exactness contract version that specdec computes under (which
    `specdec validate --candidate` requires a trace to carry), the writer's EXACTNESS_CONTRACT,
    its copy of reference/core/exact_math.hpp kContractVersion (tests/python/test_trace_writer.py
    checks it against what `specdec record` writes). Returns {"target": ..., "drafter": ..., "exactness_contract": ...}; raises
    ValueError for a checkpoint specdec would refuse or a head of another kind than `method` needs."""
    key = (os.path.abspath(model_dir), method, os.path.abspath(drafter_dir) if drafter_dir else None)
    if key in _fingerprint_cache:
        return _fingerprint_cache[key]
    out = {"target": trace_writer.checkpoint_fingerprint(model_dir), "drafter": "unknown",
           "exactness_contract": trace_writer.EXACTNESS_CONTRACT}
    # What the method drafts with (the registry's table): specdec record refuses another head kind.
    drafts_with = trace_writer.METHOD_DRAFTERS.get(method)
    if drafts_with == "draft_lm":
        out["drafter"] = trace_writer.checkpoint_fingerprint(drafter_dir)
    elif drafts_with is not None:
        kind = trace_writer.head_config(drafter_dir, target=model_dir).kind
        if kind != drafts_with:
            raise ValueError(f"{drafter_dir} holds a head of kind {kind}; method {method} needs {drafts_with}")
        # As specdec loads the head: tensors it does not read are not part of its fingerprint.
        out["drafter"] = trace_writer.head_fingerprint(drafter_dir, target=model_dir, allow_unused=True)
    _fingerprint_cache[key] = out
    return out


def _config_text(model_dir):
    with open(os.path.join(model_dir, "config.json")) as f:
        return json.dumps(json.load(f), separators=(",", ":"), sort_keys=True)


def trace_dict(engine, run, fingerprints=None):
    """The run as plain Python/numpy data, one entry per schema object."""
    fp = fingerprints or {"target": "unknown", "drafter": "unknown"}
    steps = run["steps"]
    name = ENGINE_NAME if engine.bug is None else f"{ENGINE_NAME} (bug {engine.bug})"
    config = {"method": engine.method_json(), "backend": ENGINE_NAME, "engine": name, "threads": 1, "max_new_tokens": run["max_new_tokens"],
              "stop_at_eos": run["stop_at_eos"], "sequence": 0, "logits": "full"}
    return {
        "method": engine.method,
        "seed": engine.sampling.seed,
        "config_json": json.dumps(config, separators=(",", ":")),
        "sampling_json": json.dumps(engine.sampling.to_json(), separators=(",", ":")),
        "models": {
            "target": {"path": engine.model_dir, "fingerprint": fp["target"], "config_json": _config_text(engine.model_dir)},
            "drafter": {"path": engine.drafter_dir, "fingerprint": fp["drafter"], "config_json": _config_text(engine.drafter_dir)},
        },
        "prompt": run["prompt"], "output": run["output"], "stop_reason": run["stop_reason"],
        "steps": steps,
        "exactness_contract": fp.get("exactness_contract"),
        "num_layers": engine.tshape.num_hidden_layers, "hidden_size": engine.tshape.hidden_size,
        "vocab_size": engine.tshape.vocab_size,
    }


def write_trace(path, engine, run, fingerprints=None):
    """Writes the candidate trace of `run` (Engine.generate's result) to `path` with the project's
    writer, python/specdec/trace_writer.py (atomically: a temporary name renamed into place)."""
    t = trace_dict(engine, run, fingerprints)
    models = {role: trace_writer.ModelInfo(m["path"], m["fingerprint"], m["config_json"]) for role, m in t["models"].items()}
    extra = {"exactness_contract": str(t["exactness_contract"])} if t["exactness_contract"] else {}
    w = trace_writer.TraceWriter(t["method"], t["prompt"], t["seed"], json.loads(t["sampling_json"]),
                                 json.loads(t["config_json"]), models, specdec_version=ENGINE_NAME, **extra)
    w.set_target_layers(t["num_layers"], t["hidden_size"], SUBSTEPS)
    io = [s["drafter"] for s in t["steps"] if s.get("drafter") is not None]
    if io:
        w.set_drafter_io(io[0]["features"].shape[1], io[0]["hidden"].shape[1], io[0]["logits"].shape[1])
    for s in t["steps"]:
        d = s.get("drafter") or {}
        w.add_step(s["emitted"], target_logits=np.asarray(s["target_logits"], np.float32),
                   draft_tokens=s.get("draft_tokens"), draft_parents=s.get("draft_parents"),
                   accepted_path=s.get("accepted_path"), accept_decisions=s.get("accept_decisions"),
                   accept_nodes=s.get("accept_nodes"), accept_uniforms=s.get("accept_uniforms"),
                   bonus_token=s["bonus_token"], random_counters=s.get("random_counters"),
                   draft_logits=s.get("draft_logq"), draft_logit_nodes=s.get("draft_row_nodes"),
                   layer_row_nodes=s["layer_row_nodes"], layer_hidden=s["layer_hidden"],
                   drafter_tokens=d.get("tokens"), drafter_positions=d.get("positions"), drafter_calls=d.get("calls"),
                   drafter_features=d.get("features"), drafter_hidden=d.get("hidden"), drafter_logits=d.get("logits"))
    w.write(path, stop_reason=t["stop_reason"], logits="full")
    return path
