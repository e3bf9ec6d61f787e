"""The training corpus: two public-domain domains that Debian ships.

prose: the King James Bible, as printed by `bible -f Gen1:1-Rev22:21` (packages bible-kjv and
       bible-kjv-text); the verse references are stripped, one document per chapter, one verse per
       line.
code:  the top-level modules of the Python standard library (/usr/lib/python3.X/*.py from Debian's
       python3.X-minimal / libpython3.X-stdlib), one document per file, sorted by file name.

Held-out split: every 20th document of each domain (chapters 0, 20, 40, ... in canonical order;
files 0, 20, 40, ... in name order) is held out; the rest is training data. Tokens are UTF-8
bytes shifted by 3 (specdec's byte vocabulary: <bos> 0, <eos> 1, <pad> 2); each document is
<bos> text <eos> (specdec generate starts prompts with <bos>).
"""
import hashlib
import json
import os
import re
import subprocess
import sys
import sysconfig

import numpy as np

BYTE_OFFSET = 3
BOS, EOS, PAD = 0, 1, 2
VOCAB_SIZE = 256 + BYTE_OFFSET
HELD_OUT_EVERY = 20
DOMAINS = ("prose", "code")
_VERSE = re.compile(r"^(\S+?)(\d+):(\d+) (.*)$")


def bible_chapters():
    try:
        out = subprocess.run(["bible", "-f", "Gen1:1-Rev22:21"], check=True, capture_output=True, text=True).stdout
    except FileNotFoundError:
        sys.exit("corpus: the `bible` program is missing: install the Debian packages bible-kjv bible-kjv-text")
    chapters, current, key = [], [], None
    for line in out.splitlines():
        m = _VERSE.match(line)
        if not m:
            if line.strip() and current:  # a continuation line of the previous verse
                current[-1] += " " + line.strip()
            continue
        k = (m.group(1), m.group(2))
        if k != key and current:
            chapters.append("\n".join(current) + "\n")
            current = []
        key = k
        current.append(m.group(4).strip())
    if current:
        chapters.append("\n".join(current) + "\n")
    if len(chapters) != 1189:
        sys.exit(f"corpus: expected the 1189 chapters of the KJV from `bible`, got {len(chapters)}")
    return chapters


def stdlib_dir():
    return sysconfig.get_paths()["stdlib"]


def stdlib_files():
    d = stdlib_dir()
    names = sorted(n for n in os.listdir(d) if n.endswith(".py"))
    if len(names) < 100:
        sys.exit(f"corpus: expected the Python standard library in {d}, found {len(names)} .py files")
    return [(n, open(os.path.join(d, n), encoding="utf-8", errors="replace").read()) for n in names]


def documents(domain):
    if domain == "prose":
        return bible_chapters()
    if domain == "code":
        return [text for _, text in stdlib_files()]
    raise ValueError(f"unknown domain {domain!r}; expected one of {DOMAINS}")


def split(docs):
    held = [d for i, d in enumerate(docs) if i % HELD_OUT_EVERY == 0]
    train = [d for i, d in enumerate(docs) if i % HELD_OUT_EVERY != 0]
    return train, held


def encode(text):
    return [b + BYTE_OFFSET for b in text.encode("utf-8")]


def decode(ids):
    return bytes(i - BYTE_OFFSET for i in ids if i >= BYTE_OFFSET).decode("utf-8", errors="replace")


def stream(docs):
    """One uint16 token stream: <bos> document <eos>, for every document."""
    out = []
    for d in docs:
        out.append(BOS)
        out.extend(encode(d))
        out.append(EOS)
    return np.asarray(out, dtype=np.uint16)


def build(out_dir):
    """Writes {domain}_{train,heldout}.npy and corpus.json (sizes, sha256, provenance) into
    out_dir; returns the manifest. Reuses files that are already there and match."""
    os.makedirs(out_dir, exist_ok=True)
    manifest = {"byte_offset": BYTE_OFFSET, "held_out_every": HELD_OUT_EVERY, "domains": {},
                "sources": {"prose": "bible -f Gen1:1-Rev22:21 (Debian bible-kjv, bible-kjv-text)",
                            "code": f"{stdlib_dir()}/*.py (Python {sys.version.split()[0]})"}}
    for domain in DOMAINS:
        train, held = split(documents(domain))
        entry = {}
        for part, docs in (("train", train), ("heldout", held)):
            tokens = stream(docs)
            path = os.path.join(out_dir, f"{domain}_{part}.npy")
            tmp = path + ".tmp.npy"
            np.save(tmp, tokens)
            os.replace(tmp, path)
            entry[part] = {"documents": len(docs), "tokens": int(tokens.size),
                           "sha256": hashlib.sha256(tokens.tobytes()).hexdigest()}
        manifest["domains"][domain] = entry
    tmp = os.path.join(out_dir, "corpus.json.tmp")
    with open(tmp, "w") as f:
        json.dump(manifest, f, indent=2)
    os.replace(tmp, os.path.join(out_dir, "corpus.json"))
    return manifest


def prompts(per_domain=8, max_chars=160):
    """Held-out prompts, deterministic: prose, the opening verses of held-out chapters; code, a
    held-out file from a top-level `def ` line on. Each is cut at a line or word boundary below
    max_chars characters and the text a model should continue."""
    out = {}
    for domain in DOMAINS:
        _, held = split(documents(domain))
        chosen = []
        for doc in held:
            if domain == "code":
                starts = [m.start() for m in re.finditer(r"^def ", doc, flags=re.M)]
                if not starts:
                    continue
                doc = doc[starts[len(starts) // 2]:]
            text = doc[:max_chars]
            cut = max(text.rfind("\n"), text.rfind(" "))
            chosen.append(text[:cut + 1] if cut > max_chars // 2 else text)
            if len(chosen) == per_domain:
                break
        out[domain] = chosen
    return out


def load(out_dir, domain, part):
    path = os.path.join(out_dir, f"{domain}_{part}.npy")
    if not os.path.exists(path):
        sys.exit(f"corpus: {path} is missing; run `train.py corpus --data {out_dir}` first")
    return np.load(path)


if __name__ == "__main__":
    print(json.dumps(build(sys.argv[1] if len(sys.argv) > 1 else "data"), indent=2))
