#!/usr/bin/python3
"""Training recipes for specdec's bundled models (run with Debian's /usr/bin/python3 and
python3-torch on the CPU). One command per model, fixed seeds, losses logged to train_log.csv in
the model directory, a model card (README.md) with data, parameters, steps, final loss, held-out
perplexity and wall time:

  train.py corpus  --data DATA                              # extract the two-domain corpus
  train.py prompts --data DATA --out FILE.json              # held-out prompts of both domains
  train.py target  --data DATA --out models/target          # the target LM
  train.py draft   --data DATA --out models/draft           # the draft LM (several times smaller)
  train.py eagle1  --data DATA --target models/target --out models/eagle1
  train.py eagle3  --data DATA --target models/target --out models/eagle3
  train.py peagle  --data DATA --target models/target --out models/peagle
  train.py mtp     --data DATA --target models/target --out models/mtp
  train.py medusa  --data DATA --target models/target --out models/medusa

`--smoke` shrinks everything (a tiny slice of the corpus, a few steps, a small model) so a test
can run every recipe end to end in seconds; the full recipes are what scripts/train_models.sh runs.
"""
import argparse
import json
import math
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import common  # noqa: E402
import corpus  # noqa: E402
import export  # noqa: E402
from llama import LlamaLM, LlamaShape, parameter_count  # noqa: E402

TARGET = LlamaShape(hidden_size=192, intermediate_size=512, num_hidden_layers=8, num_attention_heads=6,
                    num_key_value_heads=2)
DRAFT = LlamaShape(hidden_size=96, intermediate_size=256, num_hidden_layers=2, num_attention_heads=3,
                   num_key_value_heads=1)
SMOKE = dict(hidden_size=32, intermediate_size=64, num_attention_heads=2, num_key_value_heads=1)


def lm_shape(base, smoke):
    if not smoke:
        return base
    d = base.to_dict()
    d.update(SMOKE)
    return LlamaShape(**d)


@torch.no_grad()
def heldout_loss(model, data_dir, seq, windows):
    """Mean next-token cross-entropy (nats per byte) on each domain's held-out windows."""
    model.eval()
    out = {}
    for domain in corpus.DOMAINS:
        x = common.heldout_windows(data_dir, domain, seq, windows)
        logits, _ = model(x[:, :-1])
        out[domain] = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), x[:, 1:].reshape(-1)).item()
    model.train()
    return out


def train_lm(args, base_shape, title, role):
    torch.manual_seed(args.seed)
    shape = lm_shape(base_shape, args.smoke)
    model = LlamaLM(shape)
    batches = common.Batches(args.data, args.seq, args.batch, args.seed, limit_tokens=args.limit_tokens)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, betas=(0.9, 0.95), weight_decay=0.1)
    log = common.LossLog(["loss"])
    running = None
    for step in range(args.steps):
        lr = common.lr_at(step, args.steps, args.lr, args.warmup)
        common.set_lr(opt, lr)
        x = batches.next()
        logits, _ = model(x[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, shape.vocab_size), x[:, 1:].reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        running = loss.item() if running is None else 0.95 * running + 0.05 * loss.item()
        if step % args.log_every == 0 or step == args.steps - 1:
            log.log(step, lr, [running])
    seconds = log.seconds()
    held = heldout_loss(model, args.data, args.seq, args.eval_windows)
    lines = [
        f"Role: {role}. Llama architecture, byte vocabulary (vocab.json), {parameter_count(model):,} parameters:"
        f" hidden {shape.hidden_size}, {shape.num_hidden_layers} layers, {shape.num_attention_heads} heads,"
        f" {shape.num_key_value_heads} KV heads, intermediate {shape.intermediate_size}, tied embeddings: {shape.tie_word_embeddings}.",
        "Data: King James Bible (prose) and the Python standard library (code), half of each batch from each;"
        " every 20th document held out (experiments/train/corpus.py).",
        f"Training: {args.steps} steps of {args.batch} x {args.seq} tokens, AdamW (lr {args.lr}, betas 0.9/0.95,"
        f" weight decay 0.1, warmup {args.warmup}, cosine to 10%), gradient clip 1.0, seed {args.seed}, fp32 on the CPU"
        f" ({args.threads} threads).",
        f"Final training loss (EMA): {running:.4f} nats/byte. Wall time: {seconds / 60:.1f} min.",
        "Held-out perplexity per byte: " + ", ".join(
            f"{d} {math.exp(v):.3f} ({v:.4f} nats, {v / math.log(2):.3f} bits/byte)" for d, v in held.items()) + ".",
        f"Reproduce: `/usr/bin/python3 experiments/train/train.py {args.command} --data DATA --out DIR`"
        " (scripts/train_models.sh runs every recipe).",
    ]
    config = export.llama_config(shape)
    export.write_model_dir(args.out, config, export.llama_tensors(model), common.card(title, lines),
                           {"vocab.json": export.vocab_json(), "train_log.csv": log.csv_text()})
    summary = {"parameters": parameter_count(model), "steps": args.steps, "final_loss": running,
               "heldout_nats_per_byte": held, "seconds": seconds}
    print(json.dumps(summary), flush=True)
    return summary


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("command", choices=["corpus", "prompts", "target", "draft", "eagle1", "eagle3", "peagle",
                                          "mtp", "medusa"])
    p.add_argument("--data", required=True, help="corpus directory (written by `corpus`)")
    p.add_argument("--out", help="model directory to write")
    p.add_argument("--target", help="trained target model directory (heads)")
    p.add_argument("--steps", type=int)
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--lr", type=float)
    p.add_argument("--warmup", type=int, default=50)
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--log-every", type=int, default=25)
    p.add_argument("--eval-windows", type=int, default=64)
    p.add_argument("--smoke", action="store_true", help="tiny slice, few steps, small shapes (tests)")
    p.add_argument("--limit-tokens", type=int, help="train on only the first N tokens of each domain")
    p.add_argument("--depth", type=int, help="P-EAGLE: parallel depths trained (default 8); EAGLE-3: unrolled steps;"
                   " MTP: depths of teacher forcing (default 3); Medusa: heads (default 4)")
    p.add_argument("--layers", type=int, help="P-EAGLE: drafter layers (default 2)")
    args = p.parse_args(argv)
    common.set_threads(args.threads)
    if args.command == "corpus":
        print(json.dumps(corpus.build(args.data), indent=2))
        return
    if not args.out:
        p.error(f"{args.command} needs --out")
    if args.command == "prompts":
        with open(args.out + ".tmp", "w") as f:
            json.dump(corpus.prompts(), f, indent=2)
            f.write("\n")
        os.replace(args.out + ".tmp", args.out)
        return
    defaults = {"target": (1500, 3e-3), "draft": (1000, 3e-3), "eagle1": (500, 2e-3), "eagle3": (400, 2e-3),
                "peagle": (500, 2e-3), "mtp": (800, 2e-3), "medusa": (1500, 1e-3)}[args.command]
    if args.smoke:
        defaults = (4, defaults[1])
        args.batch, args.seq, args.eval_windows, args.warmup = 2, 32, 2, 1
        args.limit_tokens = args.limit_tokens or 20000
    args.steps = args.steps or defaults[0]
    args.lr = args.lr or defaults[1]
    if args.command == "target":
        train_lm(args, TARGET, "specdec target LM (byte-level Llama, prose + code)", "target model")
    elif args.command == "draft":
        train_lm(args, DRAFT, "specdec draft LM (byte-level Llama, prose + code)", "draft model for draft-model speculation")
    else:
        if not args.target:
            p.error(f"{args.command} needs --target (the trained target directory)")
        if args.command in ("mtp", "medusa"):
            import mtp_medusa
            mtp_medusa.train(args)
        else:
            import heads
            heads.train_head(args)


if __name__ == "__main__":
    main()
