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
  /mtp/logits, /hidden         f32 (S*N, V), (S*N, H)   depth 1: (target feature f_i, token t_{i+1}) at
                                               position i; hidden = the module's output before
                                               shared_head.norm, row s*N + i
  /mtp/depth2_logits, /depth2_hidden  f32 (S*(N-1), V), (S*(N-1), H)   depth 2: feature = /mtp/hidden
                                               at position i, token t_{i+2}, position i, causal over
                                               the N-1 depth-2 positions; row s*(N-1) + i
  /medusa/logits, /hidden      f32 (S*M*T, V), (S*M*T, H)   head k (M heads) on the target's final
                                               hidden state at every position t; hidden = head k's
                                               ResBlock output; row (s*M + k)*T + t

Every array is 2-D (row-major), rows in the order given. The mtp and medusa groups are written
when models/mtp and models/medusa exist.

Features come from the PyTorch target (the C++ test recomputes them with its own target, which
is checked first). Usage: crosscheck.py --models models --data DATA --out FILE [--seq 48 --k 8]
[--only GROUP,...]: --only rewrites just those groups of an existing FILE, every other dataset
left byte for byte as it is (PyTorch's fp32 results differ in the last bits between CPUs).
"""
import argparse
import json
import os
import shutil
import sys

import h5py
import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import corpus  # noqa: E402
import export  # noqa: E402
import heads  # noqa: E402
import mtp_medusa  # noqa: E402
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


def multitoken_groups(f, models, tokens, target_hidden, target, only):
    """The mtp and medusa groups (when their directories exist and `only` allows them)."""
    S, T = tokens.shape
    N = T - 1
    final = target_hidden[-1]
    if "mtp" in only and os.path.isdir(os.path.join(models, "mtp")):
        module = mtp_medusa.load_mtp(os.path.join(models, "mtp"), target)
        (logits, out), (logits2, out2) = module.unroll(tokens, final, 2)
        g = f.create_group("mtp")
        g.create_dataset("logits", data=flat(logits))
        g.create_dataset("hidden", data=flat(out))
        g.create_dataset("depth2_logits", data=flat(logits2))
        g.create_dataset("depth2_hidden", data=flat(out2))
    if "medusa" in only and os.path.isdir(os.path.join(models, "medusa")):
        outs = mtp_medusa.load_medusa(os.path.join(models, "medusa"), target)(final)
        g = f.create_group("medusa")
        g.create_dataset("logits", data=flat(torch.stack([lg for lg, _ in outs], dim=1)))  # (S, M, T, V)
        g.create_dataset("hidden", data=flat(torch.stack([x for _, x in outs], dim=1)))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--models", required=True)
    p.add_argument("--data", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--seq", type=int, default=48)
    p.add_argument("--k", type=int, default=8)
    p.add_argument("--only", help="comma-separated groups (mtp, medusa) to rewrite in an existing --out file")
    args = p.parse_args()
    torch.set_num_threads(1)
    seqs = np.stack([corpus.load(args.data, d, "heldout")[:args.seq].astype(np.int64) for d in corpus.DOMAINS])
    tokens = torch.from_numpy(seqs)
    S, T = tokens.shape
    N = T - 1
    tmp = args.out + ".tmp"
    if args.only:
        only = set(args.only.split(","))
        if not only <= {"mtp", "medusa"}:
            p.error(f"--only takes mtp and/or medusa, not {sorted(only - {'mtp', 'medusa'})}")
        shutil.copyfile(args.out, tmp)
        with torch.no_grad(), h5py.File(tmp, "r+") as f:
            stored = f["sequences/tokens"][()]
            if not np.array_equal(stored, seqs.astype(np.int32)):
                sys.exit(f"crosscheck: {args.out} holds other windows than --seq {args.seq} of this corpus")
            for name in only:
                if name in f:
                    del f[name]
            _, target = export.load_llama(os.path.join(args.models, "target"))
            target.eval()
            _, target_hidden = target(tokens)
            multitoken_groups(f, args.models, tokens, target_hidden, target, only)
        os.replace(tmp, args.out)
        print(f"rewrote {sorted(only)} in {args.out} ({os.path.getsize(args.out)} bytes)")
        return
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
        multitoken_groups(f, args.models, tokens, target_hidden, target, {"mtp", "medusa"})
    os.replace(tmp, args.out)
    print(f"wrote {args.out} ({os.path.getsize(args.out)} bytes)")


if __name__ == "__main__":
    main()
