#!/usr/bin/python3
"""Measured against predicted throughput of batched decoding (continuous batching) by concurrency.

Measures `specdec batch --backend cpu --json` at concurrency B = 1, 2, 4, 8, 16 for
  * the bundled target (models/target) with sequential decoding and every registered method with
    its bundled drafter (draft, eagle, eagle3, peagle; `specdec methods --json`), greedy, K = 4,
    on the bundled held-out prompts, and
  * a bandwidth-bound random preset (default llama-100m, F32: 0.4 GB of weights per forward, 12x
    the last-level cache) with
    sequential decoding and a random draft LM of the same vocabulary (preset llama-4m-draft),
    coupled sampling at T = 1 (random drafters accept almost nothing greedily), a 4-token prompt,
then asks `specdec simulate --batching continuous` for the same configurations (same model shapes,
the measured acceptance length, prompt and output lengths) on two hardware specs: this CPU
measured now (`--measure-cpu --threads T`) and the bundled `cpu-local`, engine `specdec-cpu`.
Also measures the target's verify forward_batch per step at B against B = 1 (B sequences ×
(K + 1) rows against one sequence's K + 1 rows) from runs with a short prompt, so prefills do not
land in the verify time, and the simulator's ratio for the same shapes.

Every point runs --repeats times (passes alternate the order of B; configurations interleave, so
drift of the machine spreads over all of them); the median and the min–max band are reported.

Writes OUT/results.json (everything), OUT/table.md (the tables) and the figure (--figure, PNG).

Usage: scripts/measure_batching.py [--out DIR] [--figure PNG] [--repeats 3] [--threads 2]
                                    [--concurrency 1,2,4,8,16] [--big-preset llama-100m] [--quick]
Environment: SPECDEC_BUILD_DIR (default build/) holds the specdec binary.
"""
import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

TINY = "tiny"   # the bundled target
BIG = "big"     # the random bandwidth-bound preset


def fail(message):
    sys.exit(f"measure_batching.py: error: {message}")


def log(message):
    print(message, file=sys.stderr, flush=True)


def run(cmd, check=True):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if check and p.returncode != 0:
        fail(f"command failed ({p.returncode}): {' '.join(cmd)}\n{p.stderr.strip()}")
    return p


def load_average():
    try:
        with open("/proc/loadavg") as f:
            return [float(x) for x in f.read().split()[:3]]
    except OSError:
        return None


def median(xs):
    return statistics.median(xs) if xs else float("nan")


# ---------------------------------------------------------------------------------------------
# Configurations

def bundled_methods(specdec):
    """The registry's methods with their bundled drafter directories (models/<dir>)."""
    methods = json.loads(run([specdec, "methods", "--json"]).stdout)["methods"]
    out = []
    for m in methods:
        d = m.get("drafter")
        out.append((m["name"], d["bundled_dir"] if d else None, d["kind"] if d else None))
    return out


def drafter_spec(method, drafter_dir, kind):
    """A simulator drafter spec (simulator/specs/drafters format) for a checkpoint directory: a
    draft LM by its config.json, a head by its layer shape (as simulator/trace_replay.cpp reads a
    recorded drafter's config)."""
    cfg_path = os.path.join(drafter_dir, "config.json")
    with open(cfg_path) as f:
        cfg = json.load(f)
    name = "bundled-" + os.path.basename(os.path.normpath(drafter_dir))
    if kind == "language_model":
        return {"name": name, "method": method, "model": os.path.abspath(cfg_path),
                "source": f"{cfg_path} (written by scripts/measure_batching.py)"}
    layer = cfg.get("transformer_layer_config", cfg)
    spec = {"name": name, "method": method, "source": f"{cfg_path} (written by scripts/measure_batching.py)",
            "num_layers": layer.get("num_hidden_layers", 1) if method == "peagle" else 1,
            "config": {k: layer[k] for k in ("hidden_size", "intermediate_size", "num_attention_heads",
                                               "num_key_value_heads", "head_dim") if k in layer}}
    if cfg.get("draft_vocab_size") and method != "eagle":
        spec["draft_vocab_size"] = cfg["draft_vocab_size"]
    if cfg.get("trained_depth"):
        spec["trained_depth"] = cfg["trained_depth"]
    return spec


def parameters(model_dir):
    """Parameter count of a Llama checkpoint's config (as reference/model/presets.cpp counts it)."""
    with open(os.path.join(model_dir, "config.json")) as f:
        c = json.load(f)
    h, i, v, layers = c["hidden_size"], c["intermediate_size"], c["vocab_size"], c["num_hidden_layers"]
    hd = c.get("head_dim") or h // c["num_attention_heads"]
    q, kv = c["num_attention_heads"] * hd, c["num_key_value_heads"] * hd
    layer = q * h * 2 + kv * h * 2 + 3 * h * i + 2 * h
    return v * h * (1 if c.get("tie_word_embeddings") else 2) + layer * layers + h


def make_configs(args, specdec, out):
    """Every (model, method) row: how to run it and how to price it."""
    models_dir = os.path.join(ROOT, "models")
    spec_dir = os.path.join(out, "specs")
    os.makedirs(spec_dir, exist_ok=True)
    configs = []
    tiny_common = {"model_key": TINY, "model": os.path.join(models_dir, "target"),
                   "model_label": "bundled target (3.25M, F32)",
                   "run_args": ["--prompt-set", "heldout", "--max-new-tokens", str(args.tokens)],
                   "max_new_tokens": args.tokens, "requests": lambda b: max(args.min_requests, 4 * b)}
    for name, bundled, kind in bundled_methods(specdec):
        c = dict(tiny_common, method=name, drafter=None, spec=None)
        if bundled:
            d = os.path.join(models_dir, bundled)
            if not os.path.isfile(os.path.join(d, "config.json")):
                log(f"skipping {name}: no bundled drafter at {d}")
                continue
            c["drafter"] = d
            spec = drafter_spec(name, d, kind)
            c["spec"] = os.path.join(spec_dir, spec["name"] + ".json")
            with open(c["spec"], "w") as f:
                json.dump(spec, f, indent=1)
        configs.append(c)
    if args.big_preset:
        big_dir = os.path.join(out, "models", args.big_preset)
        draft_dir = os.path.join(out, "models", args.big_draft_preset)
        for d, preset, seed in ((big_dir, args.big_preset, 0), (draft_dir, args.big_draft_preset, 1)):
            if not os.path.isfile(os.path.join(d, "model.safetensors")):
                os.makedirs(os.path.dirname(d), exist_ok=True)
                log(f"init-model --preset {preset} -> {d}")
                run([specdec, "init-model", "--preset", preset, "--seed", str(seed), "--out", d, "--force"])
        prompt = ",".join(str(1 + 97 * i) for i in range(args.big_prompt_len))  # <s> and a few ids
        big_common = {"model_key": BIG, "model": big_dir, "model_label": f"random {args.big_preset} ({parameters(big_dir) / 1e6:.0f}M, F32)",
                      "run_args": ["--prompt-ids", prompt, "--max-new-tokens", str(args.big_tokens),
                                   "--sampling", "coupled", "--temperature", "1"],
                      "max_new_tokens": args.big_tokens, "requests": lambda b: 2 * b}
        configs.append(dict(big_common, method="sequential", drafter=None, spec=None))
        spec = drafter_spec("draft", draft_dir, "language_model")
        spec["name"] = "random-" + args.big_draft_preset
        path = os.path.join(spec_dir, spec["name"] + ".json")
        with open(path, "w") as f:
            json.dump(spec, f, indent=1)
        configs.append(dict(big_common, method="draft", drafter=draft_dir, spec=path))
    return configs


# ---------------------------------------------------------------------------------------------
# Measuring

def batch_cmd(args, specdec, c, b, requests, extra_run_args=None):
    cmd = [specdec, "batch", "--model", c["model"], "--backend", "cpu", "--threads", str(args.threads),
           "--concurrency", str(b), "--requests", str(requests), "--ignore-eos", "--json"]
    cmd += extra_run_args if extra_run_args is not None else c["run_args"]
    if c["method"] != "sequential":
        cmd += ["--method", c["method"], "--drafter", c["drafter"], "--k", str(args.k)]
    return cmd


def measure_point(args, specdec, c, b, requests, extra_run_args=None):
    with tempfile.NamedTemporaryFile(suffix=".jsonl", delete=False) as tmp:
        per_request = tmp.name
    cmd = batch_cmd(args, specdec, c, b, requests, extra_run_args) + ["--out", per_request]
    t0 = time.time()
    s = json.loads(run(cmd).stdout)
    elapsed = time.time() - t0
    with open(per_request) as f:
        lines = [json.loads(x) for x in f if x.strip()]
    os.unlink(per_request)
    t = s["timing"]
    return {"throughput_tok_s": t["throughput_tok_s"], "tpot_mean_s": t["tpot_s"]["mean"],
            "ttft_mean_s": t["ttft_s"]["mean"], "wall_s": t["wall_s"], "process_s": elapsed,
            "steps": s["steps"], "rows_per_step": s["rows_per_step"], "sequences_per_step": s["sequences_per_step"],
            "verify_s_per_step": t["verify_s_per_step"], "draft_s_per_step": t["draft_s_per_step"],
            "acceptance_length": s["acceptance_length"], "generated_tokens": s["generated_tokens"],
            "requests": s["requests"], "prompt_len_mean": statistics.mean(x["prompt_length"] for x in lines),
            "max_in_flight_seen": s["max_in_flight_seen"], "load_average": load_average()}


def measure_all(args, specdec, configs):
    """Throughput runs: passes over every configuration, B ascending on even passes, descending on odd."""
    results = {}
    for rep in range(args.repeats):
        order = args.concurrency if rep % 2 == 0 else list(reversed(args.concurrency))
        for c in configs:
            for b in order:
                n = c["requests"](b)
                m = measure_point(args, specdec, c, b, n)
                results.setdefault((c["model_key"], c["method"], b), []).append(m)
                log(f"pass {rep + 1}/{args.repeats} {c['model_key']:<4} {c['method']:<10} B={b:<3} n={n:<3} "
                    f"{m['throughput_tok_s']:9.1f} tok/s  TPOT {1e3 * m['tpot_mean_s']:8.2f} ms  AL {m['acceptance_length']:.3f}"
                    f"  load {m['load_average'][0] if m['load_average'] else '?'}")
    return results


def measure_verify_ratio(args, specdec, configs):
    """The target's verify forward_batch per step at B against B = 1, from runs whose every request
    starts at once with a 2-token prompt (requests = B), so every step verifies B sequences and the
    one prefill step is as small as a decode step. The bundled target only: the big model's
    throughput runs already use a short prompt (their verify_s_per_step is used)."""
    results = {}
    rows = [c for c in configs if c["model_key"] == TINY and c["method"] in ("sequential", args.verify_method)]
    for rep in range(args.repeats):
        order = args.concurrency if rep % 2 == 0 else list(reversed(args.concurrency))
        for c in rows:
            for b in order:
                m = measure_point(args, specdec, c, b, b,
                                  ["--prompt-ids", "0,76", "--max-new-tokens", str(args.verify_tokens)])
                results.setdefault((c["model_key"], c["method"], b), []).append(m)
    return results


# ---------------------------------------------------------------------------------------------
# Predicting

def simulate(args, specdec, c, hardware, b, al, prompt_len, batching=True):
    cmd = [specdec, "simulate", "--model", os.path.join(c["model"], "config.json"), "--hardware", hardware,
           "--engine", "specdec-cpu", "--batch", str(b), "--prompt-len", str(max(1, round(prompt_len))),
           "--output-len", str(c["max_new_tokens"]), "--json"]
    if batching:
        cmd += ["--batching", "continuous"]
    if c["method"] != "sequential":
        cmd += ["--drafter", c["spec"], "--k", str(args.k), "--al", f"{al:.6f}"]
    p = run(cmd, check=False)
    if p.returncode != 0:
        return {"error": p.stderr.strip().splitlines()[-1] if p.stderr.strip() else f"exit {p.returncode}",
                "command": " ".join(cmd)}
    return json.loads(p.stdout)


def predict_all(args, specdec, configs, measured, hardware_specs):
    predictions = {}
    for c in configs:
        for b in args.concurrency:
            runs = measured[(c["model_key"], c["method"], b)]
            al = median([r["acceptance_length"] for r in runs])
            prompt_len = median([r["prompt_len_mean"] for r in runs])
            for hw_label, hw in hardware_specs.items():
                predictions[(c["model_key"], c["method"], b, hw_label)] = simulate(args, specdec, c, hw, b, al, prompt_len)
    return predictions


def predict_verify(args, specdec, configs, measured_verify, hardware_specs):
    out = {}
    for (model_key, method, b), runs in measured_verify.items():
        c = next(x for x in configs if x["model_key"] == model_key and x["method"] == method)
        al = median([r["acceptance_length"] for r in runs])
        for hw_label, hw in hardware_specs.items():
            out[(model_key, method, b, hw_label)] = simulate(args, specdec, c, hw, b, al, 2, batching=False)
    return out


# ---------------------------------------------------------------------------------------------
# Reporting

METHOD_LABEL = {"sequential": "sequential", "draft": "draft LM", "eagle": "EAGLE-1", "eagle3": "EAGLE-3",
                "peagle": "P-EAGLE"}


def pct(measured, predicted):
    return 100.0 * (predicted - measured) / measured


def fmt_band(values, scale=1.0, digits=1):
    vs = [v * scale for v in values]
    return f"{median(vs):.{digits}f} [{min(vs):.{digits}f}–{max(vs):.{digits}f}]"


def summarise(args, configs, measured, predictions, measured_verify, verify_pred, hw_labels):
    rows = []
    for c in configs:
        for b in args.concurrency:
            runs = measured[(c["model_key"], c["method"], b)]
            r = {"model": c["model_key"], "model_label": c["model_label"], "method": c["method"], "concurrency": b,
                 "requests": runs[0]["requests"], "runs": len(runs), "max_new_tokens": c["max_new_tokens"],
                 "prompt_len": median([x["prompt_len_mean"] for x in runs]),
                 "acceptance_length": median([x["acceptance_length"] for x in runs]),
                 "throughput_tok_s": [x["throughput_tok_s"] for x in runs],
                 "tpot_s": [x["tpot_mean_s"] for x in runs],
                 "step_s": [x["wall_s"] / x["steps"] for x in runs],
                 "verify_s_per_step": [x["verify_s_per_step"] for x in runs],
                 "draft_s_per_step": [x["draft_s_per_step"] for x in runs],
                 "sequences_per_step": median([x["sequences_per_step"] for x in runs]),
                 "rows_per_step": median([x["rows_per_step"] for x in runs]),
                 "predicted": {}}
            for hw in hw_labels:
                p = predictions[(c["model_key"], c["method"], b, hw)]
                if "error" in p:
                    r["predicted"][hw] = {"error": p["error"]}
                    continue
                bt, pr = p["batching"], p["prediction"]
                r["predicted"][hw] = {"throughput_tok_s": bt["throughput_tokens_per_s"], "tpot_s": bt["tpot_ms"] / 1e3,
                                      "step_s": bt["step_ms"] / 1e3, "prefill_per_step_s": bt["prefill_per_step_ms"] / 1e3,
                                      "draft_s": pr["draft_ms"] / 1e3, "verify_s": pr["verify_ms"] / 1e3,
                                      "overhead_s": pr["overhead_ms"] / 1e3}
            rows.append(r)
    verify_rows = []
    for (model_key, method, b), runs in sorted(measured_verify.items()):
        v = [x["verify_s_per_step"] for x in runs]
        base = median([x["verify_s_per_step"] for x in measured_verify[(model_key, method, 1)]])
        r = {"model": model_key, "method": method, "concurrency": b,
             "rows_per_sequence": 1 if method == "sequential" else args.k + 1,
             "verify_s_per_step": v, "ratio_to_b1": median(v) / base,
             "sequences_per_step": median([x["sequences_per_step"] for x in runs]),
             "rows_per_step": median([x["rows_per_step"] for x in runs]), "predicted": {}}
        for hw in hw_labels:
            p, p1 = verify_pred[(model_key, method, b, hw)], verify_pred[(model_key, method, 1, hw)]
            if "error" in p or "error" in p1:
                r["predicted"][hw] = {"error": p.get("error") or p1.get("error")}
            else:
                r["predicted"][hw] = {"verify_s": p["prediction"]["verify_ms"] / 1e3,
                                      "ratio_to_b1": p["prediction"]["verify_ms"] / p1["prediction"]["verify_ms"]}
        verify_rows.append(r)
    return rows, verify_rows


def big_verify_rows(args, rows):
    """The big model's verify per step at B against B = 1, from its throughput runs (4-token prompts)."""
    out = []
    for r in rows:
        if r["model"] != BIG:
            continue
        base = next(x for x in rows if x["model"] == BIG and x["method"] == r["method"] and x["concurrency"] == 1)
        out.append({"model": BIG, "method": r["method"], "concurrency": r["concurrency"],
                    "rows_per_sequence": 1 if r["method"] == "sequential" else args.k + 1,
                    "verify_s_per_step": r["verify_s_per_step"],
                    "ratio_to_b1": median(r["verify_s_per_step"]) / median(base["verify_s_per_step"]),
                    "sequences_per_step": r["sequences_per_step"], "rows_per_step": r["rows_per_step"],
                    "predicted": {}})
    return out


def markdown(args, rows, verify_rows, hw_labels, meta):
    main_hw = hw_labels[0]
    lines = []
    lines.append(f"Measured: `specdec batch --backend cpu --threads {args.threads}`, median of {args.repeats} runs "
                 f"[min–max]; n = requests per run. Predicted: `specdec simulate --batching continuous --engine "
                 f"specdec-cpu` on {' and '.join('`' + h + '`' for h in hw_labels)} with the measured AL. "
                 f"Error = (predicted − measured) / measured median.")
    lines.append("")
    head = ["model", "method", "B", "n", "AL", "measured tok/s"]
    for hw in hw_labels:
        head += [f"predicted tok/s ({hw})", "error"]
    head += ["measured TPOT ms", f"predicted TPOT ms ({main_hw})", "error"]
    lines.append("| " + " | ".join(head) + " |")
    lines.append("|" + "---|" * len(head))
    for r in rows:
        mt = median(r["throughput_tok_s"])
        cells = [r["model_label"], METHOD_LABEL.get(r["method"], r["method"]), str(r["concurrency"]),
                 f"{r['requests']}×{r['runs']}", f"{r['acceptance_length']:.2f}", fmt_band(r["throughput_tok_s"])]
        for hw in hw_labels:
            p = r["predicted"][hw]
            if "error" in p:
                cells += ["not priced", "—"]
            else:
                cells += [f"{p['throughput_tok_s']:.1f}", f"{pct(mt, p['throughput_tok_s']):+.0f}%"]
        p = r["predicted"][main_hw]
        mtp = median(r["tpot_s"])
        cells.append(fmt_band(r["tpot_s"], 1e3, 2))
        if "error" in p:
            cells += ["not priced", "—"]
        else:
            cells += [f"{1e3 * p['tpot_s']:.2f}", f"{pct(mtp, p['tpot_s']):+.0f}%"]
        lines.append("| " + " | ".join(cells) + " |")
    errors = sorted({r["predicted"][hw]["error"] for r in rows for hw in hw_labels if "error" in r["predicted"][hw]})
    for e in errors:
        lines.append(f"\nNot priced: {e}")
    lines.append("")
    lines.append("Where the time goes, per batched step (medians, ms): measured wall / steps, drafting and the "
                 f"target's forward_batch (prefills included); predicted (`{main_hw}`) step = draft + verify + "
                 "overheads, and the prefills the continuous model adds per step.")
    lines.append("")
    head = ["model", "method", "B", "sequences / step", "rows / step", "measured step", "measured draft",
            "measured verify", "predicted step + prefill", "predicted draft", "predicted verify", "predicted prefill"]
    lines.append("| " + " | ".join(head) + " |")
    lines.append("|" + "---|" * len(head))
    for r in rows:
        p = r["predicted"][main_hw]
        cells = [r["model_label"], METHOD_LABEL.get(r["method"], r["method"]), str(r["concurrency"]),
                 f"{r['sequences_per_step']:.2f}", f"{r['rows_per_step']:.1f}",
                 f"{1e3 * median(r['step_s']):.2f}", f"{1e3 * median(r['draft_s_per_step']):.2f}",
                 f"{1e3 * median(r['verify_s_per_step']):.2f}"]
        if "error" in p:
            cells += ["—"] * 4
        else:
            cells += [f"{1e3 * (p['step_s'] + p['prefill_per_step_s']):.2f}", f"{1e3 * p['draft_s']:.2f}",
                      f"{1e3 * p['verify_s']:.2f}", f"{1e3 * p['prefill_per_step_s']:.2f}"]
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    lines.append("Verify forward_batch at B sequences against one (same rows per sequence), measured "
                 "`verify_s_per_step` (median [min–max], ms) and its ratio to B = 1; predicted: `specdec simulate "
                 f"--batch B` verify time ratio (`{main_hw}`).")
    lines.append("")
    head = ["model", "method", "rows / sequence", "B", "rows / step", "measured verify ms", "measured ratio",
            "predicted ratio"]
    lines.append("| " + " | ".join(head) + " |")
    lines.append("|" + "---|" * len(head))
    for r in verify_rows:
        p = r["predicted"].get(main_hw)
        label = next((x["model_label"] for x in rows if x["model"] == r["model"]), r["model"])
        cells = [label, METHOD_LABEL.get(r["method"], r["method"]), str(r["rows_per_sequence"]), str(r["concurrency"]),
                 f"{r['rows_per_step']:.1f}", fmt_band(r["verify_s_per_step"], 1e3, 2), f"{r['ratio_to_b1']:.2f}",
                 "—" if not p or "error" in p else f"{p['ratio_to_b1']:.2f}"]
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    lines.append(f"Load average (1 min) during the runs: {meta['load_min']:.2f}–{meta['load_max']:.2f}; "
                 f"total time {meta['elapsed_s'] / 60:.1f} min.")
    return "\n".join(lines) + "\n"


def figure(args, rows, hw_labels, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        log("matplotlib is missing (Debian: apt-get install python3-matplotlib); no figure written")
        return False
    models = [m for m in (TINY, BIG) if any(r["model"] == m for r in rows)]
    fig, axes = plt.subplots(2, len(models), figsize=(4.6 * len(models), 6.4), squeeze=False)
    colors = {"sequential": "black", "draft": "tab:blue", "eagle": "tab:orange", "eagle3": "tab:green",
              "peagle": "tab:red"}
    styles = {hw_labels[0]: "--"}
    if len(hw_labels) > 1:
        styles[hw_labels[1]] = ":"
    for col, model in enumerate(models):
        mrows = [r for r in rows if r["model"] == model]
        for row, (key, scale, ylabel) in enumerate((("throughput_tok_s", 1.0, "throughput (tokens/s)"),
                                                    ("tpot_s", 1e3, "per-request TPOT (ms)"))):
            ax = axes[row][col]
            for method in dict.fromkeys(r["method"] for r in mrows):
                rs = sorted((r for r in mrows if r["method"] == method), key=lambda r: r["concurrency"])
                bs = [r["concurrency"] for r in rs]
                med = [median(r[key]) * scale for r in rs]
                lo = [med[i] - min(r[key]) * scale for i, r in enumerate(rs)]
                hi = [max(r[key]) * scale - med[i] for i, r in enumerate(rs)]
                color = colors.get(method, None)
                als = [r["acceptance_length"] for r in rs]
                al = f"{min(als):.2f}" if max(als) - min(als) < 0.005 else f"{min(als):.2f}–{max(als):.2f}"
                ax.errorbar(bs, med, yerr=[lo, hi], marker="o", ms=4, lw=1.4, capsize=2, color=color,
                            label=f"{METHOD_LABEL.get(method, method)} (AL {al})")
                for hw, ls in styles.items():
                    pts = [(r["concurrency"], r["predicted"][hw][key] * scale) for r in rs
                           if "error" not in r["predicted"][hw]]
                    if pts:
                        ax.plot([p[0] for p in pts], [p[1] for p in pts], ls=ls, lw=1.1, color=color, alpha=0.8)
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            ax.set_xticks(args.concurrency)
            ax.set_xticklabels([str(b) for b in args.concurrency])
            ax.grid(alpha=0.3, which="both")
            ax.set_ylabel(ylabel)
            if row == 0:
                ax.set_title(mrows[0]["model_label"], fontsize=10)
                ax.legend(fontsize=7, loc="best")
            else:
                ax.set_xlabel("concurrency B")
    handles = [plt.Line2D([], [], color="gray", marker="o", lw=1.4, label="measured (median, bar: min–max)")]
    handles += [plt.Line2D([], [], color="gray", ls=ls, lw=1.1, label=f"predicted ({hw})") for hw, ls in styles.items()]
    fig.legend(handles=handles, loc="lower center", ncol=len(handles), fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0.04, 1, 1))
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    tmp = path + ".tmp.png"
    fig.savefig(tmp, dpi=args.dpi)
    os.replace(tmp, path)
    return True


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    build = os.environ.get("SPECDEC_BUILD_DIR", os.path.join(ROOT, "build"))
    p.add_argument("--out", default=os.path.join(build, "measure-batching"))
    p.add_argument("--figure", default=None, help="PNG to write (default OUT/batching_throughput.png)")
    p.add_argument("--table", default=None, help="also copy the markdown table here")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--concurrency", default="1,2,4,8,16")
    p.add_argument("--k", type=int, default=4)
    p.add_argument("--tokens", type=int, default=64, help="new tokens per request, bundled target")
    p.add_argument("--min-requests", type=int, default=16, help="requests per run: max(this, 4·B), bundled target")
    p.add_argument("--big-preset", default="llama-100m",
                   help="random bandwidth-bound preset ('' to skip); llama-0.5b is 5x slower to load and run")
    p.add_argument("--big-draft-preset", default="llama-4m-draft")
    p.add_argument("--big-tokens", type=int, default=32, help="new tokens per request, big preset (requests: 2·B)")
    p.add_argument("--big-prompt-len", type=int, default=4)
    p.add_argument("--verify-method", default="eagle", help="speculative method of the verify-ratio runs")
    p.add_argument("--verify-tokens", type=int, default=32)
    p.add_argument("--measure-cpu", default="full", choices=["full", "quick", "none"],
                   help="measure this CPU now for a second hardware spec (none: bundled cpu-local only)")
    p.add_argument("--dpi", type=int, default=90)
    p.add_argument("--quick", action="store_true", help="one run per point, B = 1,4, few tokens (a smoke test)")
    p.add_argument("--from-results", metavar="RESULTS_JSON",
                   help="measure nothing: rewrite the table and the figure from an earlier run's results.json")
    args = p.parse_args()
    if args.from_results:
        with open(args.from_results) as f:
            saved = json.load(f)
        meta = saved["meta"]
        args.threads, args.repeats, args.concurrency, args.k = meta["threads"], meta["repeats"], meta["concurrency"], meta["k"]
        hw_labels = list(meta["hardware"])
        table = markdown(args, saved["rows"], saved["verify"], hw_labels, meta)
        out_dir = os.path.dirname(os.path.abspath(args.from_results))
        with open(os.path.join(out_dir, "table.md"), "w") as f:
            f.write(table)
        if args.table:
            with open(args.table, "w") as f:
                f.write(table)
        figure(args, saved["rows"], hw_labels, args.figure or os.path.join(out_dir, "batching_throughput.png"))
        print(table)
        return
    args.concurrency = [int(x) for x in args.concurrency.split(",")]
    if args.quick:
        args.repeats, args.concurrency, args.tokens, args.min_requests = 1, [1, 4], 16, 4
        args.big_tokens, args.verify_tokens, args.measure_cpu = 4, 8, "quick"
    if 1 not in args.concurrency:
        fail("--concurrency must include 1 (the verify ratio is taken against B = 1)")
    specdec = os.path.join(build, "specdec")
    if not os.access(specdec, os.X_OK):
        fail(f"{specdec} not found (build it: cmake --build {build} --target specdec, or set SPECDEC_BUILD_DIR)")
    os.makedirs(args.out, exist_ok=True)
    figure_path = args.figure or os.path.join(args.out, "batching_throughput.png")
    start = time.time()
    log(f"load average at start: {load_average()}")

    configs = make_configs(args, specdec, args.out)
    hardware_specs = {}
    if args.measure_cpu != "none":
        spec = os.path.join(args.out, "cpu-now.json")
        log(f"measuring this CPU ({args.threads} threads) -> {spec}")
        cmd = [specdec, "simulate", "--measure-cpu", spec, "--threads", str(args.threads), "--name", "cpu-now"]
        run(cmd + (["--quick"] if args.measure_cpu == "quick" else []))
        hardware_specs["cpu-now"] = spec
    hardware_specs["cpu-local"] = "cpu-local"
    hw_labels = list(hardware_specs)

    measured = measure_all(args, specdec, configs)
    log("verify-ratio runs")
    measured_verify = measure_verify_ratio(args, specdec, configs)
    log("predicting")
    predictions = predict_all(args, specdec, configs, measured, hardware_specs)
    verify_pred = predict_verify(args, specdec, configs, measured_verify, hardware_specs)
    rows, verify_rows = summarise(args, configs, measured, predictions, measured_verify, verify_pred, hw_labels)
    # The big model's ratios come from its throughput runs (short prompts); price them the same way.
    big_rows = big_verify_rows(args, rows)
    for r in big_rows:
        c = next(x for x in configs if x["model_key"] == BIG and x["method"] == r["method"])
        for hw_label, hw in hardware_specs.items():
            al = next(x["acceptance_length"] for x in rows if x["model"] == BIG and x["method"] == r["method"])
            pb = simulate(args, specdec, c, hw, r["concurrency"], al, args.big_prompt_len, batching=False)
            p1 = simulate(args, specdec, c, hw, 1, al, args.big_prompt_len, batching=False)
            if "error" in pb or "error" in p1:
                r["predicted"][hw_label] = {"error": pb.get("error") or p1.get("error")}
            else:
                r["predicted"][hw_label] = {"verify_s": pb["prediction"]["verify_ms"] / 1e3,
                                            "ratio_to_b1": pb["prediction"]["verify_ms"] / p1["prediction"]["verify_ms"]}
    verify_rows += big_rows

    loads = [m["load_average"][0] for runs in list(measured.values()) + list(measured_verify.values())
             for m in runs if m["load_average"]]
    meta = {"elapsed_s": time.time() - start, "load_min": min(loads) if loads else float("nan"),
            "load_max": max(loads) if loads else float("nan"), "threads": args.threads, "repeats": args.repeats,
            "concurrency": args.concurrency, "k": args.k, "hardware": hardware_specs,
            "commands": {"example_run": " ".join(batch_cmd(args, specdec, configs[-1], 4, configs[-1]["requests"](4)))}}
    if "cpu-now" in hardware_specs:
        with open(hardware_specs["cpu-now"]) as f:
            hw = json.load(f)
        meta["cpu_now"] = {"bandwidth_bytes_per_s": hw["memory_bandwidth_bytes_per_s"],
                           "fp32_flops_per_s": hw["peak_flops_per_s"]["fp32"]}
    table = markdown(args, rows, verify_rows, hw_labels, meta)
    with open(os.path.join(args.out, "results.json"), "w") as f:
        json.dump({"meta": meta, "rows": rows, "verify": verify_rows,
                   "raw": [{"model": k[0], "method": k[1], "concurrency": k[2], "runs": v} for k, v in measured.items()],
                   "raw_verify": [{"model": k[0], "method": k[1], "concurrency": k[2], "runs": v}
                                  for k, v in measured_verify.items()]}, f, indent=1)
    with open(os.path.join(args.out, "table.md"), "w") as f:
        f.write(table)
    if args.table:
        with open(args.table, "w") as f:
            f.write(table)
    drew = figure(args, rows, hw_labels, figure_path)
    print(table)
    log(f"wrote {args.out}/results.json, {args.out}/table.md" + (f", {figure_path}" if drew else "") +
        f" in {meta['elapsed_s'] / 60:.1f} min")


if __name__ == "__main__":
    main()
