#!/usr/bin/python3
"""How far typical acceptance (Medusa's lossy rule, `specdec generate --typical-acceptance`) takes a
decode away from sequential decoding, prompt by prompt, on the held-out prompts.

Usage: typical_divergence.py --method eagle --drafter models/eagle1 [--specdec build/specdec]
           [--model models/target] [--sampling coupled|sample|both] [--temperature 0.7] [--seed 0]
           [--k 4] [--tree chain] [--typical epsilon=0.09,delta=0.3] [--max-new-tokens 64]
           [--prompts experiments/train/heldout_prompts.json] [--domain prose|code|all] [--limit N]

For every prompt and sampling mode, three `specdec generate --json` runs with the same seed
(seed + the prompt's index in its domain, as the acceptance sweeps use): sequential decoding,
the method with its lossless rule, and the method with --typical-acceptance. Per prompt: tokens
generated, the first position where the typical run's tokens differ from sequential decoding's
(0-based; "-" when they never do), the fraction of positions that differ (position by position over the
shorter output: after a first difference the two texts usually drift apart, so this is an upper
bound on what changed, not an edit distance), and the acceptance length (AL, tokens per step,
bonus included) of the lossless and of the typical run, and where the lossless run first differs
from sequential decoding. A summary line per mode: prompts that
diverged, the mean first divergence (over those), the pooled fraction of differing positions, and
the pooled AL of each rule.

Under coupled sampling the lossless run reproduces sequential decoding token for token, so every
difference is typical acceptance's; the script checks that and reports a lossless run that
differs (a bug). Under sample mode the lossless rule (rejection sampling) draws from other random
streams than sequential decoding, so it differs from it too; that count is reported beside.
System python3, standard library only.
"""
import argparse
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def fail(message):
    sys.exit(f"{os.path.basename(sys.argv[0])}: error: {message}")


def find_specdec(given):
    if given:
        if not os.access(given, os.X_OK):
            fail(f"--specdec {given}: not an executable")
        return given
    for build in sorted(d for d in os.listdir(ROOT) if d.startswith("build")):
        path = os.path.join(ROOT, build, "specdec")
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    fail("no specdec found in build*/; build it (cmake --build BUILD --target specdec) or give --specdec PATH")


def generate(specdec, args, prompt, method, sampling, seed, typical=None):
    """One `specdec generate --json` run: its JSON output."""
    cmd = [specdec, "generate", "--model", args.model, "--prompt", prompt, "--max-new-tokens", str(args.max_new_tokens),
           "--sampling", sampling, "--temperature", str(args.temperature), "--top-k", str(args.top_k),
           "--top-p", str(args.top_p), "--seed", str(seed), "--backend", args.backend, "--json"]
    if not args.stop_at_eos:
        cmd.append("--ignore-eos")
    if method != "sequential":
        cmd += ["--method", method, "--k", str(args.k), "--tree", args.tree]
        if args.drafter:
            cmd += ["--drafter", args.drafter]
    if typical is not None:
        cmd += ["--typical-acceptance", typical] if typical else ["--typical-acceptance"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        fail(f"{' '.join(cmd[:3])} ... exited {r.returncode}: {r.stderr.strip()}")
    return json.loads(r.stdout)


def compare(a, b):
    """(first differing position or None, differing positions, positions compared) of two token lists.
    Positions beyond the shorter list count as differing when the lengths differ."""
    n = min(len(a), len(b))
    differ = [i for i in range(n) if a[i] != b[i]]
    longer = max(len(a), len(b))
    first = differ[0] if differ else (n if len(a) != len(b) else None)
    return first, len(differ) + (longer - n), longer


def acceptance_length(run):
    s = run["stats"]
    return s["acceptance_length"], s["steps"], s["accepted_tokens"]


def measure(specdec, args, prompts, sampling):
    print(f"## {sampling} sampling, T = {args.temperature}, {args.method} ({args.drafter or 'no drafter'}), k = {args.k}, "
          f"tree {args.tree}, typical {args.typical or 'epsilon=0.09,delta=0.3 (defaults)'}, {args.max_new_tokens} new tokens")
    print()
    print("| prompt | tokens | first diff | differ | AL lossless | AL typical | lossless first diff |")
    print("|---|---|---|---|---|---|---|")
    diverged, firsts, differ_sum, compared_sum, lossless_firsts = 0, [], 0, 0, []
    pooled = {"lossless": [0, 0], "typical": [0, 0]}  # [steps, accepted drafts]
    for domain, index, text in prompts:
        seed = args.seed + index
        seq = generate(specdec, args, text, "sequential", sampling, seed)
        lossless = generate(specdec, args, text, args.method, sampling, seed)
        typical = generate(specdec, args, text, args.method, sampling, seed, typical=args.typical)
        if typical.get("lossless") is not False:
            fail("the --typical-acceptance run does not say \"lossless\": false; is this specdec built with typical acceptance?")
        first, differ, compared = compare(seq["output_tokens"], typical["output_tokens"])
        lossless_first = compare(seq["output_tokens"], lossless["output_tokens"])[0]
        if lossless_first is not None:
            lossless_firsts.append(lossless_first)
            if sampling == "coupled":
                print(f"warning: {domain} {index}: the lossless coupled run differs from sequential decoding (a bug)", file=sys.stderr)
        if first is not None:
            diverged += 1
            firsts.append(first)
        differ_sum += differ
        compared_sum += compared
        al = {}
        for name, run in (("lossless", lossless), ("typical", typical)):
            value, steps, accepted = acceptance_length(run)
            pooled[name][0] += steps
            pooled[name][1] += accepted
            al[name] = value
        shown = "-" if first is None else str(first)
        shown_lossless = "-" if lossless_first is None else str(lossless_first)
        print(f"| {domain} {index} | {len(typical['output_tokens'])} | {shown} | {differ / compared if compared else 0:.2f} | "
              f"{al['lossless']:.2f} | {al['typical']:.2f} | {shown_lossless} |")
    print()

    def pooled_al(name):
        steps, accepted = pooled[name]
        return (steps + accepted) / steps if steps else float("nan")

    def mean(xs):
        return f"{sum(xs) / len(xs):.1f}" if xs else "-"

    print(f"summary {sampling}: {diverged}/{len(prompts)} prompts diverge from sequential decoding, mean first divergence at "
          f"token {mean(firsts)}, {differ_sum / compared_sum if compared_sum else 0:.2f} of positions differ; AL lossless "
          f"{pooled_al('lossless'):.2f}, typical {pooled_al('typical'):.2f}; lossless runs differing from sequential: "
          f"{len(lossless_firsts)}/{len(prompts)}" + (" (expected 0 under coupled sampling)" if sampling == "coupled" else
                                                      f", first at token {mean(lossless_firsts)} on average (rejection "
                                                      "sampling draws from other random streams than sequential decoding)"))
    print()


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--specdec", help="the specdec binary (default: the first build*/specdec)")
    p.add_argument("--model", default=os.path.join(ROOT, "models", "target"))
    p.add_argument("--method", required=True, help="a speculative method (eagle, medusa, draft, ...)")
    p.add_argument("--drafter", help="its drafter directory (e.g. models/eagle1)")
    p.add_argument("--k", type=int, default=4)
    p.add_argument("--tree", default="chain")
    p.add_argument("--sampling", choices=["coupled", "sample", "both"], default="both")
    p.add_argument("--temperature", type=float, default=0.7)
    p.add_argument("--top-k", type=int, default=0)
    p.add_argument("--top-p", type=float, default=1.0)
    p.add_argument("--seed", type=int, default=0, help="seed of a domain's first prompt; prompt i gets seed + i")
    p.add_argument("--typical", default="", help="--typical-acceptance value (default: the option alone, Medusa's defaults)")
    p.add_argument("--max-new-tokens", type=int, default=64)
    p.add_argument("--stop-at-eos", action="store_true", help="stop at the end-of-sequence token (default: --ignore-eos)")
    p.add_argument("--backend", default="reference")
    p.add_argument("--prompts", default=os.path.join(ROOT, "experiments", "train", "heldout_prompts.json"))
    p.add_argument("--domain", default="all", help="prose, code or all (the keys of the prompts file)")
    p.add_argument("--limit", type=int, default=0, help="at most this many prompts per domain (0 = all)")
    a = p.parse_args()
    if a.method == "sequential":
        fail("--method sequential has no drafts to accept; give a speculative method")
    specdec = find_specdec(a.specdec)
    try:
        with open(a.prompts) as f:
            sets = json.load(f)
    except (OSError, ValueError) as e:
        fail(f"{a.prompts}: {e}")
    domains = list(sets) if a.domain == "all" else [a.domain]
    prompts = []
    for d in domains:
        if d not in sets:
            fail(f"{a.prompts} has no domain '{d}' (it has {', '.join(sets)})")
        texts = sets[d][: a.limit] if a.limit > 0 else sets[d]
        prompts += [(d, i, t) for i, t in enumerate(texts)]
    for sampling in (["coupled", "sample"] if a.sampling == "both" else [a.sampling]):
        measure(specdec, a, prompts, sampling)


if __name__ == "__main__":
    main()
