"""specdec.simulate_sweep, simulate_policy, recommend_policy, calibrate and evaluate: the command line's modes.

Each function is compared with the `specdec simulate` mode it binds, run by the built binary:
simulate_sweep's rows and files with `--sweep OUT` (the CSV byte for byte, the HDF5 datasets value for
value), the others' dicts with the mode's `--json` output, exactly; calibrate's fitted spec files with
`--output` / `--engine-output` (their sources name the caller). Every error a caller can make raises
specdec.Error naming the keyword (or TypeError for a keyword the function does not take, with the closest
one). Monte Carlo pricing runs with fixed seeds.

Run (ctest does this, label cpu;python):
  SPECDEC_BUILD_DIR=build PYTHONPATH=build/python /usr/bin/python3 -m pytest tests/python/test_simulate_modes.py
"""
import csv
import io
import json
import os
import subprocess

import h5py
import pytest

import specdec

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.path.abspath(os.environ.get("SPECDEC_BUILD_DIR", os.path.join(ROOT, "build")))
CALIBRATION = os.path.join(ROOT, "simulator", "calibration")
EVALUATION = os.path.join(ROOT, "simulator", "evaluation")
GOLDEN = os.path.join(ROOT, "traces", "golden")
TRAINIUM = os.path.join(CALIBRATION, "aws_trainium_trn1.json")


def cli(*options):
    r = subprocess.run([os.path.join(BUILD, "specdec"), "simulate", *options], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    return r


def cli_json(*options):
    return json.loads(cli(*options, "--json").stdout)


def error_of(fn, *args, **kw):
    with pytest.raises(specdec.Error) as e:
        fn(*args, **kw)
    return str(e.value)


# --- simulate_sweep -------------------------------------------------------------------------------

SWEEP_CLI = ["--model", "llama-3.1-8b,llama-3-8b", "--hardware", "h100-sxm,a100-80gb-sxm", "--drafter",
             "none,eagle3-llama3.1-8b,draft-llama-3.2-1b", "--k", "2,4", "--alphas", "0.6,0.8", "--batch", "1,16",
             "--tp", "1,2", "--prompt-len", "512", "--output-len", "128,256", "--engine", "sglang"]
SWEEP = dict(model=["llama-3.1-8b", "llama-3-8b"], hardware=["h100-sxm", "a100-80gb-sxm"],
             drafter=["none", "eagle3-llama3.1-8b", "draft-llama-3.2-1b"], k=[2, 4], alphas=[0.6, 0.8], batch=[1, 16],
             tp=[1, 2], prompt_len=512, output_len=[128, 256], engine="sglang")


def csv_rows(text):
    return list(csv.reader(io.StringIO(text)))


def test_simulate_sweep_writes_the_command_lines_files(tmp_path):
    got = specdec.simulate_sweep(**SWEEP, out=str(tmp_path / "py.csv"))
    cli("--sweep", str(tmp_path / "cli.csv"), *SWEEP_CLI)
    assert (tmp_path / "py.csv").read_bytes() == (tmp_path / "cli.csv").read_bytes()
    # The head trained for llama-3.1-8b is not priced on llama-3-8b: skipped, with the keyword's name.
    assert got["skipped"] > 0
    assert "(pair it with another model with any_target)" in got["skip_reasons"][0]
    # The rows are the file's: the columns in order, one dict per line, numbers to the CSV's 9 digits.
    lines = csv_rows((tmp_path / "cli.csv").read_text())
    assert got["columns"] == lines[0]
    assert len(got["rows"]) == len(lines) - 1 == got["scenarios"] > 0
    for row, line in zip(got["rows"], lines[1:]):
        for name, cell in zip(lines[0], line):
            value = row[name]
            if isinstance(value, str):
                assert value == cell, name
            elif isinstance(value, bool):
                assert value == (cell == "1"), name
            else:
                assert value == pytest.approx(float(cell), rel=1e-8, abs=1e-12), (name, row)
    assert {r["method"] for r in got["rows"]} == {"sequential", "eagle3", "draft"}
    assert all(isinstance(r[c], int) for r in got["rows"] for c in ("k", "batch", "tp", "prompt_len", "output_len"))


def test_simulate_sweep_rows_equal_the_command_lines_hdf5(tmp_path):
    # The HDF5 file holds full doubles: the rows equal them exactly, and both files hold the same values.
    kw = dict(model="llama-3.1-8b", hardware="h100-sxm", drafter=["none", "eagle3-llama3.1-8b"], k=[1, 3, 5],
              acceptance=[0.9, 0.8, 0.7, 0.6, 0.5], batch=[1, 4, 64])
    got = specdec.simulate_sweep(**kw, out=str(tmp_path / "py.h5"))
    cli("--sweep", str(tmp_path / "cli.h5"), "--model", "llama-3.1-8b", "--hardware", "h100-sxm", "--drafter",
        "none,eagle3-llama3.1-8b", "--k", "1,3,5", "--acceptance", "0.9,0.8,0.7,0.6,0.5", "--batch", "1,4,64")
    with h5py.File(tmp_path / "cli.h5", "r") as c, h5py.File(tmp_path / "py.h5", "r") as p:
        assert sorted(c.keys()) == sorted(p.keys()) == sorted(got["columns"])
        for name in got["columns"]:
            assert (c[name][()] == p[name][()]).all(), name
            column = [r[name] for r in got["rows"]]
            if c[name].dtype.kind == "S":
                assert [v.decode() for v in c[name][()]] == column, name
            else:
                assert list(c[name][()]) == [float(v) for v in column], name
    assert len(got["rows"]) == 3 + 9 and got["skipped"] == 0
    assert all(r["alpha"] == 0 for r in got["rows"])  # one acceptance model: no alpha


def test_simulate_sweep_csv_to_stdout_and_defaults():
    # The defaults are the command line's: K 4, alpha 0.8, batch 1, TP 1, prompt 512, output 256.
    got = specdec.simulate_sweep("llama-3.1-8b", "h100-sxm", drafter="eagle3-llama3.1-8b")
    lines = csv_rows(cli("--sweep", "-", "--model", "llama-3.1-8b", "--hardware", "h100-sxm", "--drafter",
                         "eagle3-llama3.1-8b").stdout)
    assert len(got["rows"]) == len(lines) - 1 == 1
    row = got["rows"][0]
    assert (row["k"], row["alpha"], row["batch"], row["tp"], row["prompt_len"], row["output_len"]) == (4, 0.8, 1, 1, 512, 256)
    assert [str(row[c]) for c in got["columns"][:5]] == lines[1][:5]
    assert row["speedup"] == pytest.approx(float(lines[1][got["columns"].index("speedup")]), rel=1e-8)


def test_simulate_sweep_layouts_equal_the_command_line():
    # Attention DP x EP over each TP's devices: rows of their own, skipped where the engines do not run them.
    got = specdec.simulate_sweep("deepseek-v3", "h200", tp=8, dp_attention=[1, 8, 3], ep=[1, 8], batch=16)
    lines = csv_rows(cli("--sweep", "-", "--model", "deepseek-v3", "--hardware", "h200", "--tp", "8",
                         "--dp-attention", "1,8,3", "--ep", "1,8", "--batch", "16").stdout)
    assert lines[0] == got["columns"] and len(lines) - 1 == len(got["rows"]) == 4
    assert [(r["dp_attention"], r["ep"]) for r in got["rows"]] == [(1, 1), (1, 8), (8, 1), (8, 8)]
    assert got["skipped"] == 2 and any("does not divide" in r for r in got["skip_reasons"])
    tpot = got["columns"].index("tpot_ms")
    assert [r["tpot_ms"] for r in got["rows"]] == pytest.approx([float(l[tpot]) for l in lines[1:]], rel=1e-8)


def test_simulate_sweep_prices_the_engine_release_named():
    # SGLang 0.4.4 pays its host work in full under EAGLE where the current release hides it.
    kw = dict(drafter="eagle3-llama3.1-8b", k=3, batch=32, engine="sglang")
    old = specdec.simulate_sweep("llama-3.1-8b", "h100-sxm", engine_version="0.4.4", **kw)
    now = specdec.simulate_sweep("llama-3.1-8b", "h100-sxm", **kw)
    lines = csv_rows(cli("--sweep", "-", "--model", "llama-3.1-8b", "--hardware", "h100-sxm", "--drafter",
                         "eagle3-llama3.1-8b", "--k", "3", "--batch", "32", "--engine", "sglang",
                         "--engine-version", "0.4.4").stdout)
    speedup = old["columns"].index("speedup")
    assert old["rows"][0]["speedup"] == pytest.approx(float(lines[1][speedup]), rel=1e-8)
    assert old["rows"][0]["speedup"] < now["rows"][0]["speedup"]
    with pytest.raises(specdec.Error, match=r"engine_version: engine version '0.4.x' is not a dotted version number"):
        specdec.simulate_sweep("llama-3.1-8b", "h100-sxm", engine_version="0.4.x", **kw)


def test_simulate_sweep_errors_name_the_keyword(tmp_path):
    base = ("llama-3.1-8b", "h100-sxm")
    assert "k: K is 100, more than specdec supports" in error_of(specdec.simulate_sweep, *base, k=[2, 100])
    assert "batch: the batch size is 100000, more than specdec supports" in error_of(specdec.simulate_sweep, *base,
                                                                                    batch=100000)
    assert "tp: the tensor-parallel degree is 2000" in error_of(specdec.simulate_sweep, *base, tp=[1, 2000])
    assert "prompt_len: the prompt length is 33554432" in error_of(specdec.simulate_sweep, *base, prompt_len=1 << 25)
    assert "output_len: the output length is 33554432" in error_of(specdec.simulate_sweep, *base, output_len=1 << 25)
    assert "alphas is empty" in error_of(specdec.simulate_sweep, *base, alphas=[])
    assert "alphas must be a number, got 'high'" in error_of(specdec.simulate_sweep, *base, alphas="high")
    assert "k must be an integer, got 2.5" in error_of(specdec.simulate_sweep, *base, k=[2.5])
    assert "model is empty" in error_of(specdec.simulate_sweep, [], "h100-sxm")
    assert "hardware must be a string, got 3" in error_of(specdec.simulate_sweep, "llama-3.1-8b", [3])
    assert "give one acceptance model" in error_of(specdec.simulate_sweep, *base, acceptance=[0.8], synthetic_al=3)
    assert "acceptance_table must be a dict {K: AL}" in error_of(specdec.simulate_sweep, *base, acceptance_table=[3])
    assert "dtype: unknown dtype 'fp4'" in error_of(specdec.simulate_sweep, *base, dtype="fp4")
    assert "unknown hardware spec 'h100-sx'" in error_of(specdec.simulate_sweep, "llama-3.1-8b", "h100-sx")
    assert "unknown drafters spec 'eagle3-llama3.1-8'" in error_of(specdec.simulate_sweep, *base,
                                                                   drafter=["none", "eagle3-llama3.1-8"])
    assert "out: sweep output" in error_of(specdec.simulate_sweep, *base, out=str(tmp_path / "x.xlsx"))
    assert not (tmp_path / "x.xlsx").exists()
    assert "does not exist" in error_of(specdec.simulate_sweep, *base, out=str(tmp_path / "no" / "x.csv"))
    assert "out must be a path" in error_of(specdec.simulate_sweep, *base, out=3)
    # A value a sweep can hold but not predict is skipped with its reason, as on the command line.
    skipped = specdec.simulate_sweep(*base, batch=[0, 1])
    assert skipped["skipped"] == 1 and skipped["skip_reasons"] == ["batch size must be >= 1, got 0"]
    assert [r["batch"] for r in skipped["rows"]] == [1]
    with pytest.raises(TypeError, match="did you mean 'alphas'"):
        specdec.simulate_sweep(*base, alpha=0.7)
    with pytest.raises(TypeError, match="unexpected keyword argument 'best_k'"):
        specdec.simulate_sweep(*base, best_k=4)


# --- simulate_policy and recommend_policy ---------------------------------------------------------

EAGLE3 = dict(model="llama-3.1-8b", hardware="h100-sxm", drafter="eagle3-llama3.1-8b")
EAGLE3_CLI = ["--model", "llama-3.1-8b", "--hardware", "h100-sxm", "--drafter", "eagle3-llama3.1-8b"]


def test_simulate_policy_equals_the_command_line():
    got = specdec.simulate_policy(**EAGLE3, k=6, alpha=0.8, policy="hf-heuristic,start=5", policy_steps=3000,
                                  policy_seed=7, confidence_concentration=3.5, prompt_len=1024, output_len=128)
    assert got == cli_json(*EAGLE3_CLI, "--k", "6", "--alpha", "0.8", "--policy", "hf-heuristic,start=5",
                           "--policy-steps", "3000", "--policy-seed", "7", "--confidence-concentration", "3.5",
                           "--prompt-len", "1024", "--output-len", "128")
    p = got["policy_pricing"]
    assert (p["seed"], p["steps"], p["confidence_concentration"]) == (7, 3000, 3.5)
    assert p["policy"]["policy"] == "hf-heuristic" and p["policy"]["start"] == 5
    assert len(got["fixed_by_k"]) == 7 and got["scenario"]["max_depth"] == 6
    # The seed reaches the Monte Carlo: another seed prices another sample.
    other = specdec.simulate_policy(**EAGLE3, k=6, alpha=0.8, policy="hf-heuristic,start=5", policy_steps=3000,
                                    policy_seed=8, confidence_concentration=3.5, prompt_len=1024, output_len=128)
    assert other["policy_pricing"]["acceptance_length"] != p["acceptance_length"]


def test_simulate_policy_by_batch_equals_the_command_line():
    got = specdec.simulate_policy(**EAGLE3, k=4, acceptance=[0.9, 0.8, 0.7, 0.6], policy="vllm-batch,schedule=1:4/8:2/32:0",
                                  batch=[1, 8, 32], policy_steps=1000)
    assert got == cli_json(*EAGLE3_CLI, "--k", "4", "--acceptance", "0.9,0.8,0.7,0.6", "--policy",
                           "vllm-batch,schedule=1:4/8:2/32:0", "--batch", "1,8,32", "--policy-steps", "1000")
    assert [b["batch"] for b in got["by_batch"]] == [1, 8, 32] and got["scenario"]["batch"] == [1, 8, 32]
    assert [b["policy_pricing"]["mean_k"] for b in got["by_batch"]] == [4.0, 2.0, 0.0]


def test_recommend_policy_equals_the_command_line():
    got = specdec.recommend_policy(**EAGLE3, k=5, alpha=0.75, batch=4, policy_steps=2000, policy_seed=3)
    assert got == cli_json(*EAGLE3_CLI, "--k", "5", "--alpha", "0.75", "--batch", "4", "--recommend-policy",
                           "--policy-steps", "2000", "--policy-seed", "3")
    r = got["recommendation"]
    assert r["recommended"] == r["ranking"][0]["label"]
    assert {"fixed", "hf-heuristic", "goodput"} <= {p["policy"]["policy"] for p in r["policies"]}
    assert got["scenario"]["batch"] == 4


def test_policy_errors_name_the_keyword():
    base = dict(EAGLE3, k=4, alpha=0.8)
    unknown = error_of(specdec.simulate_policy, **base, policy="hf-heuristc")
    assert unknown.startswith("policy: unknown policy 'hf-heuristc'") and "did you mean hf-heuristic" in unknown
    assert "nope" in error_of(specdec.simulate_policy, **base, policy="goodput,nope=1")
    first_range = error_of(specdec.simulate_policy, **base, policy="vllm-batch,schedule=2:4")
    assert first_range.startswith("policy: ") and "batch size 1" in first_range
    assert "policy_steps: at least 100 steps, got 5" in error_of(specdec.simulate_policy, **base, policy="fixed",
                                                                policy_steps=5)
    assert "policy_steps: at most 100000000 steps" in error_of(specdec.recommend_policy, **base, policy_steps=2 ** 30)
    assert "confidence_concentration: must be a positive number" in error_of(
        specdec.simulate_policy, **base, policy="fixed", confidence_concentration=0)
    assert "confidence_concentration: must be a positive number" in error_of(
        specdec.recommend_policy, **base, confidence_concentration=float("nan"))
    assert "batch: the batch size must be >= 1, got 0" in error_of(specdec.simulate_policy, **base, policy="fixed",
                                                                  batch=[1, 0])
    assert "batch: the batch size is 100000, more than specdec supports" in error_of(
        specdec.simulate_policy, **base, policy="fixed", batch=[1, 100000])
    assert "recommend_policy: give one batch (a list of batch sizes is for policy=SPEC)" in error_of(
        specdec.recommend_policy, **base, batch=[1, 8])
    assert "policy_seed must be an integer, got 1.5" in error_of(specdec.simulate_policy, **base, policy="fixed",
                                                                policy_seed=1.5)
    assert "policy must be a string, got 3" in error_of(specdec.simulate_policy, **base, policy=3)
    # What a policy can be priced for: a drafter's chain under per-position acceptance.
    assert "needs a speculative method: give drafter (a chain drafter)" in error_of(
        specdec.simulate_policy, "llama-3.1-8b", "h100-sxm", alpha=0.8, policy="fixed")
    assert "method ngram is draft-free" in error_of(specdec.simulate_policy, "llama-3.1-8b", "h100-sxm", method="ngram",
                                                    alpha=0.5, policy="fixed")
    assert "does not answer depth 1 (give a smaller k" in error_of(specdec.recommend_policy, **EAGLE3, k=4,
                                                                   acceptance_table={3: 2.5})
    with pytest.raises(TypeError, match="missing required keyword argument 'policy'"):
        specdec.simulate_policy(**base)
    with pytest.raises(TypeError, match="did you mean 'policy_steps'"):
        specdec.simulate_policy(**base, policy="fixed", policy_step=1000)
    with pytest.raises(TypeError, match="unexpected keyword argument 'tree'"):
        specdec.recommend_policy(**base, tree="mc_sim_7b_63")
    with pytest.raises(TypeError, match="unexpected keyword argument 'policy'"):
        specdec.recommend_policy(**base, policy="fixed")


# --- calibrate ------------------------------------------------------------------------------------

def test_calibrate_equals_the_command_line(tmp_path):
    got = specdec.calibrate(TRAINIUM, cross_validate=True, output=str(tmp_path / "hw.json"),
                            engine_output=str(tmp_path / "engine.json"))
    assert got == cli_json("--calibrate", TRAINIUM, "--cross-validate", "--output", str(tmp_path / "cli-hw.json"),
                           "--engine-output", str(tmp_path / "cli-engine.json"))
    assert got["cross_validation"]["grouping"] == "row" and len(got["cross_validation"]["held_out"]) == 4
    assert got["max_abs_relative_error"] < got["max_abs_relative_error_before"]
    assert set(got["parameters"]) >= {"compute_efficiency", "step_overhead_s"}
    # The fitted spec files are the command line's; their sources name who fitted them.
    for mine, theirs in (("hw.json", "cli-hw.json"), ("engine.json", "cli-engine.json")):
        text = (tmp_path / mine).read_text()
        assert "fitted by specdec.calibrate to " in text
        assert text.replace("specdec.calibrate", "specdec simulate --calibrate") == (tmp_path / theirs).read_text()
    assert json.loads((tmp_path / "hw.json").read_text())["name"] == "trn1-32xlarge"


def test_calibrate_sets_on_one_platform_and_fit_equal_the_command_line(tmp_path):
    # Two sets (two sources) on one platform: cross-validation leaves one source out.
    data = json.load(open(TRAINIUM))
    paths = []
    for i, rows in enumerate((data["rows"][:2], data["rows"][2:])):
        part = dict(data, source=f"part {i}", rows=rows)
        paths.append(str(tmp_path / f"part{i}.json"))
        with open(paths[-1], "w") as f:
            json.dump(part, f)
    got = specdec.calibrate(paths, cross_validate=True, fit=["engine"])
    assert got == cli_json("--calibrate", ",".join(paths), "--cross-validate", "--fit", "engine")
    assert got["cross_validation"]["grouping"] == "source"
    assert {r["fold"] for r in got["cross_validation"]["held_out"]} == {"part 0", "part 1"}
    assert set(got["parameters"]) == {"step_overhead_s"}


def test_calibrate_traces_equal_the_command_line():
    traces = [os.path.join(GOLDEN, "eagle-chain_code_greedy.h5"), os.path.join(GOLDEN, "draft_code_greedy.h5")]
    got = specdec.calibrate(traces=traces, hardware="cpu-local", engine="specdec-cpu")
    assert got == cli_json("--calibrate-traces", ",".join(traces), "--hardware", "cpu-local", "--engine", "specdec-cpu")
    assert [r["label"] for r in got["rows"]] == ["eagle-chain_code_greedy", "draft_code_greedy"]


def test_calibrate_errors_name_the_keyword(tmp_path):
    assert "give measured (measured step timings, JSON or CSV) or traces (recorded traces): no file given" in error_of(
        specdec.calibrate)
    assert "give either measured (measured step timings, JSON or CSV) or traces (recorded traces), not both" in error_of(
        specdec.calibrate, TRAINIUM, traces=[os.path.join(GOLDEN, "draft_code_greedy.h5")])
    assert "traces needs hardware" in error_of(specdec.calibrate, traces=os.path.join(GOLDEN, "draft_code_greedy.h5"))
    assert "measured is empty" in error_of(specdec.calibrate, [])
    assert "measured must be a path (a string or os.PathLike), got 3" in error_of(specdec.calibrate, 3)
    assert "hardware must be a spec name or a path" in error_of(specdec.calibrate, TRAINIUM, hardware=5)
    assert "cannot open calibration set" in error_of(specdec.calibrate, str(tmp_path / "missing.json"))
    assert "unknown calibration parameter 'nope'" in error_of(specdec.calibrate, TRAINIUM, fit=["nope"])
    no_hardware = tmp_path / "no_hardware.csv"
    no_hardware.write_text("model,method,tpot_ms\nllama-3.1-8b,sequential,8.0\n")
    assert f"{no_hardware}: no hardware named in the file; give hardware" in error_of(specdec.calibrate, no_hardware)
    reserved = error_of(specdec.calibrate, os.path.join(EVALUATION, "eagle1_paper.json"))
    assert "reserved for independent evaluation" in reserved and "specdec.evaluate" in reserved
    assert "cross-validation needs at least 2 measured configurations" in error_of(
        specdec.calibrate, no_hardware, hardware="h100-sxm", cross_validate=True)
    assert "does not exist" in error_of(specdec.calibrate, TRAINIUM, output=str(tmp_path / "no" / "hw.json"))
    with pytest.raises(TypeError, match="did you mean 'cross_validate'"):
        specdec.calibrate(TRAINIUM, cross_validation=True)


# --- evaluate -------------------------------------------------------------------------------------

def test_evaluate_equals_the_command_line():
    got = specdec.evaluate(EVALUATION)
    assert got == cli_json("--evaluate", EVALUATION)
    assert len(got["sets"]) == len([f for f in os.listdir(EVALUATION) if f.endswith(".json")])
    assert got["all"]["results"] == sum(s["results"] for s in got["sets"]) >= 20
    one = os.path.join(EVALUATION, "eagle1_paper.json")
    replaced = specdec.evaluate(one, hardware="h200", engine="ideal")
    assert replaced == cli_json("--evaluate", one, "--hardware", "h200", "--engine", "ideal")
    assert {(r["hardware"], r["engine"]) for r in replaced["sets"][0]["rows"]} == {("h200", "ideal")}


def test_evaluate_errors_name_the_keyword(tmp_path):
    row = dict(model="llama-3.1-8b", method="eagle3", drafter="eagle3-llama3.1-8b", k=3, acceptance_length=2.5,
               speedup=2.0)
    (tmp_path / "set.json").write_text(json.dumps(dict(source="test", rows=[row])))
    assert "set.json row 0: no hardware: name it in the row or the set ('hardware'), or give hardware" in error_of(
        specdec.evaluate, str(tmp_path / "set.json"))
    assert specdec.evaluate(tmp_path / "set.json", hardware="h100-sxm")["all"]["results"] == 1  # a PathLike
    assert "unknown hardware spec 'h100-sx'" in error_of(specdec.evaluate, str(tmp_path), hardware="h100-sx")
    assert "cannot open evaluation set" in error_of(specdec.evaluate, str(tmp_path / "missing.json"))
    (tmp_path / "empty").mkdir()
    assert "holds no .json sets" in error_of(specdec.evaluate, str(tmp_path / "empty"))
    assert "published must be a path (a string or os.PathLike), got 5" in error_of(specdec.evaluate, 5)
    assert "specs_dirs must be a list of directories" in error_of(specdec.evaluate, str(tmp_path), specs_dirs=str(tmp_path))
    with pytest.raises(TypeError, match="did you mean 'specs_dirs'"):
        specdec.evaluate(str(tmp_path), specs_dir=[str(tmp_path)])
