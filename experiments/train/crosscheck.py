#!/usr/bin/python3
"""PyTorch-computed outputs of every bundled model on held-out sequences, for the C++ reference
to match (tests/models). Writes one small HDF5 file:

  /sequences/tokens            int32 (S, T)    held-out windows, one per domain (attr domains)
  /{target,draft}/logits       f32 (S*T, V)
  /{target,draft}/hidden       f32 (S*(L+1)*T, H)   Hugging Face's output_hidden_states, row
                                                    (s*(L+1) + l)*T + t
  /{eagle1,eagle3}/logits      f32 (S*N, Vd)   teacher-forced first step, N = T-1 pairs
                                               (target feature f_i, token t_{i+1}) at position i
  /{eagle1,eagle3}/hidden      f32 (S*N, H)    the layer output before the final norm
  /peagle/tokens, /positions   int32 (S, N+K-1) the N real pairs, then K-1 mask slots
  /peagle/logits, /hidden      f32 (S*(N+K-1), Vd), (S*(N+K-1), H)

Every array is 2-D (row-major), rows in the order given.

Features come from the PyTorch target (the C++ test recomputes them with its own target, which
is checked first). Usage: crosscheck.py --models models --data DATA --out FILE [--seq 48 --k 8]
"""
import argparse
import json
import os
import sys

import h5py
import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import corpus  # noqa: E402
import export  # noqa: E402
import heads  # noqa: E402
from llama import causal_mask  # noqa: E402


def load_head(kind, model_dir, target):
    c = json.load(open(os.path.join(model_dir, "config.json")))
    head = heads.EagleHead(kind, target, c["num_hidden_layers"] if kind == "peagle" else 1)
    tensors = export.read_safetensors(os.path.join(model_dir, "model.safetensors"))
    own = heads.head_tensors(kind, head)
    with torch.no_grad():
        for name, p in own.items():
            if name == "mask_hidden":
                head.mask_hidden.copy_(tensors[name].reshape(-1))
            else:
                p.copy_(tensors[name])
    head.eval()
    return head


def flat(t):
    """Any (..., C) tensor as a 2-D (rows, C) array."""
    return t.reshape(-1, t.shape[-1]).numpy()


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--models", required=True)
    p.add_argument("--data", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--seq", type=int, default=48)
    p.add_argument("--k", type=int, default=8)
    args = p.parse_args()
    torch.set_num_threads(1)
    seqs = np.stack([corpus.load(args.data, d, "heldout")[:args.seq].astype(np.int64) for d in corpus.DOMAINS])
    tokens = torch.from_numpy(seqs)
    S, T = tokens.shape
    N = T - 1
    tmp = args.out + ".tmp"
    with torch.no_grad(), h5py.File(tmp, "w") as f:
        f.attrs["description"] = "PyTorch (fp32) outputs of the bundled models on held-out windows"
        g = f.create_group("sequences")
        g.create_dataset("tokens", data=seqs.astype(np.int32))
        g.attrs["domains"] = ",".join(corpus.DOMAINS)
        for name in ("target", "draft"):
            _, model = export.load_llama(os.path.join(args.models, name))
            model.eval()
            logits, hidden = model(tokens)
            g = f.create_group(name)
            g.create_dataset("logits", data=flat(logits))
            g.create_dataset("hidden", data=flat(torch.stack(hidden, dim=1)))
            if name == "target":
                target, target_hidden = model, hidden
        positions = torch.arange(N)[None].expand(S, N)
        for kind in ("eagle1", "eagle3", "peagle"):
            head = load_head(kind, os.path.join(args.models, kind), target)
            feats = head.features(target_hidden)[:, :N]
            g = f.create_group(kind)
            if kind != "peagle":
                logits, out, _ = head(tokens[:, 1:], feats, False, positions, causal_mask(N))
            else:
                K = args.k
                toks = torch.cat([tokens[:, 1:], torch.full((S, K - 1), heads.MASK_TOKEN)], dim=1)
                pos = torch.arange(N + K - 1)[None].expand(S, -1)
                h = torch.cat([head.fc(feats), head.fc(head.mask_hidden).expand(S, K - 1, -1)], dim=1)
                logits, out, _ = head(toks, h, True, pos, causal_mask(N + K - 1))
                g.create_dataset("tokens", data=toks.numpy().astype(np.int32))
                g.create_dataset("positions", data=pos.numpy().astype(np.int32))
            g.create_dataset("logits", data=flat(logits))
            g.create_dataset("hidden", data=flat(out))
    os.replace(tmp, args.out)
    print(f"wrote {args.out} ({os.path.getsize(args.out)} bytes)")


if __name__ == "__main__":
    main()
