#!/usr/bin/python3
"""Reads a specdec trace with h5py only (no specdec code) and writes what it found as JSON.

Usage: read_trace.py TRACE.h5 OUT.json

It checks the documented layout (traces/SCHEMA.md) on the way: root attributes, offsets shapes,
logits shapes. For full logits rows it also recomputes the top-5 summary (ids by descending
logit, ties by lower id), the logsumexp and the FNV-1a 64 checksum, so the C++ test can check
that the summary definition is reproducible from Python.
"""
import json
import sys

try:
    import h5py
    import numpy as np
except ImportError as e:  # a required dependency, never a reason to skip
    sys.stderr.write(
        "read_trace.py: h5py and numpy are required (Debian packages python3-h5py, "
        f"python3-numpy): {e}\n")
    sys.exit(3)


def fnv1a64(row):
    h = 0xCBF29CE484222325
    for b in np.asarray(row, dtype="<f4").tobytes():
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


def ragged(steps, name, offsets_name=None):
    """Splits a flat column into one list per step using its CSR offsets."""
    flat = steps[name][()]
    off = steps[offsets_name or name + "_offsets"][()]
    assert off.dtype == np.int64, f"{name}_offsets dtype {off.dtype}"
    assert off[0] == 0 and np.all(np.diff(off) >= 0) and off[-1] == len(flat), f"{name}: bad offsets"
    return [flat[off[i]:off[i + 1]].tolist() for i in range(len(off) - 1)]


def main(path, out_path):
    result = {}
    with h5py.File(path, "r") as f:
        assert f.attrs["format"] == "specdec-trace", f.attrs["format"]
        major = int(f.attrs["schema_version"].split(".")[0])
        assert major == 1, f"schema major {major}"
        for key in ("format", "schema_version", "method", "specdec_version", "created_utc"):
            result[key] = str(f.attrs[key])
        # Optional (schema 1.1): null when the trace records no exactness contract.
        contract = f.attrs.get("exactness_contract")
        result["exactness_contract"] = None if contract is None else str(contract)
        result["seed"] = int(f["meta"].attrs["seed"])
        result["config"] = json.loads(f["meta/config_json"].asstr()[()])
        result["models"] = {
            role: {"fingerprint": str(g.attrs["fingerprint"]), "path": str(g.attrs["path"])}
            for role, g in f["meta/models"].items()
        }
        assert f["prompt/tokens"].dtype == np.int32
        result["prompt"] = f["prompt/tokens"][()].tolist()
        result["output"] = f["output/tokens"][()].tolist()
        result["stop_reason"] = f["output/stop_reason"].asstr()[()]

        steps = f["steps"]
        S = len(steps["positions"])
        result["positions"] = steps["positions"][()].tolist()
        result["emitted"] = ragged(steps, "emitted_tokens")
        if "draft_tokens" in steps:
            result["draft_tokens"] = ragged(steps, "draft_tokens")
            result["draft_parents"] = ragged(steps, "draft_parents", "draft_tokens_offsets")
            result["accepted_path"] = ragged(steps, "accepted_path")
            result["accept_decisions"] = ragged(steps, "accept_decisions")
            result["bonus_token"] = steps["bonus_token"][()].tolist()
            result["random_counters"] = steps["random_counters"].shape[1]

        tl = steps["target_logits"]
        off = tl["row_offsets"][()]
        assert len(off) == S + 1
        result["storage"] = str(tl.attrs["storage"])
        if result["storage"] == "topk":
            k = int(tl.attrs["k"])
            assert tl["topk_ids"].shape == (off[-1], k)
            result["topk_ids"] = tl["topk_ids"][()].tolist()
            result["checksum"] = [int(c) for c in tl["checksum"][()]]
            result["logsumexp"] = tl["logsumexp"][()].tolist()
        else:
            full = tl["full"][()]
            assert full.dtype == np.float32 and full.shape == (off[-1], int(tl.attrs["vocab_size"]))
            ids, lse, checksums = [], [], []
            for row in full:
                order = np.lexsort((np.arange(len(row)), -row.astype(np.float64)))
                ids.append(order[:5].tolist())
                m = float(np.max(row.astype(np.float64)))
                lse.append(m + float(np.log(np.sum(np.exp(row.astype(np.float64) - m)))))
                checksums.append(fnv1a64(row))
            result["topk_ids"] = ids
            result["logsumexp"] = lse
            result["checksum"] = checksums
        result["timing_phases"] = sorted(n[:-3] for n in f["timing"] if n.endswith("_ns"))
    with open(out_path, "w") as out:
        json.dump(result, out)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.stderr.write("usage: read_trace.py TRACE.h5 OUT.json\n")
        sys.exit(2)
    main(sys.argv[1], sys.argv[2])
