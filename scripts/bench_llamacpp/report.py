#!/usr/bin/env python3
"""Helpers of scripts/bench_llamacpp.sh.

  report.py check SPECDEC_FORWARD.h5 LLAMACPP_LOGITS.f32 DTYPE
      compares the logits `specdec forward` wrote with those all_rows --logits-out wrote for the
      same token ids; exits 1 when they differ by more than the precision explains.
  report.py table --raw RAW.jsonl --out DIR [...]
      turns the rounds' raw records into the markdown table (printed, and DIR/results.md) and
      DIR/results.json (the summary and every raw record).
"""

import argparse
import datetime
import json
import statistics
import subprocess
import sys
from pathlib import Path

# Largest normalised squared error (sum (a - b)^2 / sum a^2 over a row of logits) accepted as "the
# same model". llama.cpp keeps the KV cache in F16, and before a BF16 matrix product rounds the
# activations to BF16 (specdec keeps both in F32): measured 1.3e-6 on llama-0.5b in F32 and
# 1.4e-4 on llama-1b in BF16. Leaving q_proj / k_proj in Hugging Face's rotary row order gives
# 0.8 on llama-1b (and only 1.3e-3 on the small llama-22m, whose random attention is near uniform).
NMSE_LIMIT = {"F32": 1e-5, "F16": 1e-3, "BF16": 1e-3}


def check(args):
    import h5py
    import numpy as np

    with h5py.File(args.specdec, "r") as f:
        a = np.asarray(f["logits"], dtype=np.float64)
    b = np.fromfile(args.llamacpp, dtype=np.float32).astype(np.float64)
    if b.size != a.size:
        print(f"check: {a.shape[0]} x {a.shape[1]} logits from specdec, {b.size} values from llama.cpp")
        return 1
    b = b.reshape(a.shape)
    nmse = ((a - b) ** 2).sum(axis=1) / np.maximum((a**2).sum(axis=1), 1e-30)
    same_top = int((a.argmax(axis=1) == b.argmax(axis=1)).sum())
    limit = NMSE_LIMIT.get(args.dtype, 1e-3)
    ok = float(nmse.max()) <= limit
    print(f"check: {a.shape[0]} rows: logits NMSE max {nmse.max():.2e} (limit {limit:.0e} for {args.dtype}), "
          f"mean {nmse.mean():.2e}; top-1 token equal in {same_top}/{a.shape[0]} rows: {'same model' if ok else 'DIFFERENT'}")
    return 0 if ok else 1


def spread(values):
    v = [x for x in values if x is not None]
    if not v:
        return None
    return {"median": statistics.median(v), "min": min(v), "max": max(v), "n": len(v)}


def fmt(s, digits):
    if s is None:
        return "—"
    f = f"{{:.{digits}f}}"
    if s["n"] == 1:
        return f.format(s["median"])
    return f"{f.format(s['median'])} [{f.format(s['min'])}–{f.format(s['max'])}]"


def ratio(num, den):
    if num is None or den is None or den["median"] == 0:
        return "—"
    return f"{num['median'] / den['median']:.2f}×"


def specdec_isa(bench):
    """The cpu backend's kernel path as bench.json reports it (portable / avx2 / avx512)."""
    for where in (bench, *(bench.get("decode") or [])):
        for key in ("cpu_isa", "isa"):
            if isinstance(where, dict) and where.get(key):
                return str(where[key])
    return "unknown"


def round_values(records, model):
    """Per round: the figures of both sides for one model."""
    rounds = {}
    for rec in records:
        if rec["model"] != model:
            continue
        r = rounds.setdefault(rec["round"], {})
        if rec["side"] == "specdec":
            b = rec["bench"]
            dec = [d for d in b.get("decode", []) if d.get("backend") == "cpu"]
            ver = {v["tokens"]: v["ms"] for v in b.get("verify_cost", []) if v.get("backend") == "cpu"}
            r["s_tps"] = dec[0]["tokens_per_s"] if dec else None
            r["s_t1"] = ver.get(1)
            r["s_t8"] = ver.get(8)
            r["s_isa"] = specdec_isa(b)
            r["s_precision"] = (dec[0].get("precision") if dec else None) or b.get("precision")
        else:
            tests = rec["llama_bench"]
            tg = [t for t in tests if t.get("n_gen", 0) > 0 and t.get("n_prompt", 0) == 0]
            pp = [t for t in tests if t.get("n_prompt", 0) > 0 and t.get("n_gen", 0) == 0]
            r["l_tps"] = max(tg[0]["samples_ts"]) if tg else None
            r["l_pp"] = 1000.0 * pp[0]["n_prompt"] / max(pp[0]["samples_ts"]) if pp else None
            rows = {x["tokens"]: x for x in rec["all_rows"]["rows"]}
            r["l_t1"] = rows[1]["ms_min"] if 1 in rows else None
            r["l_t8"] = rows[8]["ms_min"] if 8 in rows else None
            r["l_sysinfo"] = rec["all_rows"].get("system_info", "")
            if tests:
                t0 = tests[0]
                r["l_build"] = f"{t0.get('build_commit', '?')} (build {t0.get('build_number', '?')})"
                r["l_type"] = t0.get("model_type", "")
                r["l_cpu_info"] = t0.get("cpu_info", "")
    for r in rounds.values():
        r["s_ratio"] = r["s_t8"] / r["s_t1"] if r.get("s_t1") and r.get("s_t8") else None
        r["l_ratio"] = r["l_t8"] / r["l_t1"] if r.get("l_t1") and r.get("l_t8") else None
    return [rounds[k] for k in sorted(rounds)]


def table(args):
    records = [json.loads(line) for line in Path(args.raw).read_text().splitlines() if line.strip()]
    presets = args.models.split(",")
    labels = args.labels.split(",")
    n_rounds = len({rec["round"] for rec in records})
    summary = {"models": {}}
    lines = []
    isa, sysinfo, build, cpu_info = set(), set(), set(), set()
    rows_md = ["| | specdec | llama.cpp | specdec speed / llama.cpp |", "|---|---|---|---|"]
    for preset, label in zip(presets, labels):
        rv = round_values(records, preset)
        if not rv:
            continue

        def col(key):
            return spread([r.get(key) for r in rv])

        s = {k: col(k) for k in ("s_tps", "s_t1", "s_t8", "s_ratio", "l_tps", "l_t1", "l_t8", "l_ratio", "l_pp")}
        summary["models"][preset] = {
            "label": label,
            "specdec": {"decode_tokens_per_s": s["s_tps"], "forward_ms_1": s["s_t1"], "forward_ms_8": s["s_t8"],
                        "ratio_8_to_1": s["s_ratio"], "precision": sorted({r.get("s_precision") for r in rv} - {None})},
            "llama.cpp": {"decode_tokens_per_s": s["l_tps"], "forward_ms_1_all_rows": s["l_t1"],
                          "forward_ms_8_all_rows": s["l_t8"], "ratio_8_to_1_all_rows": s["l_ratio"],
                          "forward_ms_8_last_row_pp8": s["l_pp"], "model_type": sorted({r.get("l_type") for r in rv} - {None})},
        }
        isa |= {r["s_isa"] for r in rv if "s_isa" in r}
        sysinfo |= {r["l_sysinfo"] for r in rv if r.get("l_sysinfo")}
        build |= {r["l_build"] for r in rv if r.get("l_build")}
        cpu_info |= {r["l_cpu_info"] for r in rv if r.get("l_cpu_info")}
        rows_md += [
            f"| {label} decode tok/s | {fmt(s['s_tps'], 2)} | {fmt(s['l_tps'], 2)} | {ratio(s['s_tps'], s['l_tps'])} |",
            f"| {label} 1-token forward ms (all rows) | {fmt(s['s_t1'], 1)} | {fmt(s['l_t1'], 1)} | {ratio(s['l_t1'], s['s_t1'])} |",
            f"| {label} 8-token forward ms (all rows) | {fmt(s['s_t8'], 1)} | {fmt(s['l_t8'], 1)} | {ratio(s['l_t8'], s['s_t8'])} |",
            f"| {label} 8-token forward ms, llama.cpp last row only (llama-bench pp8) | — | {fmt(s['l_pp'], 1)} | — |",
            f"| {label} T=8 / T=1 (all rows) | {fmt(s['s_ratio'], 2)} | {fmt(s['l_ratio'], 2)} | — |",
        ]

    try:
        commit = subprocess.run(["git", "-C", str(Path(__file__).resolve().parent), "rev-parse", "--short", "HEAD"],
                                capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        commit = "unknown"
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    lines.append(f"specdec cpu backend vs llama.cpp, {now}")
    lines.append("")
    lines.append(f"- CPU: {args.cpu} ({args.cores} cores); {args.threads} threads each; {n_rounds} round(s), "
                 f"the order of the two programs flipping every round; in a round each side's figure is its best of {args.repeat}")
    lines.append(f"- load average (1, 5, 15 min) before the rounds: {args.load[0]}; after: {args.load[1]} "
                 "(other work on the machine shows here and spreads the figures)")
    lines.append(f"- specdec: commit {commit}, cpu backend, instruction set: {', '.join(sorted(isa)) or 'unknown'}")
    lines.append(f"- llama.cpp: {args.llamacpp}, commit {', '.join(sorted(build)) or 'unknown'}; CPU backend: "
                 f"{' / '.join(sorted(sysinfo)) or 'unknown'}")
    lines.append("")
    lines += rows_md
    lines.append("")
    lines.append("Medians over rounds, [min–max]. Decode: 32 tokens after a 16-token prompt (llama-bench tg32 at depth 16). "
                 "Forward ms: one forward of T new tokens after a 16-token prompt, logits of every row (specdec bench's "
                 "verify cost; all_rows.cpp for llama.cpp); pp8 is llama-bench's 8-token prompt test at depth 16, which "
                 "asks for the last row's logits only. Speed ratio > 1: specdec faster.")
    text = "\n".join(lines)
    print(text)
    out = Path(args.out)
    (out / "results.md").write_text(text + "\n")
    summary.update({
        "date": now, "cpu": args.cpu, "cores": int(args.cores), "threads": int(args.threads), "rounds": n_rounds,
        "repeat": int(args.repeat), "load_average_before": args.load[0], "load_average_after": args.load[1],
        "specdec_commit": commit, "specdec_isa": sorted(isa),
        "llamacpp": args.llamacpp, "llamacpp_build": sorted(build), "llamacpp_system_info": sorted(sysinfo),
        "llamacpp_cpu_info": sorted(cpu_info), "raw": records,
    })
    (out / "results.json").write_text(json.dumps(summary, indent=2) + "\n")
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("check")
    c.add_argument("specdec")
    c.add_argument("llamacpp")
    c.add_argument("dtype")
    t = sub.add_parser("table")
    for name in ("raw", "out", "threads", "repeat", "cpu", "cores", "llamacpp", "models", "labels"):
        t.add_argument("--" + name, required=True)
    t.add_argument("--load", nargs=2, default=["unknown", "unknown"])
    args = ap.parse_args()
    return check(args) if args.cmd == "check" else table(args)


if __name__ == "__main__":
    sys.exit(main())
