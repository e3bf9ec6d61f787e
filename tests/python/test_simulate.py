"""specdec.simulate: one scenario of the cost simulator, the same numbers as `specdec simulate --json`.

Each case runs the command line with --json and specdec.simulate with the matching keywords; the
two dicts ("scenario" and "prediction", with the per-operator breakdown where asked) are equal
exactly. Bad arguments raise specdec.Error naming the argument.

Run (ctest does this, label cpu;python):
  SPECDEC_BUILD_DIR=build PYTHONPATH=build/python /usr/bin/python3 -m pytest tests/python/test_simulate.py
"""
import json
import os
import subprocess

import pytest

import specdec

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.path.abspath(os.environ.get("SPECDEC_BUILD_DIR", os.path.join(ROOT, "build")))

# (case name, command-line options after --model M --hardware H, simulate keywords)
CASES = [
    ("sequential-h100", ["--model", "llama-3.1-8b", "--hardware", "h100-sxm"],
     dict(model="llama-3.1-8b", hardware="h100-sxm")),
    ("eagle3-alpha-batch8", ["--model", "llama-3.1-8b", "--hardware", "h100-sxm", "--drafter", "eagle3-llama3.1-8b",
                             "--k", "5", "--alpha", "0.7", "--batch", "8", "--prompt-len", "1024", "--output-len", "128"],
     dict(model="llama-3.1-8b", hardware="h100-sxm", drafter="eagle3-llama3.1-8b", k=5, alpha=0.7, batch=8,
          prompt_len=1024, output_len=128)),
    ("eagle1-tree-breakdown", ["--model", "vicuna-7b", "--hardware", "a100-80gb-sxm", "--drafter", "eagle1-vicuna-7b",
                               "--tree", "mc_sim_7b_63", "--alpha", "0.75", "--breakdown", "--engine", "sglang"],
     dict(model="vicuna-7b", hardware="a100-80gb-sxm", drafter="eagle1-vicuna-7b", tree="mc_sim_7b_63", alpha=0.75,
          breakdown=True, engine="sglang")),
    ("peagle-acceptance-tp2", ["--model", "gpt-oss-120b", "--hardware", "h200", "--drafter", "peagle-gpt-oss-120b",
                               "--k", "4", "--acceptance", "0.8,0.7,0.6,0.5", "--tp", "2", "--dtype", "fp8"],
     dict(model="gpt-oss-120b", hardware="h200", drafter="peagle-gpt-oss-120b", k=4, acceptance=[0.8, 0.7, 0.6, 0.5],
          tp=2, dtype="fp8")),
    ("draft-al", ["--model", "llama-2-7b", "--hardware", "l40s", "--drafter", "draft-llama-2-7b", "--k", "3",
                  "--al", "2.4"],
     dict(model="llama-2-7b", hardware="l40s", drafter="draft-llama-2-7b", k=3, al=2.4)),
    ("tree-choices-by-depth", ["--model", "vicuna-7b", "--hardware", "h100-sxm", "--drafter", "eagle1-vicuna-7b",
                               "--tree", "[[0],[1],[0,0]]", "--acceptance-by-depth", "0.8,0.5", "--engine", "tensorrt-llm"],
     dict(model="vicuna-7b", hardware="h100-sxm", drafter="eagle1-vicuna-7b", tree=[[0], [1], [0, 0]],
          acceptance_by_depth=[0.8, 0.5], engine="tensorrt-llm")),
    ("ngram-alpha", ["--model", "llama-3.1-8b", "--hardware", "h100-sxm", "--method", "ngram", "--k", "4",
                     "--alpha", "0.5"],
     dict(model="llama-3.1-8b", hardware="h100-sxm", method="ngram", k=4, alpha=0.5)),
    ("mtp-alpha", ["--model", "mimo-7b", "--hardware", "h100-sxm", "--drafter", "mtp-mimo-7b", "--k", "2",
                   "--alpha", "0.85"],
     dict(model="mimo-7b", hardware="h100-sxm", drafter="mtp-mimo-7b", k=2, alpha=0.85)),
]


@pytest.mark.parametrize("case,options,kw", CASES, ids=[c[0] for c in CASES])
def test_simulate_equals_the_command_line(case, options, kw):
    r = subprocess.run([os.path.join(BUILD, "specdec"), "simulate", *options, "--json"], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, f"{case}: {r.stderr}"
    cli = json.loads(r.stdout)
    got = specdec.simulate(**kw)
    assert set(got) == {"scenario", "prediction"}, case
    assert got["scenario"] == cli["scenario"], case
    assert got["prediction"] == cli["prediction"], case
    assert ("breakdown" in got["prediction"]) == bool(kw.get("breakdown")), case


def test_simulate_errors():
    with pytest.raises(specdec.Error, match="acceptance model"):
        specdec.simulate("llama-3.1-8b", "h100-sxm", drafter="eagle3-llama3.1-8b")
    with pytest.raises(specdec.Error, match="give one acceptance model"):
        specdec.simulate("llama-3.1-8b", "h100-sxm", drafter="eagle3-llama3.1-8b", alpha=0.5, al=2.0)
    with pytest.raises(specdec.Error, match="h100-sxm"):  # a mistyped name: the closest one is named
        specdec.simulate("llama-3.1-8b", "h100-sx")
    with pytest.raises(specdec.Error, match="acceptance must hold numbers"):
        specdec.simulate("llama-3.1-8b", "h100-sxm", drafter="eagle3-llama3.1-8b", acceptance=[0.5, "x"])
    with pytest.raises(specdec.Error, match="needs drafter="):
        specdec.simulate("llama-3.1-8b", "h100-sxm", method="eagle3", alpha=0.5)
    with pytest.raises(specdec.Error, match="acceptance_by_depth gives 1 depths, the tree has 2"):
        specdec.simulate("vicuna-7b", "h100-sxm", drafter="eagle1-vicuna-7b", tree=[[0], [0, 0]],
                         acceptance_by_depth=[0.5], engine="sglang")
    with pytest.raises(specdec.Error, match="verifies draft chains only"):
        specdec.simulate("vicuna-7b", "h100-sxm", drafter="eagle1-vicuna-7b", tree="mc_sim_7b_63", alpha=0.7)
    with pytest.raises(specdec.Error, match="K"):
        specdec.simulate("llama-3.1-8b", "h100-sxm", drafter="eagle3-llama3.1-8b", alpha=0.5, k=1000)
    with pytest.raises(TypeError, match="did you mean 'prompt_len'"):
        specdec.simulate("llama-3.1-8b", "h100-sxm", prompt_length=10)
