"""specdec.simulate and specdec.plan_capacity: the cost simulator, the same numbers as `specdec simulate --json`.

Each case runs the command line with --json and specdec.simulate (or plan_capacity) with the matching
keywords; the two dicts are equal exactly: "scenario" and "prediction" (with the per-operator breakdown
where asked), and each mode's keys (a drafter spec's category, the best K or tree with what was skipped,
batching, the capacity plan). Bad arguments raise specdec.Error naming the keyword.

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
    ("engine-version", ["--model", "llama-3.1-8b", "--hardware", "h100-sxm", "--drafter", "eagle3-llama3.1-8b",
                        "--k", "3", "--alpha", "0.8", "--batch", "32", "--engine", "sglang", "--engine-version", "0.4.4"],
     dict(model="llama-3.1-8b", hardware="h100-sxm", drafter="eagle3-llama3.1-8b", k=3, alpha=0.8, batch=32,
          engine="sglang", engine_version="0.4.4")),
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
    ("mtp-dp-attention-ep", ["--model", "deepseek-v3", "--hardware", "h200", "--drafter", "mtp-deepseek-v3", "--k", "1",
                             "--alpha", "0.85", "--tp", "8", "--dp-attention", "8", "--ep", "8", "--batch", "16",
                             "--engine", "sglang"],
     dict(model="deepseek-v3", hardware="h200", drafter="mtp-deepseek-v3", k=1, alpha=0.85, tp=8, dp_attention=8, ep=8,
          batch=16, engine="sglang")),
]


def test_layout_errors_name_the_keywords():
    with pytest.raises(specdec.Error, match=r"ep=2: model 'llama-3.1-8b' is dense"):
        specdec.simulate("llama-3.1-8b", "h100-sxm", tp=2, ep=2)
    with pytest.raises(specdec.Error, match=r"dp_attention=3 does not divide the replica's 8 devices \(tp=8\)"):
        specdec.simulate("deepseek-v3", "h200", tp=8, dp_attention=3)


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


# Tree acceptance as per-depth, per-rank probabilities (five depths).
PROBS = [[0.7, 0.2, 0.1], [0.7, 0.2, 0.1], [0.6, 0.2], [0.6, 0.2], [0.5, 0.2]]
VICUNA = dict(model="vicuna-7b", hardware="a100-80gb-sxm", engine="sglang", drafter="eagle1-vicuna-7b")
VICUNA_CLI = ["--model", "vicuna-7b", "--hardware", "a100-80gb-sxm", "--engine", "sglang", "--drafter", "eagle1-vicuna-7b"]
EAGLE3 = dict(model="llama-3.1-8b", hardware="h100-sxm", drafter="eagle3-llama3.1-8b")
EAGLE3_CLI = ["--model", "llama-3.1-8b", "--hardware", "h100-sxm", "--drafter", "eagle3-llama3.1-8b"]

# The modes beyond one prediction: (case name, command-line options, simulate keywords).
MODE_CASES = [
    ("published-default", EAGLE3_CLI + ["--k", "3"], dict(EAGLE3, k=3)),
    ("published-default-tree", ["--model", "vicuna-7b", "--hardware", "a100-80gb-sxm", "--engine", "hf-eager",
                                "--drafter", "eagle1-vicuna-7b"],
     dict(model="vicuna-7b", hardware="a100-80gb-sxm", engine="hf-eager", drafter="eagle1-vicuna-7b")),
    ("category-named", EAGLE3_CLI + ["--k", "3", "--category", "vllm-issue-20780"],
     dict(EAGLE3, k=3, category="vllm-issue-20780")),
    ("medusa-category", ["--model", "vicuna-7b", "--hardware", "a100-80gb-sxm", "--engine", "hf-eager", "--drafter",
                         "medusa-vicuna-7b", "--category", "train-top-k"],
     dict(model="vicuna-7b", hardware="a100-80gb-sxm", engine="hf-eager", drafter="medusa-vicuna-7b",
          category="train-top-k")),
    ("ngram-category-match-rate", ["--model", "llama-3.1-8b", "--hardware", "h100-sxm", "--method", "ngram",
                                   "--category", "blazedit", "--match-rate", "0.5", "--k", "5"],
     dict(model="llama-3.1-8b", hardware="h100-sxm", method="ngram", category="blazedit", match_rate=0.5, k=5)),
    ("synthetic-al", EAGLE3_CLI + ["--k", "7", "--synthetic-al", "3.78"], dict(EAGLE3, k=7, synthetic_al=3.78)),
    ("trace-replay", EAGLE3_CLI + ["--trace", os.path.join(ROOT, "traces", "golden", "eagle-chain_code_greedy.h5")],
     dict(EAGLE3, trace=os.path.join(ROOT, "traces", "golden", "eagle-chain_code_greedy.h5"))),
    ("acceptance-table", EAGLE3_CLI + ["--k", "3", "--acceptance-table", "3:2.79"],
     dict(EAGLE3, k=3, acceptance_table={3: 2.79})),
    ("best-k-list", VICUNA_CLI + ["--alpha", "0.8", "--best-k", "2,4,6"], dict(VICUNA, alpha=0.8, best_k=[2, 4, 6])),
    ("best-k-n", VICUNA_CLI + ["--alpha", "0.8", "--best-k", "5"], dict(VICUNA, alpha=0.8, best_k=5)),
    ("best-k-true", VICUNA_CLI + ["--alpha", "0.8", "--best-k", "8"], dict(VICUNA, alpha=0.8, best_k=True)),
    ("best-k-table-skips", VICUNA_CLI + ["--acceptance-table", "2:2.4,4:3.1", "--best-k", "8"],
     dict(VICUNA, acceptance_table={2: 2.4, 4: 3.1}, best_k=8)),
    ("best-k-published", EAGLE3_CLI + ["--best-k", "2-6"], dict(EAGLE3, best_k=[2, 3, 4, 5, 6])),
    ("best-tree", VICUNA_CLI + ["--tree-acceptance", json.dumps(PROBS), "--best-tree", "32,64/4-6/4,8"],
     dict(VICUNA, tree_acceptance=PROBS, best_tree=([32, 64], [4, 5, 6], [4, 8]))),
    ("dynamic-tree", VICUNA_CLI + ["--tree-acceptance", json.dumps(PROBS), "--dynamic-tree", "26,5,4"],
     dict(VICUNA, tree_acceptance=PROBS, dynamic_tree=(26, 5, 4))),
    ("batching-static", EAGLE3_CLI + ["--k", "4", "--alpha", "0.8", "--batch", "32", "--batching", "static"],
     dict(EAGLE3, k=4, alpha=0.8, batch=32, batching="static")),
    ("batching-continuous", EAGLE3_CLI + ["--k", "4", "--alpha", "0.8", "--batch", "32", "--batching", "continuous"],
     dict(EAGLE3, k=4, alpha=0.8, batch=32, batching="continuous")),
]


def cli_json(options):
    r = subprocess.run([os.path.join(BUILD, "specdec"), "simulate", *options, "--json"], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


@pytest.mark.parametrize("case,options,kw", MODE_CASES, ids=[c[0] for c in MODE_CASES])
def test_simulate_modes_equal_the_command_line(case, options, kw):
    assert specdec.simulate(**kw) == cli_json(options), case


def test_simulate_modes_say_what_they_did():
    default = specdec.simulate(**EAGLE3, k=3)
    assert default["scenario"]["category"] == "vllm-issue-20780" and default["scenario"]["category_default"] is True
    assert "the drafter spec's default" in default["scenario"]["acceptance"]
    assert default["prediction"]["acceptance_length"] == 2.79
    assert "category" not in specdec.simulate(**EAGLE3, k=3, alpha=0.5)["scenario"]
    best = specdec.simulate(**VICUNA, alpha=0.8, best_k=True)
    assert [r["k"] for r in best["by_k"]] == list(range(1, 9)) and best["prediction"]["k"] == best["best_k"]
    assert specdec.simulate(**VICUNA, alpha=0.8, best_k=False) == specdec.simulate(**VICUNA, alpha=0.8)


# Capacity planning: (case name, command-line options, plan_capacity keywords).
QUESTION = dict(model="llama-3.1-70b", hardware="h200", drafter="eagle3-llama3.3-70b", alpha=0.75, prompt_len=1024,
                output_len=256, capacity_rate=20, tpot_target_ms=30)
QUESTION_CLI = ["--model", "llama-3.1-70b", "--hardware", "h200", "--drafter", "eagle3-llama3.3-70b", "--alpha", "0.75",
                "--prompt-len", "1024", "--output-len", "256", "--capacity-rate", "20", "--tpot-target-ms", "30"]
MOE = dict(model="deepseek-v3", hardware="h200", drafter="mtp-deepseek-v3", alpha=0.8, prompt_len=1024, output_len=4096,
           tp=8, capacity_rate=10, tpot_target_ms=50)
MOE_CLI = ["--model", "deepseek-v3", "--hardware", "h200", "--drafter", "mtp-deepseek-v3", "--alpha", "0.8",
           "--prompt-len", "1024", "--output-len", "4096", "--tp", "8", "--capacity-rate", "10", "--tpot-target-ms", "50"]
CAPACITY_CASES = [
    ("default-search", QUESTION_CLI, QUESTION),
    ("one-tp-one-k", QUESTION_CLI + ["--tp", "8", "--k", "4"], dict(QUESTION, tp=8, k=4)),
    ("tps-best-k", QUESTION_CLI + ["--tp", "2,4", "--best-k", "3"], dict(QUESTION, tp=[2, 4], best_k=3)),
    ("sequential-price-ttft", ["--model", "llama-3.1-8b", "--hardware", "h100-sxm", "--capacity-rate", "3",
                               "--tpot-target-ms", "40", "--ttft-target-ms", "500", "--price", "2.5"],
     dict(model="llama-3.1-8b", hardware="h100-sxm", capacity_rate=3, tpot_target_ms=40, ttft_target_ms=500,
          price=2.5)),
    ("published-tree", ["--model", "vicuna-7b", "--hardware", "a100-80gb-sxm", "--engine", "hf-eager", "--drafter",
                        "eagle1-vicuna-7b", "--capacity-rate", "2", "--tpot-target-ms", "60", "--tp", "1-2"],
     dict(model="vicuna-7b", hardware="a100-80gb-sxm", engine="hf-eager", drafter="eagle1-vicuna-7b", capacity_rate=2,
          tpot_target_ms=60, tp=[1, 2])),
    ("tree-search", ["--model", "vicuna-7b", "--hardware", "a100-80gb-sxm", "--engine", "sglang", "--drafter",
                     "eagle1-vicuna-7b", "--alpha", "0.7", "--best-tree", "16,32/4-5/4,8", "--capacity-rate", "5",
                     "--tpot-target-ms", "40", "--tp", "1,2"],
     dict(model="vicuna-7b", hardware="a100-80gb-sxm", engine="sglang", drafter="eagle1-vicuna-7b", alpha=0.7,
          best_tree=([16, 32], [4, 5], [4, 8]), capacity_rate=5, tpot_target_ms=40, tp=[1, 2])),
    ("queueing", QUESTION_CLI + ["--ttft-target-ms", "800", "--max-utilization", "0.9", "--output-len-cv", "1",
                                 "--ttft-percentile", "95"],
     dict(QUESTION, ttft_target_ms=800, max_utilization=0.9, output_len_cv=1, ttft_percentile=95)),
    ("bursty-arrivals", QUESTION_CLI + ["--arrival-cv", "3"], dict(QUESTION, arrival_cv=3)),
    # A mixture-of-experts model: every layout of each TP searched (attention DP, EP), or those asked for.
    ("moe-layouts", MOE_CLI, MOE),
    ("moe-layouts-restricted", MOE_CLI + ["--dp-attention", "1,8", "--ep", "1,8"], dict(MOE, dp_attention=[1, 8], ep=[1, 8])),
    ("moe-one-layout", MOE_CLI + ["--dp-attention", "8", "--ep", "8"], dict(MOE, dp_attention=8, ep=8)),
]


@pytest.mark.parametrize("case,options,kw", CAPACITY_CASES, ids=[c[0] for c in CAPACITY_CASES])
def test_plan_capacity_equals_the_command_line(case, options, kw):
    got = specdec.plan_capacity(**kw)
    assert got == cli_json(options), case
    assert {"capacity", "capacity_sequential", "capacity_search", "capacity_queueing", "error_band"} <= set(got)


def test_plan_capacity_searches_layouts():
    # DeepSeek-V3 with MTP under a reasoning load: attention DP 8 x EP 8 on 24 devices, plain TP 8 on 56.
    c = specdec.plan_capacity(**MOE)
    assert (c["capacity"]["dp_attention"], c["capacity"]["ep"], c["capacity"]["devices"]) == (8, 8, 24), c["capacity"]
    assert c["capacity_search"]["configurations"] == 72 and len(c["capacity_search"]["layouts"]) == 8
    plain = specdec.plan_capacity(**MOE, dp_attention=1, ep=[1])
    assert (plain["capacity"]["dp_attention"], plain["capacity"]["ep"], plain["capacity"]["devices"]) == (1, 1, 48)
    assert "dp_attention=3 fits none of the tensor-parallel degrees searched (tp=8)" in error_of(
        specdec.plan_capacity, **MOE, dp_attention=[1, 3])
    assert "ep=3 fits none" in error_of(specdec.plan_capacity, **MOE, ep=3)
    assert "dp_attention: list | int = None" in specdec.plan_capacity.__doc__.splitlines()[0]
    assert "ep: list | int = None" in specdec.plan_capacity.__doc__.splitlines()[0]


def test_plan_capacity_compares_drafters_as_the_command_line():
    # drafter=[...] plans each drafter's method and answers with the cheapest, as --drafter A,B does.
    drafters = ["eagle3-llama3.3-70b", "draft-llama-3.2-1b"]
    cli = [o if o != "eagle3-llama3.3-70b" else ",".join(drafters) for o in QUESTION_CLI]
    got = specdec.plan_capacity(**dict(QUESTION, drafter=drafters))
    assert got == cli_json(cli)
    assert [d["drafter"] for d in got["capacity_by_drafter"]] == drafters
    assert got["capacity_best_drafter"] == "eagle3-llama3.3-70b" and got["capacity"]["drafter"] == "eagle3-llama3.3-70b"
    assert "one acceptance model was given" in got["capacity_comparison_note"]
    assert "drafter: a comparison takes at least two drafters" in error_of(
        specdec.plan_capacity, **dict(QUESTION, drafter=["eagle3-llama3.3-70b"]))
    assert "drafter must be a string" in error_of(specdec.plan_capacity, **dict(QUESTION, drafter=["ngram", 3]))


def test_plan_capacity_answers_the_planning_question():
    # Every replica prefills its share of the prompts inside its decode steps and runs at utilisation
    # <= 0.85 (the default): five TP-2 replicas, ten devices. Allowed 0.96 the same: four replicas'
    # prompts would stretch their steps so far that each would run at rho 1.02.
    c = specdec.plan_capacity(**QUESTION)
    assert (c["capacity"]["tp"], c["capacity"]["replicas"], c["capacity"]["devices"], c["capacity"]["batch"]) == (2, 5, 10, 32)
    assert c["capacity"]["utilization"] <= 0.85
    assert c["capacity"]["decode_tpot_ms"] < c["capacity"]["tpot_at_mean_occupancy_ms"] < c["capacity"]["tpot_ms"] <= 30
    assert 0.4 < c["capacity"]["prefill_share"] < 0.5 and c["capacity"]["mean_occupancy"] < 32
    assert c["capacity_sequential"]["devices"] == 12
    assert c["capacity_search"]["tp"] == [1, 2, 4, 8] and c["capacity_search"]["k"] == list(range(1, 9))
    assert (c["capacity_search"]["max_utilization"], c["capacity_search"]["output_len_cv"],
            c["capacity_search"]["ttft_checked_at"]) == (0.85, 0, "mean")
    assert (c["capacity_search"]["tpot_checked_at"], c["capacity_search"]["prefill"]) == ("full_batch", "interleaved")
    loose = specdec.plan_capacity(**QUESTION, max_utilization=0.96)
    assert (loose["capacity"]["tp"], loose["capacity"]["devices"], loose["capacity"]["batch"]) == (2, 8, 32)
    q = specdec.plan_capacity(**QUESTION, ttft_target_ms=800, ttft_percentile=95)
    assert q["capacity_search"]["ttft_checked_at"] == 95 and q["capacity"]["percentile"] == 95
    assert q["capacity"]["ttft_at_percentile_ms"] <= 800


def error_of(fn, **kw):
    with pytest.raises(specdec.Error) as e:
        fn(**kw)
    return str(e.value)


def test_mode_errors_name_the_keyword():
    assert "category: drafter 'eagle3-llama3.1-8b' has no prompt category 'chat'" in error_of(
        specdec.simulate, **EAGLE3, category="chat")
    assert "category takes the acceptance of category" in error_of(
        specdec.simulate, **EAGLE3, k=3, category="vllm-issue-20780", alpha=0.5)
    assert "match_rate is for draft-free methods" in error_of(specdec.simulate, **EAGLE3, alpha=0.7, match_rate=0.5)
    assert "give category (ngram's: blazedit" in error_of(specdec.simulate, model="llama-3.1-8b", hardware="h100-sxm",
                                                          method="ngram")
    chain_only = error_of(specdec.simulate, model="vicuna-7b", hardware="a100-80gb-sxm", drafter="eagle1-vicuna-7b")
    assert "verifies chains only" in chain_only and "engine=sglang" in chain_only, chain_only
    assert "best_k searches draft shapes under an acceptance model; it cannot be combined with tree or dynamic_tree" in \
        error_of(specdec.simulate, **VICUNA, alpha=0.8, best_k=4, tree="mc_sim_7b_63")
    assert "best_k searches draft shapes under an acceptance model; it cannot be combined with al" in error_of(
        specdec.simulate, **VICUNA, al=3.0, best_k=4)
    assert "give best_k (chains) or best_tree (EAGLE-2 trees), not both" in error_of(
        specdec.simulate, **VICUNA, alpha=0.8, best_k=4, best_tree=(32, 4, 4))
    assert "batching evaluates one configuration: give k, tree or dynamic_tree" in error_of(
        specdec.simulate, **EAGLE3, alpha=0.8, batching="static", best_k=6)
    assert "batching: unknown batching 'paged'" in error_of(specdec.simulate, **EAGLE3, alpha=0.8, batching="paged")
    assert "dtype: unknown dtype 'fp4'" in error_of(specdec.simulate, **EAGLE3, alpha=0.8, dtype="fp4")
    assert "best_k: K is 100, more than specdec supports" in error_of(specdec.simulate, **VICUNA, alpha=0.8, best_k=100)
    assert "best_tree must be (total_tokens, depths, top_ks)" in error_of(specdec.simulate, **VICUNA, alpha=0.8,
                                                                         best_tree=(32, 4))
    assert "dynamic_tree chooses its tree from per-rank acceptance probabilities" in error_of(
        specdec.simulate, **VICUNA, al=3.0, dynamic_tree=(26, 5, 4))
    assert "dynamic_tree: expected TOTAL_TOKENS,DEPTH,TOP_K" in error_of(specdec.simulate, **VICUNA, alpha=0.8,
                                                                        dynamic_tree=(26, 5))
    assert "give either tree or dynamic_tree, not both" in error_of(specdec.simulate, **VICUNA, alpha=0.8, tree="chain3",
                                                                   dynamic_tree=(26, 5, 4))
    assert "acceptance_table holds a chain's AL by K; for a tree give its measured AL (al)" in error_of(
        specdec.simulate, **VICUNA, tree="mc_sim_7b_63", acceptance_table={5: 3.6})
    assert "acceptance_table must be a dict {K: AL}" in error_of(specdec.simulate, **EAGLE3, acceptance_table=[3, 2.79])
    assert "synthetic_al" in error_of(specdec.simulate, **EAGLE3, synthetic_al=3, alpha=0.7)
    assert "tree_acceptance: probabilities must be numbers" in error_of(specdec.simulate, **VICUNA,
                                                                       tree_acceptance=[["x"]])
    assert "alpha must be a number, got 'high'" in error_of(specdec.simulate, **EAGLE3, alpha="high")


def test_capacity_errors_name_the_keyword():
    base = dict(model="llama-3.1-8b", hardware="h100-sxm")
    assert "capacity planning needs both capacity_rate and tpot_target_ms" in error_of(
        specdec.plan_capacity, **base, capacity_rate=3)
    assert "capacity planning needs both capacity_rate and tpot_target_ms" in error_of(
        specdec.plan_capacity, **base, tpot_target_ms=40)
    assert "capacity_rate: the offered load must be a finite number > 0" in error_of(
        specdec.plan_capacity, **base, capacity_rate=0, tpot_target_ms=40)
    assert "tpot_target_ms: must be a finite number > 0" in error_of(
        specdec.plan_capacity, **base, capacity_rate=3, tpot_target_ms=float("nan"))
    assert "ttft_target_ms: must be a finite number >= 0" in error_of(
        specdec.plan_capacity, **base, capacity_rate=3, tpot_target_ms=40, ttft_target_ms=-1)
    assert "price must be a finite number >= 0" in error_of(
        specdec.plan_capacity, **base, capacity_rate=3, tpot_target_ms=40, price=-2)
    assert "tp=16 exceeds the 8 devices of one h100-sxm instance" in error_of(
        specdec.plan_capacity, **base, capacity_rate=3, tpot_target_ms=40, tp=[1, 16])
    assert "tp: the tensor-parallel degree must be >= 1, got 0" in error_of(
        specdec.plan_capacity, **base, capacity_rate=3, tpot_target_ms=40, tp=0)
    with pytest.raises(TypeError, match="did you mean 'capacity_rate'"):
        specdec.plan_capacity(**base, capacity_rte=3, tpot_target_ms=40)
    with pytest.raises(TypeError, match="unexpected keyword argument 'capacity_rate'"):
        specdec.simulate(**base, capacity_rate=3)


def test_capacity_queueing_errors_name_the_keyword():
    base = dict(model="llama-3.1-8b", hardware="h100-sxm", capacity_rate=3, tpot_target_ms=40)
    for bad in (1, 0, -0.5, float("nan")):
        assert "max_utilization: must be a number > 0 and < 1" in error_of(specdec.plan_capacity, **base,
                                                                             max_utilization=bad), bad
    cv = error_of(specdec.plan_capacity, **base, output_len_cv=5)
    assert "output_len_cv: the coefficient of variation of output lengths must be a number in [0, 4] " \
        "(0: every output is output_len tokens" in cv, cv
    arrivals = error_of(specdec.plan_capacity, **base, arrival_cv=-1)
    assert "arrival_cv: the coefficient of variation of interarrival times must be a number in [0, 4] " \
        "(1: Poisson arrivals; above 1: bursty), got -1" in arrivals, arrivals
    for bad in (0, 100, float("inf")):
        assert "ttft_percentile: must be a number between 0 and 100 (exclusive)" in error_of(
            specdec.plan_capacity, **base, ttft_percentile=bad), bad
    assert "max_utilization must be a number, got 'high'" in error_of(specdec.plan_capacity, **base,
                                                                      max_utilization="high")
    with pytest.raises(TypeError, match="did you mean 'max_utilization'"):
        specdec.plan_capacity(**base, max_utilisation=0.9)
    with pytest.raises(TypeError, match="unexpected keyword argument 'ttft_percentile'"):
        specdec.simulate(model="llama-3.1-8b", hardware="h100-sxm", ttft_percentile=95)


def test_simulate_errors():
    with pytest.raises(specdec.Error, match="acceptance model"):  # a head without published acceptance
        specdec.simulate("llama-3.1-8b", "h100-sxm", drafter="peagle-llama3.1-8b")
    with pytest.raises(specdec.Error, match="give one acceptance model"):
        specdec.simulate("llama-3.1-8b", "h100-sxm", drafter="eagle3-llama3.1-8b", alpha=0.5, al=2.0)
    with pytest.raises(specdec.Error, match="h100-sxm"):  # a mistyped name: the closest one is named
        specdec.simulate("llama-3.1-8b", "h100-sx")
    with pytest.raises(specdec.Error, match="acceptance must hold numbers"):
        specdec.simulate("llama-3.1-8b", "h100-sxm", drafter="eagle3-llama3.1-8b", acceptance=[0.5, "x"])
    with pytest.raises(specdec.Error, match="method=eagle3 needs drafter"):
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
