"""Shared pieces of the training recipes: batches from the corpus, the optimiser schedule, the
loss log, held-out evaluation and the model card."""
import csv
import io
import math
import os
import time

import numpy as np
import torch

import corpus


class Batches:
    """Random windows of seq+1 tokens, half from each domain's training stream (fixed seed)."""

    def __init__(self, data_dir, seq, batch, seed, part="train", limit_tokens=None):
        self.streams = [corpus.load(data_dir, d, part) for d in corpus.DOMAINS]
        if limit_tokens:  # the smoke test trains on a tiny slice
            self.streams = [s[:limit_tokens] for s in self.streams]
        for d, s in zip(corpus.DOMAINS, self.streams):
            if s.size <= seq + 1:
                raise SystemExit(f"train: the {d} {part} stream has {s.size} tokens, fewer than a window of {seq + 1}")
        self.seq, self.batch = seq, batch
        self.rng = np.random.default_rng(seed)

    def next(self):
        rows = []
        for b in range(self.batch):
            s = self.streams[b % len(self.streams)]
            start = int(self.rng.integers(0, s.size - self.seq - 1))
            rows.append(s[start:start + self.seq + 1].astype(np.int64))
        return torch.from_numpy(np.stack(rows))


def heldout_windows(data_dir, domain, seq, count):
    """`count` evenly spaced windows of seq+1 tokens from a domain's held-out stream."""
    s = corpus.load(data_dir, domain, "heldout")
    starts = np.linspace(0, s.size - seq - 2, count).astype(np.int64)
    return torch.from_numpy(np.stack([s[a:a + seq + 1].astype(np.int64) for a in starts]))


def lr_at(step, steps, lr, warmup):
    if step < warmup:
        return lr * (step + 1) / warmup
    progress = (step - warmup) / max(1, steps - warmup)
    return lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * progress)))


def set_lr(opt, value):
    for g in opt.param_groups:
        g["lr"] = value


class LossLog:
    """One CSV row per logged step (step, lr, the losses, elapsed seconds), echoed to stdout and
    saved beside the model as train_log.csv."""

    def __init__(self, names):
        self.names = names
        self.start = time.time()
        self.rows = [["step", "lr"] + names + ["seconds"]]

    def log(self, step, lr, values):
        elapsed = time.time() - self.start
        self.rows.append([step, f"{lr:.6g}"] + [f"{v:.5f}" for v in values] + [f"{elapsed:.1f}"])
        print(f"step {step:5d} lr {lr:.2e} " + " ".join(f"{n} {v:.4f}" for n, v in zip(self.names, values))
              + f" ({elapsed:.0f} s)", flush=True)

    def csv_text(self):
        buf = io.StringIO()
        csv.writer(buf, lineterminator="\n").writerows(self.rows)
        return buf.getvalue()

    def seconds(self):
        return time.time() - self.start


def set_threads(n):
    torch.set_num_threads(max(1, n))


def card(title, lines, table=None):
    """A model card in Markdown: a title, bullet lines, and an optional (header, rows) table."""
    out = [f"# {title}", ""] + [f"- {line}" for line in lines] + [""]
    if table:
        header, rows = table
        out.append("| " + " | ".join(header) + " |")
        out.append("|" + "---|" * len(header))
        out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
        out.append("")
    return "\n".join(out)
