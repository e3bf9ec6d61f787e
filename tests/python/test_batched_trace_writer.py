"""Batched traces written from Python (python/specdec/trace_writer.py BatchedTraceWriter, schema
2.0) against the specdec binary.

A batch specdec recorded (`specdec record --prompts FILE --concurrency B`), re-emitted through the
writer, passes `specdec trace check` and `specdec validate --candidate` sequence by sequence; the
same batch with one sequence's logits perturbed at one step fails naming that sequence and step; a
batch built by hand with sequence ids of its own passes; malformed batches (a sequence group
missing, a repeated sequence id, a batch step naming a sequence the file does not hold) fail check
with the right message, and the writer refuses what it can tell is wrong. The h5py reading example
of traces/SCHEMA.md runs on a real batch.

Run (ctest does this, label cpu): SPECDEC_BIN=build/specdec PYTHONPATH=python \
  /usr/bin/python3 -m pytest tests/python/test_batched_trace_writer.py
"""
import json
import os
import shutil
import subprocess

import h5py
import numpy as np
import pytest

from specdec import trace_writer as tw

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SPECDEC = os.environ.get("SPECDEC_BIN", os.path.join(ROOT, "build", "specdec"))
GOLDEN = os.path.join(ROOT, "traces", "golden")

pytestmark = pytest.mark.skipif(not os.path.exists(SPECDEC), reason="specdec is not built")


def specdec(*args):
    r = subprocess.run([SPECDEC, *args], cwd=ROOT, capture_output=True, text=True, timeout=240)
    return r.returncode, r.stdout + r.stderr


@pytest.fixture(scope="module")
def batch(tmp_path_factory):
    """Three prompts decoded two at a time by specdec (draft LM, sampled, full logits)."""
    d = tmp_path_factory.mktemp("batch")
    prompts = d / "prompts.json"
    prompts.write_text(json.dumps({"prose": ["And God said", "In the beginning"], "code": ["def main():"]}))
    out = str(d / "batch.h5")
    code, text = specdec("record", "--model", "models/target", "--method", "draft", "--drafter", "models/draft",
                         "--k", "3", "--sampling", "sample", "--seed", "5", "--prompts", str(prompts),
                         "--concurrency", "2", "--max-new-tokens", "8", "--ignore-eos", "--logits", "full", "--out", out)
    assert code == 0, text
    return out


def test_a_batch_written_from_python_passes_check_and_validate(batch, tmp_path):
    b = tw.copy_batched_run(batch)
    out = str(tmp_path / "py.h5")
    b.write(out)
    with h5py.File(out, "r") as f:
        assert f.attrs["schema_version"] == tw.BATCHED_SCHEMA_VERSION == "2.0"
        assert list(f["batch/sequence_ids"][()]) == [0, 1, 2]
        assert json.loads(f["sequences/2/meta/config_json"].asstr()[()])["sequence"] == 2
    code, text = specdec("trace", "check", out)
    assert code == 0, text
    assert "valid specdec trace (schema 2.0, batched, 3 sequences" in text
    code, text = specdec("validate", "--model", "models/target", "--candidate", out, "--json")
    assert code == 0, text
    report = json.loads(text)
    assert report["result"] == "pass"
    assert [s["sequence"] for s in report["sequences"]] == [0, 1, 2]


def test_one_sequences_perturbed_logits_fail_naming_it_and_the_step(batch, tmp_path):
    b = tw.copy_batched_run(batch)
    seq, writer = b.sequences[1][0], b.sequences[1][1]
    assert seq == 1 and len(writer.steps) > 2
    row = writer.steps[2]["target_logits"][0]
    row[np.argmin(row)] += 1.0  # no decision changes; the row leaves the tolerance
    out = str(tmp_path / "bug.h5")
    b.write(out)
    code, text = specdec("trace", "check", out)
    assert code == 0, text
    code, text = specdec("validate", "--model", "models/target", "--candidate", out, "--json")
    assert code == 1, text
    report = json.loads(text)
    assert report["result"] == "fail"
    assert report["sequences_failed"] == [1]
    assert report["failure"]["sequence"] == 1
    assert report["failure"]["step"] == 2
    assert report["failure"]["what"] == "target logits"
    code, text = specdec("validate", "--model", "models/target", "--candidate", out)
    assert code == 1
    assert "first: sequence 1 at step 2 (target logits)" in text


def sequential_run(sequence):
    """A greedy sequential run over a golden trace's tokens, as an engine would record it."""
    with h5py.File(os.path.join(GOLDEN, "sequential_code_greedy.h5"), "r") as f:
        prompt = f["prompt/tokens"][()]
        emitted = f["steps/emitted_tokens"][()]
        target = f["meta/models/target"]
        model = tw.ModelInfo(target.attrs["path"], target.attrs["fingerprint"], target["config_json"].asstr()[()])
        stop = f["output/stop_reason"].asstr()[()]
    w = tw.TraceWriter("sequential", prompt=prompt, seed=0,
                       sampling={"mode": "greedy", "temperature": 1.0, "top_k": 0, "top_p": 1.0, "seed": 0},
                       config={"method": {"method": "sequential"}, "max_new_tokens": len(emitted), "stop_at_eos": True,
                               "engine": "pytest", "sequence": sequence},
                       models={"target": model})
    for t in emitted:
        w.add_step([int(t)])
    return w, stop, len(prompt), len(emitted)


def hand_built(path, ids=(3, 7)):
    """Two sequences with ids of the engine's own, prefilled together, then stepping together."""
    b = tw.BatchedTraceWriter(max_in_flight=2)
    steps = None
    for q in ids:
        w, stop, P, S = sequential_run(q)
        b.add_sequence(q, w, stop)
        steps = S
    b.add_batch_step([(q, P) for q in ids])
    for _ in range(1, steps):
        b.add_batch_step([(q, 1) for q in ids])
    b.write(path)


def test_a_hand_built_batch_with_its_own_sequence_ids_passes(tmp_path):
    out = str(tmp_path / "hand.h5")
    hand_built(out)
    code, text = specdec("trace", "check", out)
    assert code == 0, text
    code, text = specdec("validate", "--model", "models/target", "--candidate", out)
    assert code == 0, text
    assert "candidate %s sequence 7 against reference" % out in text


def edited(tmp_path, name, edit):
    src = str(tmp_path / "hand.h5")
    if not os.path.exists(src):
        hand_built(src)
    out = str(tmp_path / name)
    shutil.copy(src, out)
    with h5py.File(out, "r+") as f:
        edit(f)
    return out


def replace(group, name, values):
    del group[name]
    group.create_dataset(name, data=np.asarray(values, "<i8"), dtype="<i8")


def rekey(meta, sequence):
    """The sequence's configuration names another sequence id than its group."""
    config = json.loads(meta["config_json"].asstr()[()])
    config["sequence"] = sequence
    del meta["config_json"]
    meta.create_dataset("config_json", data=json.dumps(config), dtype=h5py.string_dtype("utf-8"))


@pytest.mark.parametrize("name, edit, message", [
    ("missing_group", lambda f: f["sequences"].__delitem__("7"),
     "/sequences/7: missing, expected the group of sequence 7 (listed in /batch/sequence_ids)"),
    ("duplicate_id", lambda f: replace(f["batch"], "sequence_ids", [3, 3]),
     "/batch/sequence_ids: sequence id 3 appears twice (entries 0 and 1), expected distinct ids"),
    ("unknown_sequence", lambda f: replace(f["batch/schedule"], "sequence", [3, 9] + list(f["batch/schedule/sequence"][2:])),
     "/batch/schedule/sequence: batch step 0 names sequence 9, which the trace does not hold (it holds 3, 7)"),
    ("sequence_key", lambda f: rekey(f["sequences/7/meta"], 3),
     "/sequences/7/meta/config_json: sequence is 3, expected 7 (the id of its group)"),
])
def test_malformed_batches_fail_check_with_the_right_message(tmp_path, name, edit, message):
    out = edited(tmp_path, name + ".h5", edit)
    code, text = specdec("trace", "check", out)
    assert code == 1, text
    assert out + ": " + message in text


def test_the_writer_refuses_what_it_can_tell_is_wrong(tmp_path):
    b = tw.BatchedTraceWriter(max_in_flight=2)
    w, stop, P, _ = sequential_run(3)
    b.add_sequence(3, w, stop)
    with pytest.raises(ValueError, match="sequence id 3 added twice"):
        b.add_sequence(3, sequential_run(3)[0], stop)
    with pytest.raises(ValueError, match="its configuration says sequence 4"):
        b.add_sequence(5, sequential_run(4)[0], stop)
    with pytest.raises(ValueError, match="expected 0 <= id < 2\\*\\*32"):
        b.add_sequence(-1, sequential_run(0)[0], stop)
    b.add_batch_step([(3, P), (8, P)])
    with pytest.raises(ValueError, match="batch step 0 names sequence 8, which was not added"):
        b.write(str(tmp_path / "x.h5"))
    assert os.listdir(tmp_path) == []


def test_the_schemas_batch_reading_example_runs(batch, tmp_path, monkeypatch, capsys):
    with open(os.path.join(ROOT, "traces", "SCHEMA.md")) as f:
        blocks = [b.split("```")[0] for b in f.read().split("```python\n")[1:]]
    code = next(b for b in blocks if b.startswith('with h5py.File("batch.h5"'))
    shutil.copy(batch, str(tmp_path / "batch.h5"))
    monkeypatch.chdir(tmp_path)
    exec(code, {"h5py": h5py})
    out = capsys.readouterr().out
    assert "0 draft" in out and "2 draft" in out  # each sequence's id, method and steps
