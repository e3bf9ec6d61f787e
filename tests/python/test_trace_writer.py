"""The pure-Python trace writer (python/specdec/trace_writer.py) against the specdec binary.

A trace it writes for a real reference run (the steps of a `specdec record` run, re-emitted through
the writer, with full and top-k logits) passes `specdec trace check` and `specdec validate --trace`;
its fingerprints and top-k summaries equal specdec's; the optional per-layer and drafter tensors
of schema 1.2 pass check; deliberately wrong files fail check with the right message.

Run (ctest does this, label cpu): SPECDEC_BIN=build/specdec PYTHONPATH=python \
  /usr/bin/python3 -m pytest tests/python/test_trace_writer.py
"""
import json
import os
import subprocess

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
