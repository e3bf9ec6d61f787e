#!/usr/bin/python3
"""Held-out prompts whose natural continuation copies the prompt: the cases where draft-free
speculation (n-gram prompt lookup, suffix decoding) wins. Built from held-out documents only
(corpus.split), deterministic (no randomness), every prompt at most MAX_BYTES bytes of UTF-8 so
that <bos> + prompt + 256 new tokens fit the bundled models' 2048-token context.

  prose-repeat:  the opening verses of a held-out chapter, a blank line, then the opening words
                 of its first verse again; the continuation re-reads the passage.
  code-repeat:   a function of a held-out stdlib module, a blank line, then the same function's
                 def line with the function renamed (`name` -> `name_v2`) up to its "("; the
                 continuation copies the parameters and the body.
  prose-recall:  the opening verses of another held-out chapter, a blank line, then the opening
                 words of one verse from the passage's first half (enough words to be unique in
                 the passage); the continuation finishes that verse, and the ones after it, from
                 the passage.

Usage: context_prompts.py [--out experiments/train/context_prompts.json]
"""
import argparse
import json
import os
import re
import sys
import textwrap

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import corpus  # noqa: E402

PER_CATEGORY = 8
MAX_BYTES = 1500
PASSAGE_BYTES = 1300     # the passage of a prose prompt (whole verses)
MIN_PASSAGE_BYTES = 700  # shorter chapters are skipped
MIN_FUNCTION_BYTES = 300
MAX_FUNCTION_BYTES = 1150  # the function is given once in full and its def line again
RESTART_WORDS = 4        # opening words of the first verse in prose-repeat
MIN_CUE_WORDS = 3        # prose-recall: at least this many opening words of the asked verse
OLD_PROMPT_CHAPTERS = 8  # corpus.prompts() opens the first 8 held-out chapters; skip them


def nbytes(text):
    return len(text.encode("utf-8"))


def passage(chapter):
    """The chapter's opening whole verses, at most PASSAGE_BYTES bytes (one verse per line, each
    ending in a newline); None if that is shorter than MIN_PASSAGE_BYTES."""
    verses, size = [], 0
    for v in chapter.splitlines():
        if size + nbytes(v) + 1 > PASSAGE_BYTES:
            break
        verses.append(v)
        size += nbytes(v) + 1
    return verses if size >= MIN_PASSAGE_BYTES else None


def opening(verse, words):
    """The verse's first `words` words and the space after them (the text a model continues)."""
    return " ".join(verse.split(" ")[:words]) + " "


def prose_repeat(chapters):
    out = []
    for ch in chapters:
        verses = passage(ch)
        if verses is None or len(verses[0].split(" ")) <= RESTART_WORDS + 2:
            continue
        out.append("\n".join(verses) + "\n\n" + opening(verses[0], RESTART_WORDS))
        if len(out) == PER_CATEGORY:
            break
    return out


def prose_recall(chapters):
    """The asked verse: from the passage's second verse on, the first whose opening words (at
    least MIN_CUE_WORDS, at most all but two of its words) occur nowhere else in the passage."""
    out = []
    for ch in chapters:
        verses = passage(ch)
        if verses is None:
            continue
        text = "\n".join(verses) + "\n"
        cue = None
        for v in verses[1:len(verses) // 2 + 1]:
            words = v.split(" ")
            for n in range(MIN_CUE_WORDS, len(words) - 1):
                c = opening(v, n)
                if text.count(c) == 1:
                    cue = c
                    break
            if cue:
                break
        if cue is None:
            continue
        out.append(text + "\n" + cue)
        if len(out) == PER_CATEGORY:
            break
    return out


_DEF = re.compile(r"^([ \t]*)def (\w+)\(", flags=re.M)


def functions(module):
    """(name, text) of every function and method of a module, dedented, with its decorators'
    lines left out: from its def line to the last non-blank line before the next line indented
    no deeper than the def."""
    lines = module.splitlines(keepends=True)
    offsets = [0]
    for ln in lines:
        offsets.append(offsets[-1] + len(ln))
    out = []
    for m in _DEF.finditer(module):
        indent = len(m.group(1))
        first = offsets.index(m.start()) if m.start() in offsets else None
        if first is None:
            continue
        end = first + 1
        last = first
        while end < len(lines):
            ln = lines[end]
            if ln.strip():
                if len(ln) - len(ln.lstrip()) <= indent and not ln.lstrip().startswith(("#", ")")):
                    break
                last = end
            end += 1
        text = textwrap.dedent("".join(lines[first:last + 1]))
        if not text.endswith("\n"):
            text += "\n"
        out.append((m.group(2), text))
    return out


def code_repeat(modules):
    """One function per held-out module (the middle one of those of a suitable size), then a
    second one per module while fewer than PER_CATEGORY."""
    candidates = []
    for module in modules:
        fits = [(name, text) for name, text in functions(module)
                if MIN_FUNCTION_BYTES <= nbytes(text) <= MAX_FUNCTION_BYTES and text.startswith("def ")]
        # The middle one first, then the others outward from it, so a second pass adds new ones.
        mid = len(fits) // 2
        order = sorted(range(len(fits)), key=lambda i: (abs(i - mid), i))
        candidates.append([fits[i] for i in order])
    out = []
    for rank in range(max((len(c) for c in candidates), default=0)):
        for c in candidates:
            if rank < len(c) and len(out) < PER_CATEGORY:
                name, text = c[rank]
                out.append(text + "\n\ndef " + name + "_v2(")
    return out


def build():
    _, chapters = corpus.split(corpus.documents("prose"))
    _, modules = corpus.split(corpus.documents("code"))
    # The first 8 held-out chapters are the old held-out prompts' openings; the two prose
    # categories take disjoint chapters after them (even / odd positions).
    rest = chapters[OLD_PROMPT_CHAPTERS:]
    out = {
        "prose-repeat": prose_repeat(rest[0::2]),
        "code-repeat": code_repeat(modules),
        "prose-recall": prose_recall(rest[1::2]),
    }
    for category, texts in out.items():
        if len(texts) != PER_CATEGORY:
            sys.exit(f"context_prompts: {category}: {len(texts)} prompts, expected {PER_CATEGORY}")
        for t in texts:
            if nbytes(t) > MAX_BYTES:
                sys.exit(f"context_prompts: {category}: a prompt of {nbytes(t)} bytes > {MAX_BYTES}")
    return out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "context_prompts.json"))
    args = p.parse_args(argv)
    prompts = build()
    with open(args.out + ".tmp", "w") as f:
        json.dump(prompts, f, indent=2)
        f.write("\n")
    os.replace(args.out + ".tmp", args.out)
    for category, texts in prompts.items():
        print(f"{category}: {len(texts)} prompts, {min(map(nbytes, texts))}-{max(map(nbytes, texts))} bytes")


if __name__ == "__main__":
    main()
