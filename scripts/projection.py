"""What the acceptance a `specdec compare --json` run measured would buy on a GPU where decoding
is bandwidth-bound: for each speculative method of the run, `specdec simulate` predicts the
speedup over sequential decoding of a published drafter of that method on a real 8B-class
target, one H100 SXM under vLLM at batch 1, at the acceptance length measured here, and prints
it beside the simulator's own error on published results it was never fitted to.

Usage: python3 scripts/projection.py SPECDEC COMPARE.json
"""
import json
import os
import subprocess
import sys

HARDWARE, ENGINE = "h100-sxm", "vllm"
# method -> (a published drafter spec of that method, the target it drafts for)
DRAFTERS = {
    "draft": ("draft-llama-3.2-1b", "llama-3.1-8b"),
    "eagle": ("eagle1-llama3-8b", "llama-3-8b"),
    "eagle3": ("eagle3-llama3.1-8b", "llama-3.1-8b"),
    "peagle": ("peagle-llama3.1-8b", "llama-3.1-8b"),
    "mtp": ("mtp-mimo-7b", "mimo-7b"),
    "medusa": ("medusa-vicuna-7b", "vicuna-7b"),
    "ngram": ("ngram", "llama-3.1-8b"),
    "suffix": ("suffix", "llama-3.1-8b"),
}


def simulate(specdec, args):
    r = subprocess.run([specdec, "simulate", *args, "--json"], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(r.stderr.strip() or r.stdout.strip())
    return json.loads(r.stdout)


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: python3 scripts/projection.py SPECDEC COMPARE.json")
    specdec, path = sys.argv[1], sys.argv[2]
    with open(path) as f:
        compare = json.load(f)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    rows = []
    for run in compare["runs"]:
        method = run["method"]
        name = method["method"]
        if name not in DRAFTERS or method.get("tree", "chain") != "chain":
            continue  # sequential, trees, methods without a published drafter spec
        drafter, target = DRAFTERS[name]
        al = run["acceptance_length"]
        args = ["--model", target, "--hardware", HARDWARE, "--engine", ENGINE, "--method", name, "--drafter", drafter,
                "--k", str(method.get("k", 4)), "--al", f"{al:.4f}"]
        try:
            speedup = simulate(specdec, args)["prediction"]["speedup"]
        except (RuntimeError, KeyError, json.JSONDecodeError) as e:
            rows.append((name, al, f"{drafter} on {target}", f"not predicted: {e}"))
            continue
        rows.append((name, al, f"{drafter} on {target}", f"{speedup:.2f}x"))
    if not rows:
        return
    evaluation = simulate(specdec, ["--evaluate", os.path.join(root, "simulator", "evaluation")])["all"]
    print("\nWhat the acceptance measured here would buy where decoding is bandwidth-bound\n"
          "(specdec simulate: one H100 SXM, vLLM, batch 1, K as run):")
    print(f"  {'method':<10} {'AL here':>8}  {'published drafter and target':<36} predicted speedup")
    for name, al, pair, result in rows:
        print(f"  {name:<10} {al:8.2f}  {pair:<36} {result}")
    print(f"  The simulator's error on {evaluation['results']} published results it was never fitted to: "
          f"mean {100 * evaluation['mean_abs_relative_error']:.0f}% off, largest {100 * evaluation['max_abs_relative_error']:.0f}%\n"
          f"  (specdec simulate --evaluate simulator/evaluation). On this CPU the bundled models are tiny and\n"
          f"  compute-bound, so speculation costs more than it saves; on a GPU reading an 8B target's weights\n"
          f"  dominates each step, and verifying K drafts costs about as much as one token.")


if __name__ == "__main__":
    main()
