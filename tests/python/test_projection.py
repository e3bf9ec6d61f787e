"""The main job's last part (scripts/projection.py): what the acceptance `specdec compare`
measured would buy on a GPU, predicted by `specdec simulate` for a published drafter of each
method, beside the simulator's own error on published results."""
import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SPECDEC = os.environ.get("SPECDEC_BIN", os.path.join(ROOT, "build", "specdec"))
MODELS = os.path.join(ROOT, "models")

pytestmark = pytest.mark.skipif(not os.path.exists(SPECDEC), reason="specdec is not built")


def compare(tmp_path, methods):
    out = tmp_path / "compare.json"
    r = subprocess.run([SPECDEC, "compare", "--model", os.path.join(MODELS, "target"), "--prompt", "And God said",
                        "--max-new-tokens", "24", "--methods", methods, "--json-file", str(out)],
                       capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    assert "all outputs agree" in r.stdout, r.stdout  # the text table still goes to the terminal
    return out


def project(path):
    r = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "projection.py"), SPECDEC, str(path)],
                       capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_each_speculative_method_gets_a_predicted_speedup_at_its_measured_acceptance(tmp_path):
    path = compare(tmp_path, "sequential,eagle,eagle3,peagle")
    runs = {r["method"]["method"]: r for r in json.loads(path.read_text())["runs"]}
    text = project(path)
    assert "one H100 SXM, vLLM, batch 1" in text, text
    for method, pair in [("eagle", "eagle1-llama3-8b on llama-3-8b"), ("eagle3", "eagle3-llama3.1-8b on llama-3.1-8b"),
                         ("peagle", "peagle-llama3.1-8b on llama-3.1-8b")]:
        line = next(l for l in text.splitlines() if l.split()[:1] == [method])
        assert f"{runs[method]['acceptance_length']:.2f}" in line and pair in line, line
        speedup = float(line.split()[-1].rstrip("x"))
        # The simulator's own answer for that drafter at that acceptance.
        sim = subprocess.run([SPECDEC, "simulate", "--model", pair.split(" on ")[1], "--hardware", "h100-sxm", "--engine", "vllm",
                              "--method", method, "--drafter", pair.split(" on ")[0], "--k", "4",
                              "--al", f"{runs[method]['acceptance_length']:.4f}", "--json"], capture_output=True, text=True)
        assert abs(speedup - json.loads(sim.stdout)["prediction"]["speedup"]) < 0.006, (line, sim.stdout)
    assert "sequential " not in text.split("predicted speedup", 1)[1], text  # no row for sequential decoding
    evaluation = json.loads(subprocess.run([SPECDEC, "simulate", "--evaluate", os.path.join(ROOT, "simulator", "evaluation"),
                                            "--json"], capture_output=True, text=True).stdout)["all"]
    assert f"{evaluation['results']} published results it was never fitted to" in text, text
    assert f"mean {100 * evaluation['mean_abs_relative_error']:.0f}% off" in text, text


def test_a_run_of_sequential_decoding_alone_prints_nothing(tmp_path):
    assert project(compare(tmp_path, "sequential")) == ""
