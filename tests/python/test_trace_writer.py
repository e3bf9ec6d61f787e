"""The pure-Python trace writer (python/specdec/trace_writer.py) against the specdec binary.

A trace it writes for a real reference run (the steps of a `specdec record` run, re-emitted through
the writer, with full and top-k logits) passes `specdec trace check` and `specdec validate --trace`;
its fingerprints and top-k summaries equal specdec's; the optional per-layer and drafter tensors
of schema 1.2 pass check; deliberately wrong files fail check with the right message. Drafter
head fingerprints computed in Python (head_fingerprint) equal the ones specdec records, for the
bundled heads and for heads rewritten in the other layouts and dtypes specdec reads; a head it
cannot hash as specdec loads it is refused with the file named.

Run (ctest does this, label cpu): SPECDEC_BIN=build/specdec PYTHONPATH=python \
  /usr/bin/python3 -m pytest tests/python/test_trace_writer.py
"""
import json
import os
import subprocess
import struct

import h5py
import numpy as np
import pytest

from specdec import trace_writer as tw

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SPECDEC = os.environ.get("SPECDEC_BIN", os.path.join(ROOT, "build", "specdec"))
GOLDEN = os.path.join(ROOT, "traces", "golden")


def specdec(*args):
    r = subprocess.run([SPECDEC, *args], cwd=ROOT, capture_output=True, text=True, timeout=240)
    return r.returncode, r.stdout + r.stderr


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """Reference runs recorded by specdec, with full and with top-k logits."""
    d = tmp_path_factory.mktemp("recorded")
    runs = {}
    for name, extra in {
        "draft_sample": ["--method", "draft", "--drafter", "models/draft", "--k", "3", "--sampling", "sample", "--seed", "5"],
        "sequential_greedy": [],
        "eagle_tree": ["--method", "eagle", "--drafter", "models/eagle1", "--tree", "dynamic", "--depth", "3",
                       "--tree-top-k", "3", "--total-tokens", "8"],
    }.items():
        full = str(d / (name + "_full.h5"))
        topk = str(d / (name + "_topk.h5"))
        base = ["record", "--model", "models/target", "--prompt", "Hello there", "--max-new-tokens", "10", *extra]
        code, out = specdec(*base, "--logits", "full", "--out", full)
        assert code == 0, out
        code, out = specdec(*base, "--logits", "topk", "--logit-top-k", "6", "--out", topk)
        assert code == 0, out
        runs[name] = (full, topk)
    return runs


def test_method_table_equals_the_registry():
    """trace_writer.METHOD_DRAFTERS is the one Python copy of the C++ method registry."""
    code, out = specdec("methods", "--json")
    assert code == 0, out
    registry = {}
    for m in json.loads(out)["methods"]:
        d = m["drafter"]
        registry[m["name"]] = (None if d is None else "draft_lm" if d["kind"] == "language_model"
                               else "context" if d["kind"] == "context"
                               else "medusa" if d["kind"] == "medusa_heads" else d["head"])
    assert tw.METHOD_DRAFTERS == registry
    assert tw.METHODS == tuple(registry)  # in the registry's order


def test_fingerprints_equal_specdecs():
    with h5py.File(os.path.join(GOLDEN, "draft_code_greedy.h5"), "r") as f:
        want = {role: g.attrs["fingerprint"] for role, g in f["meta/models"].items()}
    assert tw.checkpoint_fingerprint(os.path.join(ROOT, "models", "target")) == want["target"]
    assert tw.checkpoint_fingerprint(os.path.join(ROOT, "models", "draft")) == want["drafter"]


def test_fnv_and_topk_summaries_equal_specdecs(recorded):
    full, topk = recorded["draft_sample"]
    with h5py.File(full, "r") as a, h5py.File(topk, "r") as b:
        rows = a["steps/target_logits/full"][()]
        g = b["steps/target_logits"]
        k = int(g.attrs["k"])
        for r, row in enumerate(rows):
            ids, values, lse, checksum = tw.topk_summary(row, k)
            assert list(ids) == list(g["topk_ids"][r])
            assert values.tobytes() == g["topk_values"][r].astype("<f4").tobytes()
            assert checksum == int(g["checksum"][r])
            assert lse == pytest.approx(float(g["logsumexp"][r]), abs=1e-12)


@pytest.mark.parametrize("run", ["draft_sample", "sequential_greedy", "eagle_tree"])
@pytest.mark.parametrize("logits", ["full", "topk"])
def test_a_reference_run_written_from_python_passes_check_and_validate(recorded, tmp_path, run, logits):
    full, _ = recorded[run]
    w, stop = tw.copy_run(full)
    out = str(tmp_path / "py.h5")
    w.write(out, stop, logits=logits, logit_top_k=8)
    with h5py.File(out, "r") as f:
        assert f.attrs["schema_version"] == "1.2"
    code, text = specdec("trace", "check", out)
    assert code == 0, text
    assert "valid specdec trace (schema 1.2" in text
    code, text = specdec("validate", "--model", "models/target", "--trace", out)
    assert code == 0, text
    assert text.startswith("PASS"), text
    code, text = specdec("trace", "diff", full, out)
    assert code == 0, text


def sequential_writer(**overrides):
    """A small hand-built sequential greedy trace over a golden run's tokens."""
    with h5py.File(os.path.join(GOLDEN, "sequential_code_greedy.h5"), "r") as f:
        prompt = f["prompt/tokens"][()]
        emitted = f["steps/emitted_tokens"][()]
        target = f["meta/models/target"]
        model = tw.ModelInfo(target.attrs["path"], target.attrs["fingerprint"], target["config_json"].asstr()[()])
    args = dict(method="sequential", prompt=prompt, seed=0,
                sampling={"mode": "greedy", "temperature": 1.0, "top_k": 0, "top_p": 1.0, "seed": 0},
                config={"method": {"method": "sequential"}, "max_new_tokens": len(emitted), "stop_at_eos": True,
                        "engine": "pytest"},
                models={"target": model})
    args.update(overrides)
    w = tw.TraceWriter(**args)
    for t in emitted:
        w.add_step([int(t)])
    return w, emitted


def test_hand_built_trace_with_layers_and_drafter_io_passes_check(tmp_path):
    w, emitted = sequential_writer()
    w.set_target_layers(8, 192, ("input_norm", "attention", "mlp"))
    w.set_drafter_io(feature_size=6, hidden_size=4, vocab_size=0)
    rng = np.random.default_rng(0)
    steps = w.steps
    w.steps = []
    for s, st in enumerate(steps):
        w.add_step(st["emitted_tokens"], layer_row_nodes=[-1], layer_hidden=rng.standard_normal((1, 8, 3, 192)),
                   drafter_tokens=[int(st["emitted_tokens"][0])], drafter_positions=[s], drafter_calls=[0],
                   drafter_features=rng.standard_normal((1, 6)), drafter_hidden=rng.standard_normal((1, 4)))
    out = str(tmp_path / "layers.h5")
    w.write(out, "max_tokens")
    code, text = specdec("trace", "check", out)
    assert code == 0, text
    with h5py.File(out, "r") as f:
        g = f["steps/target_layers"]
        assert g.attrs["substeps"] == "input_norm,attention,mlp"
        assert g["hidden"].shape == (len(emitted) * 8 * 3, 192)
        assert f["steps/drafter_io/features"].shape == (len(emitted), 6)
    # The layer tensors must have the declared shape.
    w.steps[0]["layer_hidden"] = np.zeros((1, 8, 2, 192))
    with pytest.raises(ValueError, match="layer_hidden of step 0 has shape"):
        w.write(str(tmp_path / "bad.h5"), "max_tokens")


def check_fails(tmp_path, w, where, what, name="bad.h5"):
    out = str(tmp_path / name)
    w.write(out, "max_tokens")
    code, text = specdec("trace", "check", out)
    assert code == 1, text
    assert "%s: %s: " % (out, where) in text, text
    assert what in text, text
    code, text = specdec("trace", "check", "--json", out)
    problems = json.loads(text.splitlines()[0])
    assert any(p["where"] == where and what in p["what"] for p in problems), problems
    return text


def test_wrong_files_fail_check_with_the_right_message(tmp_path):
    w, _ = sequential_writer()
    w.models["target"] = tw.ModelInfo("models/target", "sha1:1234", "{\"vocab_size\":259}")
    check_fails(tmp_path, w, "/meta/models/target @fingerprint", 'expected "fnv1a64:" and 16 lower-case hex digits')

    w, _ = sequential_writer()
    del w.config["max_new_tokens"]
    w.config["max_tokens"] = 3
    text = check_fails(tmp_path, w, "/meta/config_json", "missing run-config key 'max_new_tokens'")
    assert "unknown run-config key 'max_tokens'" in text

    w, _ = sequential_writer()
    w.steps[2]["emitted_tokens"] = [300]
    check_fails(tmp_path, w, "/steps/emitted_tokens step 2", "token id 300, expected 0 <= id < vocab_size 259")

    w, _ = sequential_writer(sampling={"mode": "greedy", "temp": 1.0})
    check_fails(tmp_path, w, "/meta/sampling_json", "unknown sampling key 'temp'")

    w, _ = sequential_writer()
    w.steps[1]["target_logits"] = np.zeros((2, 259), np.float32)  # a sequential step has one row
    w.steps[0]["target_logits"] = np.zeros((1, 259), np.float32)
    check_fails(tmp_path, w, "/steps/target_logits/row_offsets", "step 1 has 2 rows, expected 1")

    w, _ = sequential_writer()
    w.models["drafter"] = w.models["target"]
    check_fails(tmp_path, w, "/meta/models/drafter", "a sequential run has no drafter")


def test_wrong_files_a_writer_cannot_produce(tmp_path):
    """Edits with h5py after writing: a dropped dataset, a wrong dtype, a bad version."""
    w, _ = sequential_writer()
    out = str(tmp_path / "ok.h5")
    w.write(out, "max_tokens")
    with h5py.File(out, "r+") as f:
        del f["steps/positions"]
        tokens = f["prompt/tokens"][()]
        del f["prompt/tokens"]
        f.create_dataset("prompt/tokens", data=tokens.astype("<i8"))
        f.attrs["schema_version"] = "1.9"
    code, text = specdec("trace", "check", out)
    assert code == 1, text
    assert "/steps/positions: missing, expected int64 [S]" in text
    assert "/prompt/tokens: dtype is int64, expected int32" in text
    assert '/ @schema_version: is "1.9", an unsupported version' in text
    with open(str(tmp_path / "not.h5"), "w") as f:
        f.write("not hdf5")
    code, text = specdec("trace", "check", str(tmp_path / "not.h5"))
    assert code == 2, text


def schema_block(starting):
    """The ```python block of traces/SCHEMA.md whose code starts with `starting`."""
    with open(os.path.join(ROOT, "traces", "SCHEMA.md")) as f:
        text = f.read()
    for block in text.split("```python\n")[1:]:
        code = block.split("```")[0]
        if code.startswith(starting):
            return code
    raise AssertionError("no python block starting with %r in traces/SCHEMA.md" % starting)


def test_the_schemas_python_fingerprint_equals_specdecs():
    ns = {}
    exec(schema_block("import struct, numpy as np"), ns)
    draft = os.path.join(ROOT, "models", "draft")
    with open(os.path.join(draft, "config.json")) as f:
        layers = json.load(f)["num_hidden_layers"]
    tensors = tw.load_safetensors(os.path.join(draft, "model.safetensors"))
    assert ns["weights_fingerprint"](tensors, layers) == tw.checkpoint_fingerprint(draft)
    with h5py.File(os.path.join(GOLDEN, "draft_code_greedy.h5"), "r") as f:
        assert ns["weights_fingerprint"](tensors, layers) == f["meta/models/drafter"].attrs["fingerprint"]


def test_the_schemas_bare_h5py_writer_passes_check(tmp_path, monkeypatch):
    with h5py.File(os.path.join(GOLDEN, "sequential_code_greedy.h5"), "r") as f:
        ns = {"prompt": list(f["prompt/tokens"][()]), "out": list(f["output/tokens"][()][:3]),
              "fingerprint": f["meta/models/target"].attrs["fingerprint"],
              "config_json": f["meta/models/target/config_json"].asstr()[()]}
    monkeypatch.chdir(tmp_path)
    exec(schema_block("import h5py, numpy as np\ns = h5py.string_dtype"), ns)
    code, text = specdec("trace", "check", str(tmp_path / "run.h5"))
    assert code == 0, text


# ---------------------------------------------------------------------------------------------
# Drafter head fingerprints (head_fingerprint) against specdec's.

needs_specdec = pytest.mark.skipif(not os.path.exists(SPECDEC), reason="specdec is not built")
TARGET = os.path.join(ROOT, "models", "target")
HEADS = {"eagle": "eagle1", "eagle3": "eagle3", "peagle": "peagle"}  # method -> bundled head
GOLDEN_HEAD_TRACES = {"eagle1": "eagle-chain_code_greedy.h5", "eagle3": "eagle3-chain_code_greedy.h5",
                      "peagle": "peagle-chain_code_greedy.h5"}

# safetensors dtype -> numpy dtype of the stored values (BF16 and F8 arrays hold the raw bits).
ST_DTYPES = {"F32": "<f4", "F64": "<f8", "F16": "<f2", "BF16": "<u2", "F8_E5M2": "u1", "F8_E4M3": "u1",
             "BOOL": "u1", "U8": "u1", "I8": "i1", "I16": "<i2", "U16": "<u2", "I32": "<i4", "U32": "<u4",
             "I64": "<i8", "U64": "<u8"}


def save_safetensors(path, tensors):
    """tensors: {name: (dtype, array)} in file order."""
    header, blobs, offset = {"__metadata__": {"format": "pt"}}, [], 0
    for name, (dtype, a) in tensors.items():
        b = np.ascontiguousarray(a, dtype=ST_DTYPES.get(dtype, "u1")).tobytes()
        header[name] = {"dtype": dtype, "shape": list(np.shape(a)), "data_offsets": [offset, offset + len(b)]}
        blobs.append(b)
        offset += len(b)
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def bundled(head):
    """(config dict, {name: float32 array}) of a bundled head."""
    d = os.path.join(ROOT, "models", head)
    with open(os.path.join(d, "config.json")) as f:
        config = json.load(f)
    return config, dict(tw.load_safetensors(os.path.join(d, "model.safetensors")))


def write_head(d, config, tensors, shards=None):
    """A head directory; tensors {name: (dtype, array)}; `shards` [[names], ...] writes a shard index."""
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    if not shards:
        save_safetensors(os.path.join(d, "model.safetensors"), tensors)
        return str(d)
    weight_map = {}
    for i, names in enumerate(shards):
        shard = "model-%05d-of-%05d.safetensors" % (i + 1, len(shards))
        save_safetensors(os.path.join(d, shard), {n: tensors[n] for n in names})
        weight_map.update({n: shard for n in names})
    with open(os.path.join(d, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {}, "weight_map": weight_map}, f)
    return str(d)


def as_f32(t):
    return {n: ("F32", a) for n, a in t.items()}


def bf16_bits(a):
    return (np.asarray(a, np.float32).view(np.uint32) >> 16).astype(np.uint16)


def e5m2_bits(a):  # the upper byte of the half
    return (np.asarray(a, np.float32).astype(np.float16).view(np.uint16) >> 8).astype(np.uint8)


def e4m3_bits(a):
    """The nearest finite F8_E4M3 bytes."""
    codes = np.array([b for b in range(256) if b not in (0x7F, 0xFF)])
    values = tw._e4m3_table()[codes]
    order = np.argsort(values, kind="stable")
    v, c = values[order], codes[order]
    x = np.asarray(a, np.float32)
    hi = np.clip(np.searchsorted(v, x), 1, len(v) - 1)
    pick = np.where(np.abs(v[hi] - x) < np.abs(v[hi - 1] - x), hi, hi - 1)
    return c[pick].astype(np.uint8)


def recorded_fingerprint(method, head_dir, tmp_path):
    out = str(tmp_path / ("fp_%s.h5" % os.path.basename(head_dir)))
    code, text = specdec("record", "--model", "models/target", "--method", method, "--drafter", head_dir,
                         "--prompt-ids", "0,1", "--max-new-tokens", "1", "--out", out)
    assert code == 0, text
    with h5py.File(out, "r") as f:
        return f["meta/models/drafter"].attrs["fingerprint"], f.attrs["exactness_contract"]


def test_head_fingerprints_equal_the_golden_traces():
    for head, trace in GOLDEN_HEAD_TRACES.items():
        with h5py.File(os.path.join(GOLDEN, trace), "r") as f:
            want = f["meta/models/drafter"].attrs["fingerprint"]
        assert tw.head_fingerprint(os.path.join(ROOT, "models", head)) == want, head
        assert tw.head_fingerprint(os.path.join(ROOT, "models", head), target=TARGET) == want, head


@needs_specdec
@pytest.mark.parametrize("method", sorted(HEADS))
def test_head_fingerprints_equal_specdecs_for_the_bundled_heads(tmp_path, method):
    head = os.path.join("models", HEADS[method])
    want, contract = recorded_fingerprint(method, head, tmp_path)
    assert tw.head_fingerprint(os.path.join(ROOT, head)) == want
    # experiments/engine/record.py writes the writer's contract version without asking specdec.
    assert contract == tw.EXACTNESS_CONTRACT


def test_head_fingerprint_over_tensors_in_memory():
    d = os.path.join(ROOT, "models", "peagle")
    config, t = bundled("peagle")
    c = tw.parse_head_config(config, sorted(t), "peagle config")
    assert (c.kind, c.layout, c.num_layers, c.feature_width()) == ("peagle", "aws", 2, 576)
    t16 = {n: a.astype(np.float16) for n, a in t.items()}
    assert tw.eagle_head_fingerprint(t, c) == tw.head_fingerprint(d)
    widened = {n: a.astype(np.float32) for n, a in t16.items()}
    assert tw.eagle_head_fingerprint(t16, c) == tw.eagle_head_fingerprint(widened, c)


def reference_fingerprints_module():
    import importlib.util
    path = os.path.join(ROOT, "experiments", "engine", "record.py")
    spec = importlib.util.spec_from_file_location("engine_record", path)
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m


def test_the_engines_reference_fingerprints_need_no_specdec():
    record = reference_fingerprints_module()
    for method, head in (("eagle", "eagle1"), ("peagle", "peagle")):
        with h5py.File(os.path.join(GOLDEN, GOLDEN_HEAD_TRACES[head]), "r") as f:
            want = {role: g.attrs["fingerprint"] for role, g in f["meta/models"].items()}
        fp = record.reference_fingerprints(TARGET, method, os.path.join(ROOT, "models", head))
        assert fp == {"target": want["target"], "drafter": want["drafter"], "exactness_contract": tw.EXACTNESS_CONTRACT}
    with pytest.raises(ValueError, match="holds a head of kind eagle1; method peagle needs peagle"):
        record.reference_fingerprints(TARGET, "peagle", os.path.join(ROOT, "models", "eagle1"))


def variant_eagle3_bf16_sharded(d):
    config, t = bundled("eagle3")
    names = sorted(t)
    tensors = {n: ("BF16", bf16_bits(a)) for n, a in t.items()}
    return "eagle3", write_head(d, config, tensors, shards=[names[:5], names[5:]])


def draft_vocab_head(d, d2t_dtype, with_t2d, string_size):
    config, t = bundled("eagle3")
    ids = np.sort(np.random.default_rng(3).choice(259, size=200, replace=False))
    config["draft_vocab_size"] = "200" if string_size else 200  # released configs may hold strings
    tensors = as_f32(t)
    tensors["lm_head.weight"] = ("F32", t["lm_head.weight"][ids])
    tensors["d2t"] = (d2t_dtype, ids - np.arange(200))
    if with_t2d:
        mask = np.zeros(259, np.uint8)
        mask[ids] = 1
        tensors["t2d"] = ("BOOL", mask)
    return "eagle3", write_head(d, config, tensors)


def variant_eagle3_draft_vocab_d2t_t2d(d):
    return draft_vocab_head(d, "I64", True, False)


def variant_eagle3_draft_vocab_d2t_without_t2d(d):
    return draft_vocab_head(d, "I32", False, True)


def variant_eagle3_fc_bias_f8_f64_f16(d):
    config, t = bundled("eagle3")
    rng = np.random.default_rng(4)
    tensors = {n: ("F16", a.astype(np.float16)) for n, a in t.items()}
    tensors["fc.weight"] = ("F8_E4M3", e4m3_bits(t["fc.weight"] * 8))
    tensors["lm_head.weight"] = ("F8_E5M2", e5m2_bits(t["lm_head.weight"]))
    for n in ("norm.weight", "midlayer.hidden_norm.weight", "midlayer.input_layernorm.weight"):
        tensors[n] = ("F64", t[n].astype(np.float64) + 1e-9)
    tensors["fc.bias"] = ("F32", rng.standard_normal(192).astype(np.float32) * 0.02)
    return "eagle3", write_head(d, config, tensors)


def variant_peagle_speculators_qwen3_f16(d):
    config, t = bundled("peagle")
    rng = np.random.default_rng(5)
    layer = {k: config[k] for k in ("hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
                                    "num_key_value_heads", "head_dim", "vocab_size", "rms_norm_eps", "rope_theta",
                                    "max_position_embeddings")}
    layer.update(architectures=["Qwen3ForCausalLM"], model_type="qwen3", attention_bias=False)
    spec = {"architectures": ["PEagleSpeculator"], "speculators_model_type": "peagle",
            "transformer_layer_config": layer, "draft_vocab_size": 259, "target_hidden_size": 192,
            "eagle_aux_hidden_state_layer_ids": [5, 2, 4], "mask_token_id": 2, "norm_before_residual": False,
            "speculators_config": {"algorithm": "peagle", "proposal_methods": [{"proposal_type": "greedy",
                                                                               "speculative_tokens": 8}]}}
    tensors = {}
    for n, a in t.items():
        n = n.replace("midlayer.", "layers.0.")
        tensors[n] = ("F16", (a.reshape(1, 1, -1) if n == "mask_hidden" else a).astype(np.float16))
    for i in range(2):
        for n in ("q_norm", "k_norm"):
            norm = (1 + 0.1 * rng.standard_normal(32)).astype(np.float16)
            tensors["layers.%d.self_attn.%s.weight" % (i, n)] = ("F16", norm)
    return "peagle", write_head(d, spec, tensors)


def variant_eagle1_biases_own_embeddings_f64_unused(d):
    config, t = bundled("eagle1")
    rng = np.random.default_rng(6)
    config.update(attention_bias=True, mlp_bias=True)
    tensors = {n: ("F64", a.astype(np.float64)) for n, a in t.items()}
    p = "layers.0."
    for n, size in (("self_attn.q_proj", 192), ("self_attn.k_proj", 64), ("self_attn.v_proj", 64),
                    ("self_attn.o_proj", 192), ("mlp.gate_proj", 512), ("mlp.up_proj", 512), ("mlp.down_proj", 192)):
        tensors[p + n + ".bias"] = ("F32", rng.standard_normal(size).astype(np.float32) * 0.02)
    emb = tw.load_safetensors(os.path.join(TARGET, "model.safetensors"))["model.embed_tokens.weight"]
    tensors["embed_tokens.weight"] = ("BF16", bf16_bits(emb))
    tensors[p + "self_attn.rotary_emb.inv_freq"] = ("F32", np.ones(16, np.float32))  # specdec ignores it
    return "eagle", write_head(d, config, tensors)


VARIANTS = {name[len("variant_"):]: f for name, f in dict(globals()).items() if name.startswith("variant_")}


@needs_specdec
@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_head_fingerprints_equal_specdecs_for_other_layouts_and_dtypes(tmp_path, variant):
    method, d = VARIANTS[variant](str(tmp_path / variant))
    want, _ = recorded_fingerprint(method, d, tmp_path)
    unused = "unused" in variant
    assert tw.head_fingerprint(d, target=TARGET, allow_unused=unused) == want
    if unused:
        with pytest.raises(ValueError, match="unexpected tensor 'layers.0.self_attn.rotary_emb.inv_freq'"):
            tw.head_fingerprint(d)


def edit_eagle1_extra_tensor(config, t):
    t["lm_head.weight"] = ("F32", np.zeros((259, 192), np.float32))
    return "unexpected tensor 'lm_head.weight' for an eagle1 head in the safeailab layout"


def edit_eagle3_int_weight(config, t):
    t["fc.weight"] = ("I32", np.zeros((192, 576), np.int32))
    return "tensor 'fc.weight' has dtype I32, expected a floating-point dtype"


def edit_eagle3_float_d2t(config, t):
    config["draft_vocab_size"] = 259
    t["d2t"] = ("F32", np.zeros(259, np.float32))
    return "tensor 'd2t' has dtype F32, expected an integer or BOOL dtype"


def edit_eagle3_unknown_dtype(config, t):
    t["norm.weight"] = ("F4", np.zeros(96, np.uint8))
    return "tensor 'norm.weight': unknown dtype 'F4'"


def edit_eagle3_misshaped(config, t):
    t["fc.weight"] = ("F32", t["fc.weight"][1][:, :384])
    return "tensor 'fc.weight' has shape [192, 384], expected [192, 576]"


def edit_eagle3_missing(config, t):
    del t["norm.weight"]
    return "missing tensor 'norm.weight' (expected for an eagle3 head in the safeailab layout)"


def edit_eagle3_prefixed_names(config, t):
    for n in list(t):
        t["model." + n] = t.pop(n)
    del config["draft_vocab_size"]
    return "cannot tell which drafter head this is"


def edit_eagle3_duplicate_d2t(config, t):
    config["draft_vocab_size"] = 200
    t["lm_head.weight"] = ("F32", t["lm_head.weight"][1][:200])
    t["d2t"] = ("I64", np.zeros(200, np.int64) - np.minimum(np.arange(200), 1))  # 0 and 1 both map to 0
    return "tensor 'd2t' maps two draft ids to target id 0"


def edit_eagle3_t2d_disagrees(config, t):
    config["draft_vocab_size"] = 200
    t["lm_head.weight"] = ("F32", t["lm_head.weight"][1][:200])
    t["d2t"] = ("I64", np.zeros(200, np.int64))
    mask = np.zeros(259, np.uint8)
    mask[1:201] = 1
    t["t2d"] = ("BOOL", mask)
    return "tensor 't2d' disagrees with 'd2t' at target id 0"


def edit_eagle3_unsupported_option(config, t):
    config["norm_before_fc"] = True
    return "option 'norm_before_fc' = true is not supported"


EDITS = {name[len("edit_"):]: f for name, f in dict(globals()).items() if name.startswith("edit_")}


@pytest.mark.parametrize("edit", sorted(EDITS))
def test_head_fingerprint_refuses_what_it_cannot_hash_as_specdec_does(tmp_path, edit):
    config, t = bundled(edit.split("_")[0])
    tensors = as_f32(t)
    what = EDITS[edit](config, tensors)
    d = write_head(str(tmp_path / edit), config, tensors)
    with pytest.raises(ValueError) as e:
        tw.head_fingerprint(d, target=TARGET)
    message = str(e.value)
    assert what in message, message
    assert d in message, message  # names the file (or the directory)
    if os.path.exists(SPECDEC) and "unexpected tensor" not in what:
        method = {"eagle1": "eagle", "eagle3": "eagle3"}[edit.split("_")[0]]
        code, text = specdec("record", "--model", "models/target", "--method", method, "--drafter", d,
                             "--prompt-ids", "0,1", "--max-new-tokens", "1", "--out", str(tmp_path / "x.h5"))
        assert code != 0, text  # specdec refuses it too


def test_head_fingerprint_ignores_unused_tensors_only_when_asked(tmp_path):
    config, t = bundled("eagle1")
    tensors = as_f32(t)
    edit_eagle1_extra_tensor(config, tensors)
    d = write_head(str(tmp_path / "extra"), config, tensors)
    assert tw.head_fingerprint(d, allow_unused=True) == tw.head_fingerprint(os.path.join(ROOT, "models", "eagle1"))


def test_head_fingerprint_refuses_a_pickled_head(tmp_path):
    d = tmp_path / "pickled"
    d.mkdir()
    (d / "config.json").write_text(open(os.path.join(ROOT, "models", "eagle1", "config.json")).read())
    (d / "pytorch_model.bin").write_bytes(b"\x80\x02")
    with pytest.raises(ValueError, match="PyTorch pickle"):
        tw.head_fingerprint(str(d))
