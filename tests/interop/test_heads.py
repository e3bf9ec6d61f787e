"""Drafter heads written by the libraries users have load unchanged in specdec, decode losslessly
and compute what those libraries compute.

- EAGLE-3 and P-EAGLE heads built and saved by vLLM's speculators library with its own classes
  (with and without a reduced draft vocabulary d2t / t2d, with its default or explicit fused
  layers, Llama and Qwen3 layers) for small Llama and Qwen3 targets written by transformers;
- EAGLE-1 and EAGLE-3 heads in SafeAILab EAGLE's published layout (safetensors);
- a SafeAILab head as a pickled pytorch_model.bin, and heads that do not fit: clear refusals.

Checks per head: `specdec inspect` describes it; greedy and coupled decoding with it give exactly
the tokens of sequential decoding; the head's draft distributions recorded in a trace, and the
teacher-forced first step written by `specdec forward`, match the library's own PyTorch forward
(float32; logits |d| <= 1e-4, hidden |d| <= 1e-4 * max(1, |x|), the bounds of
tests/models/pytorch_crosscheck.hpp). heads_build.py writes the checkpoints; heads_torch.py holds the
PyTorch side and its conventions.
"""
import importlib.metadata as md
import json
import os
import shutil
import subprocess

import h5py
import numpy as np
import pytest
import torch

import heads_build as B
import heads_torch as R

torch.set_num_threads(1)
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")


def _quiet_libraries():
    """speculators logs every file it opens (loguru); transformers draws progress bars."""
    try:
        from loguru import logger
        logger.disable("speculators")
    except ImportError:
        pass
    import transformers
    transformers.utils.logging.disable_progress_bar()
    transformers.utils.logging.set_verbosity_error()


_quiet_libraries()

PROMPT = [1, 5, 9, 17, 33, 40]
SEQUENCE = [1, 5, 9, 17, 33, 40, 41, 7, 8, 90, 12, 64, 3, 77, 21, 50]  # teacher-forced checks
K = 4
LOGIT_BOUND = 1e-4
HIDDEN_BOUND = 1e-4  # times max(1, |x|)


def lib_version(lib):
    return f"{lib} {md.version(lib)}"


# name -> how the head is made and which specdec method decodes with it. "lib" is the library
# whose forward is the reference (speculators' own model classes, or the forward written from
# SafeAILab's published architecture in heads_torch.py).
CASES = {
    "speculators-eagle3": dict(
        lib="speculators", kind="eagle3", method="eagle3", layers=1, aux=[1, 4, 6],
        build=lambda d, t: B.make_speculators_head(d, t, aux=[1, 4, 6])),
    "speculators-eagle3-draft-vocab-default-aux": dict(
        lib="speculators", kind="eagle3", method="eagle3", layers=1, aux=None, draft_vocab=40,
        build=lambda d, t: B.make_speculators_head(d, t, draft_vocab=40, aux=None, seed=4)),
    "speculators-eagle3-2-layers-norm-before-residual": dict(
        lib="speculators", kind="eagle3", method="eagle3", layers=2, aux=[2, 4, 5],
        build=lambda d, t: B.make_speculators_head(d, t, layers=2, aux=[2, 4, 5], norm_before_residual=True,
                                                   seed=5)),
    "speculators-eagle3-bf16": dict(
        lib="speculators", kind="eagle3", method="eagle3", layers=1, aux=[2, 4, 5],
        build=lambda d, t: B.make_speculators_head(d, t, aux=[2, 4, 5], seed=17, dtype=torch.bfloat16)),
    "speculators-peagle": dict(
        lib="speculators", kind="peagle", method="peagle", layers=2, aux=[2, 4, 5],
        build=lambda d, t: B.make_speculators_head(d, t, kind="peagle", layers=2, aux=[2, 4, 5], depth=K,
                                                   seed=6)),
    "speculators-peagle-draft-vocab": dict(
        lib="speculators", kind="peagle", method="peagle", layers=2, aux=[1, 3, 7], draft_vocab=48,
        build=lambda d, t: B.make_speculators_head(d, t, kind="peagle", layers=2, aux=[1, 3, 7], depth=K,
                                                   draft_vocab=48, seed=7)),
    "speculators-eagle3-qwen3": dict(
        lib="speculators", kind="eagle3", method="eagle3", layers=1, aux=[1, 4, 6], arch="qwen3",
        build=lambda d, t: B.make_speculators_head(d, t, aux=[1, 4, 6], arch="qwen3", seed=15)),
    "speculators-peagle-qwen3": dict(
        lib="speculators", kind="peagle", method="peagle", layers=2, aux=[2, 4, 5], arch="qwen3",
        build=lambda d, t: B.make_speculators_head(d, t, kind="peagle", layers=2, aux=[2, 4, 5], depth=K,
                                                   arch="qwen3", seed=16)),
    "safeailab-eagle1": dict(
        lib="safeailab", kind="eagle1", method="eagle", layers=1,
        build=lambda d, t: B.make_safeailab_head(d, "eagle1", seed=8)),
    "safeailab-eagle1-own-embeddings-no-bias": dict(
        lib="safeailab", kind="eagle1", method="eagle", layers=1,
        build=lambda d, t: B.make_safeailab_head(d, "eagle1", seed=9, embed=True, fc_bias=False)),
    "safeailab-eagle3-draft-vocab": dict(
        lib="safeailab", kind="eagle3", method="eagle3", layers=1, draft_vocab=48,
        build=lambda d, t: B.make_safeailab_head(d, "eagle3", seed=10, draft_vocab=48)),
    "safeailab-eagle3-full-vocab-own-embeddings": dict(
        lib="safeailab", kind="eagle3", method="eagle3", layers=1,
        build=lambda d, t: B.make_safeailab_head(d, "eagle3", seed=11, embed=True)),
}
NAMES = list(CASES)


def lib_label(case):
    c = CASES[case]
    return lib_version("speculators") if c["lib"] == "speculators" else "SafeAILab EAGLE architecture (torch " + \
        md.version("torch") + ")"


ARCHS = ["llama", "qwen3"]


def arch_of(case):
    return CASES[case].get("arch", "llama")


@pytest.fixture(scope="session")
def heads(tmp_path_factory):
    """The targets and every head, written once."""
    root = tmp_path_factory.mktemp("heads")
    targets = {}
    for arch in ARCHS:
        targets[arch] = str(root / f"target-{arch}")
        B.make_target(targets[arch], arch=arch)
    dirs = {}
    for name, c in CASES.items():
        dirs[name] = str(root / name)
        c["build"](dirs[name], targets[arch_of(name)])
    return {"root": root, "targets": targets, "target": targets["llama"], "dirs": dirs}


def target_of(heads, case):
    return heads["targets"][arch_of(case)]


class Library:
    """The libraries' side, computed lazily and kept: the target's forward (transformers) and
    each head's teacher-forced step (speculators' model, or the SafeAILab architecture)."""

    def __init__(self, heads):
        self.heads = heads
        self._target = {}
        self._models = {}

    def target(self, tokens, arch="llama"):
        key = (arch, tuple(tokens))
        if key not in self._target:
            self._target[key] = R.target_forward(self.heads["targets"][arch], list(tokens))
        return self._target[key]

    def model(self, case):
        if case not in self._models:
            self._models[case] = R.load_speculators(self.heads["dirs"][case])
        return self._models[case]

    def step(self, case, tokens, k=K):
        """(logits, hidden, slot tokens, slot positions) of the head's first step over `tokens`."""
        c = CASES[case]
        _, hidden = self.target(tokens, arch_of(case))
        N = len(tokens) - 1
        if c["lib"] == "speculators":
            if c["kind"] == "peagle":
                return R.speculators_peagle_step(self.model(case), list(tokens), hidden, k)
            logits, out = R.speculators_eagle3_step(self.model(case), list(tokens), hidden)
        else:
            logits, out = R.safeailab_step(self.heads["dirs"][case], self.heads["target"], c["kind"], list(tokens),
                                           hidden)
        return logits, out, list(tokens[1:]), list(range(N))


@pytest.fixture(scope="session")
def library(heads):
    return Library(heads)


def draft_to_target(head_dir, draft_vocab):
    """Target id of every draft id (identity without d2t)."""
    from safetensors import safe_open
    with safe_open(os.path.join(head_dir, "model.safetensors"), "pt") as f:
        if "d2t" not in f.keys():
            return np.arange(draft_vocab)
        d2t = f.get_tensor("d2t").numpy()
    return np.arange(draft_vocab) + d2t


def check_close(case, what, lib, got, want, bound, relative):
    """Fails naming the case, the library and the worst row / column."""
    got = np.asarray(got, dtype=np.float64)
    want = np.asarray(want, dtype=np.float64)
    assert got.shape == want.shape, f"{case}: {what}: specdec shape {got.shape}, {lib} shape {want.shape}"
    scale = np.maximum(1.0, np.abs(want)) if relative else 1.0
    excess = np.abs(got - want) / scale
    if not np.all(np.isfinite(got)) or excess.max() > bound:
        bad = np.argwhere(~np.isfinite(got))
        r, c = bad[0] if len(bad) else np.unravel_index(np.argmax(excess), excess.shape)
        raise AssertionError(
            f"{case}: {what} differs from {lib}: worst at row {r}, column {c}: specdec {got[r, c]!r}, "
            f"{lib} {want[r, c]!r} (|d|{' / max(1,|x|)' if relative else ''} = {excess[r, c]:.3g} > {bound})")
    print(f"{case}: {what} vs {lib}: {got.shape[0]} rows, max |d|{'/max(1,|x|)' if relative else ''} "
          f"{excess.max():.2e} (bound {bound}), max |x| {np.abs(want).max():.3g}")
    return float(excess.max())


# --- loading ------------------------------------------------------------------------------

@pytest.mark.parametrize("case", NAMES)
def test_inspect_describes_the_head(specdec, heads, case):
    c = CASES[case]
    out = specdec.run("inspect", heads["dirs"][case]).stdout
    layout = "speculators" if c["lib"] == "speculators" else "safeailab"
    layers = f"{c['layers']} layer" + ("s" if c["layers"] > 1 else "")
    want = f"{c['kind']} ({layout} layout), {layers}"
    assert want in out, f"{case}: `specdec inspect` does not say '{want}':\n{out}"
    vd = c.get("draft_vocab", B.TARGET["vocab_size"])
    assert f"vocab {B.TARGET['vocab_size']} (draft vocab {vd})" in out, f"{case}: wrong vocabularies:\n{out}"
    if c.get("aux"):
        aux = " ".join(map(str, c["aux"]))
        assert f"aux layers  {aux}" in out, f"{case}: `specdec inspect` does not list aux layers {aux}:\n{out}"
    if c["kind"] == "peagle":
        assert f"mask token {B.MASK_TOKEN}, trained depth {K}" in out, f"{case}: P-EAGLE fields:\n{out}"


@pytest.mark.parametrize("case", [n for n in NAMES if CASES[n]["lib"] == "speculators"])
def test_speculators_reloads_its_own_head(heads, library, case):
    """The checkpoint is what the library itself reads back (so the files specdec is given are the
    library's real output, not something only specdec accepts)."""
    model = library.model(case)
    c = CASES[case]
    assert type(model).__name__ == ("PEagleDraftModel" if c["kind"] == "peagle" else "Eagle3DraftModel"), case
    for name, p in model.named_parameters():
        if not name.startswith("verifier_"):
            assert torch.isfinite(p).all(), f"{case}: speculators reloaded '{name}' with NaNs"


# --- decoding -----------------------------------------------------------------------------

MODES = {  # (sampling options, drafting options)
    "greedy-chain": (["--sampling", "greedy"], ["--k", K]),
    "coupled-chain": (["--sampling", "coupled", "--temperature", 5, "--seed", 3], ["--k", K]),
    "greedy-dynamic-tree": (["--sampling", "greedy"],
                            ["--tree", "dynamic", "--depth", 4, "--tree-top-k", 3, "--total-tokens", 10]),
}
DECODES = [(n, m) for n in NAMES for m in MODES if not (m.endswith("tree") and CASES[n]["kind"] == "peagle")]


def generate(specdec, target, *args):
    return specdec.json("generate", "--model", target, "--prompt-ids", ",".join(map(str, PROMPT)),
                        "--max-new-tokens", 16, "--ignore-eos", *args)


@pytest.mark.parametrize("case,mode", DECODES, ids=[f"{n}-{m}" for n, m in DECODES])
def test_decoding_is_lossless(specdec, heads, case, mode):
    c = CASES[case]
    sampling, drafting = MODES[mode]
    target = target_of(heads, case)
    want = generate(specdec, target, "--method", "sequential", *sampling)["output_tokens"]
    got = generate(specdec, target, "--method", c["method"], "--drafter", heads["dirs"][case], *sampling, *drafting)
    assert got["output_tokens"] == want, (
        f"{case} ({mode}): {c['method']} with the head gives {got['output_tokens']}, sequential {want}")
    stats = got["stats"]
    assert stats["drafted_tokens"] > 0, f"{case} ({mode}): the head drafted nothing"
    if mode.startswith("coupled"):
        # At temperature 5 the coupled noise dominates: a working head has drafts accepted.
        assert stats["accepted_tokens"] > 0, f"{case} ({mode}): no draft accepted (AL {stats['acceptance_length']})"


# --- numerics: the draft distributions a decoding run uses ---------------------------------

def read_trace(path):
    with h5py.File(path, "r") as f:
        s = f["steps"]
        d = s["draft_logits"]
        assert d.attrs["storage"] in (b"full", "full")
        return dict(
            prompt=f["prompt/tokens"][()].tolist(), output=f["output/tokens"][()].tolist(),
            positions=s["positions"][()].tolist(),
            draft_rows=d["full"][()], draft_offsets=d["row_offsets"][()], row_nodes=d["row_nodes"][()],
            target_rows=s["target_logits/full"][()], target_offsets=s["target_logits/row_offsets"][()])


def log_softmax(x):
    return torch.log_softmax(torch.as_tensor(x, dtype=torch.float64), dim=-1).numpy()


@pytest.mark.parametrize("case", NAMES)
def test_recorded_draft_distributions_match_library(specdec, heads, library, case, tmp_path):
    """A sampled run records log q of every drafting point. The root's row of each step (and
    P-EAGLE's K-1 mask slots) is the head's teacher-forced step over the tokens so far: it must be
    the library's log-softmax, at the draft vocabulary's target ids, and -inf elsewhere. The target's
    first row of each step must be transformers' logits."""
    c = CASES[case]
    trace = str(tmp_path / "run.h5")
    specdec.run("record", "--model", target_of(heads, case), "--method", c["method"], "--drafter", heads["dirs"][case],
                "--k", K, "--prompt-ids", ",".join(map(str, PROMPT)), "--max-new-tokens", 12, "--ignore-eos",
                "--sampling", "sample", "--seed", 7, "--logits", "full", "--out", trace)
    t = read_trace(trace)
    seq = t["prompt"] + t["output"]
    V = B.TARGET["vocab_size"]
    vd = c.get("draft_vocab", V)
    ids = draft_to_target(heads["dirs"][case], vd)
    outside = np.setdiff1d(np.arange(V), ids)
    full_logits, _ = library.target(seq, arch_of(case))
    got_target, want_target, got_draft, want_draft = [], [], [], []
    for s, pos in enumerate(t["positions"]):
        got_target.append(t["target_rows"][t["target_offsets"][s]])
        want_target.append(full_logits[pos - 1].numpy())
        lo, hi = t["draft_offsets"][s], t["draft_offsets"][s + 1]
        if hi == lo:
            continue
        nodes = t["row_nodes"][lo:hi].tolist()
        if c["kind"] == "peagle":
            logits, _, _, _ = library.step(case, seq[:pos], K)
            n = pos - 1  # real pairs; slot j (node j-1) sits at n - 1 + j
            for r, node in zip(range(lo, hi), nodes):
                got_draft.append(t["draft_rows"][r])
                want_draft.append(logits[n + node].numpy())
        else:
            logits, _, _, _ = library.step(case, seq)  # causal: one forward serves every step
            r = lo + nodes.index(-1)
            got_draft.append(t["draft_rows"][r])
            want_draft.append(logits[pos - 2].numpy())
    assert got_draft, f"{case}: the trace has no draft rows"
    got_draft, want_draft = np.stack(got_draft), np.stack(want_draft)
    assert np.all(np.isneginf(got_draft[:, outside])), f"{case}: log q is finite outside the draft vocabulary"
    check_close(case, "target logits (first row of each step)", lib_version("transformers"),
                np.stack(got_target), np.stack(want_target), LOGIT_BOUND, False)
    # log q = logits - logsumexp: an error of e in the logits moves it by at most 2e.
    check_close(case, "recorded draft log q", lib_label(case), got_draft[:, ids], log_softmax(want_draft),
                2 * LOGIT_BOUND, False)


# --- numerics: specdec forward ---------------------------------------------------------------

@pytest.fixture(scope="session")
def forward_command(specdec_bin):
    r = subprocess.run([specdec_bin, "forward", "--help"], capture_output=True, text=True)
    if r.returncode != 0:
        pytest.fail(f"`specdec forward --help` failed (exit {r.returncode}): {r.stderr.strip()}")
    return True


@pytest.mark.parametrize("arch", ARCHS)
def test_forward_target_matches_transformers(specdec, heads, library, forward_command, arch, tmp_path):
    """The features every head is fed: `specdec forward`'s logits and hidden states of the target
    (written by transformers) must match transformers' forward."""
    out = str(tmp_path / "forward.h5")
    specdec.run("forward", "--model", heads["targets"][arch], "--prompt-ids", ",".join(map(str, SEQUENCE)),
                "--out", out)
    logits, hidden = library.target(SEQUENCE, arch)
    tf = lib_version("transformers")
    name = f"target-{arch}"
    with h5py.File(out, "r") as f:
        assert f["tokens"][()].tolist() == SEQUENCE, f"{name}: /tokens"
        check_close(name, "/logits", tf, f["logits"][()], logits.numpy(), LOGIT_BOUND, False)
        H = hidden.shape[-1]
        check_close(name, "/hidden (rows: layer * T + position)", tf, f["hidden"][()].reshape(-1, H),
                    hidden.numpy().reshape(-1, H), HIDDEN_BOUND, True)


@pytest.mark.parametrize("case", NAMES)
def test_forward_matches_library(specdec, heads, library, forward_command, case, tmp_path):
    """`specdec forward --drafter` writes the head's teacher-forced first step; it must match the
    library's float32 forward on the same features."""
    c = CASES[case]
    out = str(tmp_path / "forward.h5")
    args = ["forward", "--model", target_of(heads, case), "--prompt-ids", ",".join(map(str, SEQUENCE)),
            "--out", out, "--drafter", heads["dirs"][case]]
    if c["kind"] == "peagle":
        args += ["--k", K]
    specdec.run(*args)
    d_logits, d_hidden, d_tokens, d_positions = library.step(case, SEQUENCE, K)
    lib = lib_label(case)
    with h5py.File(out, "r") as f:
        check_close(case, "/draft/logits", lib, f["draft/logits"][()], d_logits.numpy(), LOGIT_BOUND, False)
        check_close(case, "/draft/hidden", lib, f["draft/hidden"][()], d_hidden.numpy(), HIDDEN_BOUND, True)
        if "draft/tokens" in f:
            assert f["draft/tokens"][()].tolist() == d_tokens, f"{case}: /draft/tokens"
            assert f["draft/positions"][()].tolist() == d_positions, f"{case}: /draft/positions"
        else:
            assert c["kind"] != "peagle", f"{case}: a P-EAGLE head's /draft needs tokens and positions"


def test_the_options_checked_change_the_library_output(heads, library):
    """The agreement above is informative: the library's own output moves by far more than the
    bound when norm_before_residual is switched off or other fused layers are taken, so a specdec
    that ignored either would fail."""
    case = "speculators-eagle3-2-layers-norm-before-residual"
    model = library.model(case)
    _, hidden = library.target(SEQUENCE)
    base, _ = R.speculators_eagle3_step(model, SEQUENCE, hidden)
    model.layers[0].norm_before_residual = False
    try:
        flipped, _ = R.speculators_eagle3_step(model, SEQUENCE, hidden)
    finally:
        model.layers[0].norm_before_residual = True
    moved = (base - flipped).abs().max().item()
    print(f"{case}: norm_before_residual off moves the logits by {moved:.3g}")
    assert moved > 100 * LOGIT_BOUND, f"{case}: norm_before_residual barely matters ({moved:.3g})"
    case = "speculators-eagle3-draft-vocab-default-aux"
    model = library.model(case)
    base, _ = R.speculators_eagle3_step(model, SEQUENCE, hidden)
    saved = model.config.eagle_aux_hidden_state_layer_ids
    model.config.eagle_aux_hidden_state_layer_ids = [1, 4, 6]
    try:
        other, _ = R.speculators_eagle3_step(model, SEQUENCE, hidden)
    finally:
        model.config.eagle_aux_hidden_state_layer_ids = saved
    moved = (base - other).abs().max().item()
    print(f"{case}: fused layers [1, 4, 6] instead of the default {B.DEFAULT_AUX} move the logits by {moved:.3g}")
    assert moved > 100 * LOGIT_BOUND, f"{case}: the fused layers barely matter ({moved:.3g})"


# --- refusals -----------------------------------------------------------------------------

def decode_args(heads, method, drafter, target=None):
    return ["generate", "--model", target or heads["target"], "--method", method, "--drafter", drafter,
            "--prompt-ids", "1,5,9", "--max-new-tokens", 4]


def test_pickled_safeailab_head_is_refused_clearly(specdec, heads):
    """SafeAILab released most EAGLE-1 heads as pytorch_model.bin (a pickle), which specdec does not
    read: the error must name the file and say to convert it to safetensors."""
    d = str(heads["root"] / "safeailab-eagle1-pickle")
    B.make_safeailab_head(d, "eagle1", seed=12, pickle=True)
    err = specdec.fails(*decode_args(heads, "eagle", d))
    print(f"safeailab-eagle1-pickle: {err.strip()}")
    assert "pytorch_model.bin" in err and "safetensors" in err, f"safeailab-eagle1-pickle: unclear error:\n{err}"


def _edited_copy(heads, case, name, edit):
    d = str(heads["root"] / name)
    shutil.rmtree(d, ignore_errors=True)
    shutil.copytree(heads["dirs"][case], d)
    path = os.path.join(d, "config.json")
    j = json.load(open(path))
    edit(j)
    json.dump(j, open(path, "w"), indent=2)
    return d


def _wide_target(heads):
    d = str(heads["root"] / "target-hidden-48")
    if not os.path.exists(d):
        B.make_target(d, seed=13, hidden_size=48, head_dim=12)
    return d


REFUSALS = {
    # a speculators model type specdec has no head for (speculators also writes dflash, mtp, ...)
    "speculators-unsupported-model-type": lambda h: (
        decode_args(h, "eagle3", _edited_copy(h, "speculators-eagle3", "dflash-type",
                                              lambda j: j.update(speculators_model_type="dflash"))),
        ["config.json", "speculators_model_type", "dflash"]),
    # an option of speculators 0.9.0 whose architecture specdec does not compute
    "speculators-norm-before-fc": lambda h: (
        decode_args(h, "eagle3", B.make_speculators_head(str(h["root"] / "norm-before-fc"), h["target"],
                                                          aux=[1, 4, 6], seed=14, norm_before_fc=True)),
        ["config.json", "norm_before_fc"]),
    "speculators-eagle3-hidden-mismatch": lambda h: (
        decode_args(h, "eagle3", h["dirs"]["speculators-eagle3"], _wide_target(h)),
        ["config.json", "hidden_size", "32", "48"]),
    "speculators-peagle-hidden-mismatch": lambda h: (
        decode_args(h, "peagle", h["dirs"]["speculators-peagle"], _wide_target(h)),
        ["config.json", "hidden_size", "32", "48"]),
    "safeailab-eagle1-hidden-mismatch": lambda h: (
        decode_args(h, "eagle", h["dirs"]["safeailab-eagle1"], _wide_target(h)),
        ["config.json", "hidden_size", "32", "48"]),
    "safeailab-eagle3-hidden-mismatch": lambda h: (
        decode_args(h, "eagle3", h["dirs"]["safeailab-eagle3-draft-vocab"], _wide_target(h)),
        ["config.json", "hidden_size", "32", "48"]),
}


@pytest.mark.parametrize("case", list(REFUSALS))
def test_refusal_names_file_and_field(specdec, heads, case):
    args, needles = REFUSALS[case](heads)
    err = specdec.fails(*args)
    print(f"{case}: {err.strip()}")
    missing = [n for n in needles if n not in err]
    assert not missing, f"{case}: the error does not name {missing}:\n{err}"
