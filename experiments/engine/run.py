#!/usr/bin/python3
"""Runs the outside engine on a prompt and writes its candidate trace.

  run.py --model models/target --method eagle --drafter models/eagle1 --k 4 \
         --prompt "And God said" --max-new-tokens 20 --out eagle.h5 [--tree '[[0],[1],[0,0]]']
         [--sampling sample --temperature 1 --seed 7] [--bug rope_layer3|tree_mask_off_by_one|residual_rule|rejected_token]

Prints one JSON line: the output tokens, steps and the trace path.
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import engine  # noqa: E402
import record  # noqa: E402


def encode(text):
    """The bundled models' byte-level vocabulary: <bos> 0, then UTF-8 bytes + 3."""
    return [0] + [b + 3 for b in text.encode("utf-8")]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default="models/target")
    p.add_argument("--method", choices=["eagle", "peagle"], default="eagle")
    p.add_argument("--drafter", required=True)
    p.add_argument("--k", type=int, default=4)
    p.add_argument("--tree", default="chain", help="chain, or child-rank paths as JSON, e.g. '[[0],[1],[0,0]]'")
    p.add_argument("--sampling", choices=["greedy", "sample", "coupled"], default="greedy")
    p.add_argument("--temperature", type=float, default=1.0)
    p.add_argument("--top-k", type=int, default=0)
    p.add_argument("--top-p", type=float, default=1.0)
    p.add_argument("--seed", type=int, default=0)
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--prompt")
    g.add_argument("--prompt-ids")
    p.add_argument("--max-new-tokens", type=int, default=20)
    p.add_argument("--ignore-eos", action="store_true")
    p.add_argument("--bug", choices=engine.BUGS)
    p.add_argument("--out", required=True)
    a = p.parse_args(argv)
    tree = None if a.tree == "chain" else json.loads(a.tree)
    s = engine.Sampling(a.sampling, a.temperature, a.top_k, a.top_p, a.seed)
    e = engine.Engine(a.model, a.drafter, a.method, k=a.k, tree=tree, sampling=s, bug=a.bug)
    prompt = encode(a.prompt) if a.prompt is not None else [int(x) for x in a.prompt_ids.split(",")]
    run = e.generate(prompt, a.max_new_tokens, stop_at_eos=not a.ignore_eos)
    fp = record.reference_fingerprints(a.model, a.method, a.drafter)
    record.write_trace(a.out, e, run, fp)
    print(json.dumps({"trace": a.out, "output_tokens": run["output"], "steps": len(run["steps"]),
                      "stop_reason": run["stop_reason"]}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
