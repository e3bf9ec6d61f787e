"""MTP modules and Medusa heads written by independent implementations load unchanged in specdec,
decode losslessly and compute what those implementations compute (the counterpart of
test_heads.py for `--method mtp` and `--method medusa`).

- MTP modules in DeepSeek-V3's layout (beside the target with their own embeddings and shared head;
  inside the target's own model.safetensors with --drafter = the target's folder; two modules), in
  Qwen3-Next's (one and two layers) and in MiMo's (Llama, and Qwen2 with attention biases) for small
  Llama / Qwen2 / Qwen3 targets written by transformers; the modules are heads_torch.py's PyTorch
  modules (written from the published math, with transformers' own decoder layers of the target's
  kind), saved with their state dicts' names. A speculators MTPDraftModel built and saved with the
  library's own classes for a Qwen3 target; its reference is the library's own forward / layer.
- Medusa heads in FasterDecoding's layout (medusa_lm_head.safetensors) and vLLM's (biases or not, a
  shared projection, a logit scale), from heads_torch.py's PyTorch Medusa. (No library in the pinned
  environment writes Medusa heads: speculators has no Medusa model.)

Checks per checkpoint: `specdec inspect` describes it; greedy and coupled decoding (and, for one
MTP module, a greedy dynamic tree; for Medusa a greedy static tree) give exactly the tokens of
sequential decoding; `specdec forward --drafter` (MTP) writes module 0's teacher-forced first step,
which must match the PyTorch forward; the draft distributions a sampled `specdec record` run stores
(log q of every drafting point: the root, i.e. the first step, and every chained step of a K-chain
under each MTP feedback variant checkpoint / vllm / sglang; every Medusa head) must match the
PyTorch side recomputing the same steps. Bounds as test_heads.py: logits |d| <= 1e-4, hidden
|d| <= 1e-4 * max(1, |x|), log q 2e-4. Refusals: a missing tensor, a misshapen one, a
mixture-of-experts or multi-head-latent-attention tensor in a module, a pickled Medusa checkpoint.
"""
import os
import shutil

import h5py
import numpy as np
import pytest
import torch

import heads_build as B
import heads_torch as R
from test_heads import K, LOGIT_BOUND, HIDDEN_BOUND, SEQUENCE, PROMPT, check_close, lib_version, log_softmax

torch.set_num_threads(1)

ARCHS = ["llama", "qwen2", "qwen3"]

# name -> how the checkpoint is made. layout: specdec's name of the layout; own: the reference is
# heads_torch's module ("torch") or speculators' MTPDraftModel ("speculators"); inside: the module
# lives in a copy of the target (the case's folder is --model and --drafter).
MTP_CASES = {
    "deepseek-llama-own-embeddings-and-head": dict(
        layout="deepseek", arch="llama", modules=1, layers=1,
        build=lambda d, t: B.make_mtp_head(d, t, "deepseek", seed=20, own_embeddings=True, own_head=True)),
    "deepseek-llama-inside-target": dict(
        layout="deepseek", arch="llama", modules=1, layers=1, inside=True,
        build=lambda d, t: B.make_mtp_head(d, t, "deepseek", seed=21, inside_target=True)),
    "deepseek-llama-2-modules": dict(
        layout="deepseek", arch="llama", modules=2, layers=1,
        build=lambda d, t: B.make_mtp_head(d, t, "deepseek", seed=22, modules=2, own_head=True)),
    "qwen3-next-llama": dict(
        layout="qwen3_next", arch="llama", modules=1, layers=1,
        build=lambda d, t: B.make_mtp_head(d, t, "qwen3_next", seed=23)),
    "qwen3-next-qwen3-2-layers": dict(
        layout="qwen3_next", arch="qwen3", modules=1, layers=2,
        build=lambda d, t: B.make_mtp_head(d, t, "qwen3_next", seed=24, layers=2)),
    "mimo-llama": dict(
        layout="mimo", arch="llama", modules=1, layers=1,
        build=lambda d, t: B.make_mtp_head(d, t, "mimo", seed=25)),
    "mimo-qwen2-attention-bias": dict(
        layout="mimo", arch="qwen2", modules=1, layers=1,
        build=lambda d, t: B.make_mtp_head(d, t, "mimo", seed=26)),
    "speculators-mtp-qwen3": dict(
        layout="speculators", arch="qwen3", modules=1, layers=1, lib="speculators",
        build=lambda d, t: B.make_speculators_mtp(d, t, seed=30)),
}
MTP = list(MTP_CASES)

MEDUSA_CASES = {
    "medusa-fasterdecoding": dict(layout="medusa", heads=4, layers=1, bias=True,
                                  build=lambda d, t: B.make_medusa_heads(d, t, "medusa", seed=40, heads=4)),
    "medusa-fasterdecoding-2-blocks": dict(layout="medusa", heads=3, layers=2, bias=True,
                                           build=lambda d, t: B.make_medusa_heads(d, t, "medusa", seed=41, heads=3,
                                                                                  layers=2)),
    "medusa-vllm": dict(layout="vllm", heads=4, layers=1, bias=False,
                        build=lambda d, t: B.make_medusa_heads(d, t, "vllm", seed=42, heads=4, bias=False)),
    "medusa-vllm-bias-shared-head-scaled": dict(
        layout="vllm", heads=3, layers=2, bias=True, shared=True, scale=0.7,
        build=lambda d, t: B.make_medusa_heads(d, t, "vllm", seed=43, heads=3, layers=2, bias=True, shared_head=True,
                                               logit_scale=0.7)),
}
MEDUSA = list(MEDUSA_CASES)

# --method mtp,variant=V: what a chained step feeds back and whether the pair at position 0 has its
# embedding zeroed (reference/methods/mtp.cpp, docs/drafters.md).
VARIANTS = ["checkpoint", "vllm", "sglang"]


def variant_rule(layout, variant):
    """(feedback, zero embedding at position 0) of a variant for a layout."""
    if variant == "vllm":
        return "prenorm", True
    if variant == "sglang":
        return "normed", False
    return ("prenorm" if layout == "deepseek" else "normed"), False


def mtp_label(case):
    if MTP_CASES[case].get("lib") == "speculators":
        return lib_version("speculators")
    return f"MTP reference in heads_torch.py (transformers {lib_version('transformers').split()[1]} layers)"


MEDUSA_LABEL = "Medusa reference in heads_torch.py"


@pytest.fixture(scope="session")
def ckpts(tmp_path_factory):
    """The targets and every MTP / Medusa checkpoint, written once."""
    root = tmp_path_factory.mktemp("mtp-medusa")
    targets = {a: B.make_target(str(root / f"target-{a}"), arch=a) for a in ARCHS}
    dirs = {}
    for name, c in list(MTP_CASES.items()) + list(MEDUSA_CASES.items()):
        dirs[name] = str(root / name)
        c["build"](dirs[name], targets[c.get("arch", "llama")])
    return {"root": root, "targets": targets, "dirs": dirs}


def model_of(ckpts, case):
    """The --model a case decodes with: the target, or its own folder when the module is inside."""
    c = MTP_CASES.get(case) or MEDUSA_CASES[case]
    return ckpts["dirs"][case] if c.get("inside") else ckpts["targets"][c.get("arch", "llama")]


class Reference:
    """The independent side, computed lazily and kept: the target's forward (transformers), each
    MTP checkpoint's modules as callables (tokens, features, positions, zero0) -> (logits, prenorm,
    normed), each Medusa checkpoint's heads."""

    def __init__(self, ckpts):
        self.ckpts = ckpts
        self._target, self._runners, self._medusa, self._spec = {}, {}, {}, {}

    def target(self, tokens, arch="llama"):
        key = (arch, tuple(tokens))
        if key not in self._target:
            self._target[key] = R.target_forward(self.ckpts["targets"][arch], list(tokens))
        return self._target[key]

    def final_hidden(self, tokens, arch):
        _, hidden = self.target(tokens, arch)
        return hidden[-1]  # transformers' last entry: after the final norm

    def speculators_model(self, case):
        if case not in self._spec:
            self._spec[case] = R.load_speculators(self.ckpts["dirs"][case])
        return self._spec[case]

    def runners(self, case):
        if case not in self._runners:
            c = MTP_CASES[case]
            if c.get("lib") == "speculators":
                self._runners[case] = [R.SpeculatorsMTPRunner(self.speculators_model(case))]
            else:
                self._runners[case] = R.mtp_runners(self.ckpts["dirs"][case], self.ckpts["targets"][c["arch"]],
                                                    c["layout"], c["modules"], c["layers"])
        return self._runners[case]

    def first_step(self, case, tokens):
        """Module 0's teacher-forced first step: (logits (N, V), prenorm hidden (N, H))."""
        c = MTP_CASES[case]
        N = len(tokens) - 1
        if c.get("lib") == "speculators":
            _, hidden = self.target(tokens, c["arch"])
            return R.speculators_mtp_step(self.speculators_model(case), list(tokens), hidden)
        logits, pre, _ = self.runners(case)[0](list(tokens[1:]), self.final_hidden(tokens, c["arch"])[:N], list(range(N)))
        return logits, pre

    def medusa(self, case):
        if case not in self._medusa:
            self._medusa[case] = R.load_medusa(self.ckpts["dirs"][case])
        return self._medusa[case]


@pytest.fixture(scope="session")
def ref(ckpts):
    return Reference(ckpts)


# --- loading ------------------------------------------------------------------------------

@pytest.mark.parametrize("case", MTP)
def test_inspect_describes_the_mtp_checkpoint(specdec, ckpts, case):
    c = MTP_CASES[case]
    r = specdec.run("inspect", ckpts["dirs"][case], check=False)
    out = r.stdout + r.stderr
    assert r.returncode == 0, f"{case}: `specdec inspect` fails on the MTP checkpoint:\n{out}"
    want = f"mtp ({c['layout']} layout)"
    assert want in out, f"{case}: `specdec inspect` does not say '{want}':\n{out}"
    modules = f"{c['modules']} module" + ("s" if c["modules"] > 1 else "")
    assert modules in out, f"{case}: `specdec inspect` does not say '{modules}':\n{out}"


@pytest.mark.parametrize("case", MEDUSA)
def test_inspect_describes_the_medusa_heads(specdec, ckpts, case):
    c = MEDUSA_CASES[case]
    out = specdec.run("inspect", ckpts["dirs"][case]).stdout
    want = f"layout      {c['layout']} ("
    assert want in out, f"{case}: `specdec inspect` does not give the layout:\n{out}"
    blocks = f"{c['heads']} heads of {c['layers']} residual block" + ("s" if c["layers"] > 1 else "") + \
        (" with biases" if c["bias"] else " without biases")
    assert blocks in out, f"{case}: `specdec inspect` does not say '{blocks}':\n{out}"
    if c.get("shared"):
        assert "one shared projection" in out and f"logit scale {c['scale']}" in out, f"{case}:\n{out}"


def test_speculators_reloads_its_own_mtp_head(ckpts, ref):
    """The speculators checkpoint is what the library reads back (MTPDraftModel), its embeddings
    and LM head filled from the verifier (they are not stored)."""
    case = "speculators-mtp-qwen3"
    model = ref.speculators_model(case)
    assert type(model).__name__ == "MTPDraftModel", type(model)
    for name, p in model.named_parameters():
        assert torch.isfinite(p).all(), f"{case}: speculators reloaded '{name}' with NaNs"
    embed, head = R.target_embed_head(ckpts["targets"]["qwen3"])
    assert torch.equal(model.embed_tokens.weight, embed) and torch.equal(model.lm_head.weight, head), case
    from safetensors import safe_open
    with safe_open(os.path.join(ckpts["dirs"][case], "model.safetensors"), "pt") as f:
        names = list(f.keys())
    assert names and all(n.startswith("mtp_layers.0.") for n in names), names


# --- decoding -----------------------------------------------------------------------------

MTP_MODES = {  # (--method, sampling options, drafting options)
    "greedy-chain": ("mtp", ["--sampling", "greedy"], ["--k", K]),
    "coupled-chain-vllm": ("mtp,variant=vllm", ["--sampling", "coupled", "--temperature", 5, "--seed", 3], ["--k", K]),
    "coupled-chain-sglang": ("mtp,variant=sglang", ["--sampling", "coupled", "--temperature", 5, "--seed", 3],
                             ["--k", K]),
    "greedy-dynamic-tree": ("mtp", ["--sampling", "greedy"],
                            ["--tree", "dynamic", "--depth", 3, "--tree-top-k", 3, "--total-tokens", 8]),
}
MTP_DECODES = [(n, m) for n in MTP for m in MTP_MODES if not (m.endswith("tree") and MTP_CASES[n]["modules"] > 1)]

MEDUSA_MODES = {
    "greedy-chain": (["--sampling", "greedy"], ["--k", K]),
    "coupled-chain": (["--sampling", "coupled", "--temperature", 5, "--seed", 3], ["--k", K]),
    "greedy-static-tree": (["--sampling", "greedy"], ["--tree", "[[0],[1],[2],[0,0],[0,1],[1,0],[0,0,0]]"]),
}
MEDUSA_DECODES = [(n, m) for n in MEDUSA for m in MEDUSA_MODES]


def generate(specdec, model, *args):
    return specdec.json("generate", "--model", model, "--prompt-ids", ",".join(map(str, PROMPT)),
                        "--max-new-tokens", 16, "--ignore-eos", *args)


def check_lossless(specdec, ckpts, case, mode, method, sampling, drafting):
    model = model_of(ckpts, case)
    want = generate(specdec, model, "--method", "sequential", *sampling)["output_tokens"]
    got = generate(specdec, model, "--method", method, "--drafter", ckpts["dirs"][case], *sampling, *drafting)
    assert got["output_tokens"] == want, (
        f"{case} ({mode}): {method} gives {got['output_tokens']}, sequential {want}")
    stats = got["stats"]
    assert stats["drafted_tokens"] > 0, f"{case} ({mode}): nothing drafted"
    if "coupled" in mode:
        # At temperature 5 the coupled noise dominates: a working drafter has drafts accepted.
        assert stats["accepted_tokens"] > 0, f"{case} ({mode}): no draft accepted (AL {stats['acceptance_length']})"


@pytest.mark.parametrize("case,mode", MTP_DECODES, ids=[f"{n}-{m}" for n, m in MTP_DECODES])
def test_mtp_decoding_is_lossless(specdec, ckpts, case, mode):
    method, sampling, drafting = MTP_MODES[mode]
    check_lossless(specdec, ckpts, case, mode, method, sampling, drafting)


@pytest.mark.parametrize("case,mode", MEDUSA_DECODES, ids=[f"{n}-{m}" for n, m in MEDUSA_DECODES])
def test_medusa_decoding_is_lossless(specdec, ckpts, case, mode):
    sampling, drafting = MEDUSA_MODES[mode]
    check_lossless(specdec, ckpts, case, mode, "medusa", sampling, drafting)


# --- numerics: specdec forward (MTP module 0's teacher-forced first step) -------------------

@pytest.mark.parametrize("case", MTP)
def test_mtp_forward_matches_reference(specdec, ckpts, ref, case, tmp_path):
    """`specdec forward --drafter` writes module 0's teacher-forced first step: row i pairs the
    target's final hidden state h_i (after its norm) with t_{i+1} at position i; /draft/hidden is the
    module's decoder output before its final norm."""
    c = MTP_CASES[case]
    out = str(tmp_path / "forward.h5")
    specdec.run("forward", "--model", model_of(ckpts, case), "--prompt-ids", ",".join(map(str, SEQUENCE)),
                "--out", out, "--drafter", ckpts["dirs"][case])
    logits, hidden = ref.first_step(case, SEQUENCE)
    N = len(SEQUENCE) - 1
    lib = mtp_label(case)
    with h5py.File(out, "r") as f:
        if c.get("inside"):  # the target read from the folder that also holds the module
            want, _ = ref.target(SEQUENCE, c["arch"])
            check_close(case, "/logits (target)", lib_version("transformers"), f["logits"][()], want.numpy(),
                        LOGIT_BOUND, False)
        check_close(case, "/draft/logits", lib, f["draft/logits"][()], logits.numpy(), LOGIT_BOUND, False)
        check_close(case, "/draft/hidden", lib, f["draft/hidden"][()], hidden.numpy(), HIDDEN_BOUND, True)
        assert f["draft/tokens"][()].tolist() == SEQUENCE[1:], f"{case}: /draft/tokens"
        assert f["draft/positions"][()].tolist() == list(range(N)), f"{case}: /draft/positions"
        assert f["draft"].attrs["kind"] in ("mtp", b"mtp"), f"{case}: /draft kind {f['draft'].attrs['kind']}"


def test_speculators_layer_runner_is_the_library_forward(ref):
    """The chained-step reference of the speculators head runs the library's MTP layer row by row
    (heads_torch.SpeculatorsMTPRunner); over the teacher-forced pairs it must give exactly what the
    library's own MTPDraftModel.forward gives, so the chained checks below rest on the library."""
    case = "speculators-mtp-qwen3"
    N = len(SEQUENCE) - 1
    lib_logits, lib_pre = ref.first_step(case, SEQUENCE)
    logits, pre, _ = ref.runners(case)[0](SEQUENCE[1:], ref.final_hidden(SEQUENCE, "qwen3")[:N], list(range(N)))
    assert torch.allclose(logits, lib_logits, atol=1e-6, rtol=0) and torch.allclose(pre, lib_pre, atol=1e-6, rtol=0)


# --- numerics: the draft distributions a decoding run uses ---------------------------------

def read_trace(path):
    with h5py.File(path, "r") as f:
        s = f["steps"]
        d = s["draft_logits"]
        assert d.attrs["storage"] in (b"full", "full")
        return dict(
            prompt=f["prompt/tokens"][()].tolist(), output=f["output/tokens"][()].tolist(),
            positions=s["positions"][()].tolist(),
            drafts=s["draft_tokens"][()].tolist(), draft_offsets=s["draft_tokens_offsets"][()].tolist(),
            draft_rows=d["full"][()], row_offsets=d["row_offsets"][()], row_nodes=d["row_nodes"][()])


def record(specdec, ckpts, case, method, tmp_path, k=K):
    trace = str(tmp_path / "run.h5")
    specdec.run("record", "--model", model_of(ckpts, case), "--method", method, "--drafter", ckpts["dirs"][case],
                "--k", k, "--prompt-ids", ",".join(map(str, PROMPT)), "--max-new-tokens", 12, "--ignore-eos",
                "--sampling", "sample", "--seed", 7, "--logits", "full", "--out", trace)
    return read_trace(trace)


def steps_of(t):
    """Per step with draft rows: (position, draft tokens, [(node, row)])."""
    for s, pos in enumerate(t["positions"]):
        lo, hi = t["row_offsets"][s], t["row_offsets"][s + 1]
        if hi == lo:
            continue
        drafts = t["drafts"][t["draft_offsets"][s]:t["draft_offsets"][s + 1]]
        yield pos, drafts, [(int(t["row_nodes"][r]), t["draft_rows"][r]) for r in range(lo, hi)]


@pytest.mark.parametrize("case,variant", [(n, v) for n in MTP for v in VARIANTS],
                         ids=[f"{n}-{v}" for n in MTP for v in VARIANTS])
def test_recorded_mtp_chain_matches_reference(specdec, ckpts, ref, case, variant, tmp_path):
    """A sampled K-chain records log q of every drafting point: the root (node −1: the first step
    over the committed pairs, module 0) and node j (the chained step that drafts depth j + 2 from the
    fed-back hidden state and draft j, module (j + 1) mod n). Each must be the reference's
    log-softmax recomputed by heads_torch.mtp_chain under the variant's feedback rule."""
    c = MTP_CASES[case]
    t = record(specdec, ckpts, case, f"mtp,variant={variant}", tmp_path)
    seq = t["prompt"] + t["output"]
    final = ref.final_hidden(seq, c["arch"])
    feedback, zero0 = variant_rule(c["layout"], variant)
    got_root, want_root, got_chain, want_chain = [], [], [], []
    for pos, drafts, rows in steps_of(t):
        want = R.mtp_chain(ref.runners(case), final, seq, pos, drafts, feedback, zero0)
        for node, row in rows:
            (got_root if node < 0 else got_chain).append(row)
            (want_root if node < 0 else want_chain).append(want[node + 1].numpy())
    assert got_root and got_chain, f"{case} ({variant}): the trace has no root or no chained draft rows"
    lib = mtp_label(case) + f", variant {variant}: feedback {feedback}, zero embedding at 0 {zero0}"
    check_close(case, "recorded log q, root (first step)", lib, np.stack(got_root), log_softmax(np.stack(want_root)),
                2 * LOGIT_BOUND, False)
    check_close(case, "recorded log q, chained steps", lib, np.stack(got_chain), log_softmax(np.stack(want_chain)),
                2 * LOGIT_BOUND, False)


@pytest.mark.parametrize("case", MTP)
def test_the_mtp_variants_change_the_reference(ckpts, ref, case):
    """The agreement above is informative: on the test sequence, feeding back the other hidden
    state (pre- vs post-norm), zeroing the position-0 embedding or (two modules) drafting every
    depth with module 0 moves the reference's chained distributions by far more than the bound."""
    c = MTP_CASES[case]
    pos = 10
    drafts = SEQUENCE[pos:pos + K]
    final = ref.final_hidden(SEQUENCE, c["arch"])
    runners = ref.runners(case)

    def chain(feedback="prenorm", zero0=False, modules=runners):
        return torch.stack(R.mtp_chain(modules, final, SEQUENCE, pos, drafts, feedback, zero0))
    base = chain()
    moved = {"normed instead of prenorm feedback": (base - chain("normed"))[1:].abs().max().item(),
             "zero embedding at position 0": (base - chain(zero0=True)).abs().max().item()}
    if len(runners) > 1:
        moved["module 0 for every depth"] = (base - chain(modules=runners[:1]))[1:].abs().max().item()
    for what, d in moved.items():
        print(f"{case}: {what} moves the draft logits by {d:.3g}")
        assert d > 100 * LOGIT_BOUND, f"{case}: {what} barely matters ({d:.3g})"


@pytest.mark.parametrize("case", MEDUSA)
def test_recorded_medusa_distributions_match_reference(specdec, ckpts, ref, case, tmp_path):
    """A sampled Medusa chain records log q of head d at node d − 1 (the root: head 0), all on the
    target's final hidden state at position pos − 2, the one that produced the pending token."""
    t = record(specdec, ckpts, case, "medusa", tmp_path)
    seq = t["prompt"] + t["output"]
    final = ref.final_hidden(seq, "llama")
    heads = ref.medusa(case)
    got, want = [], []
    for pos, _, rows in steps_of(t):
        logits = R.medusa_logits(heads, final[pos - 2])
        for node, row in rows:
            got.append(row)
            want.append(logits[node + 1].numpy())
    assert len(got) >= 2, f"{case}: the trace has too few draft rows"
    check_close(case, "recorded log q (every head)", MEDUSA_LABEL, np.stack(got), log_softmax(np.stack(want)),
                2 * LOGIT_BOUND, False)


def test_the_medusa_options_change_the_reference(ckpts, ref):
    """The agreement above is informative: vLLM's logit scale, and a second residual block, move
    the reference's log q by far more than the bound."""
    final = ref.final_hidden(SEQUENCE, "llama")[5]
    heads = ref.medusa("medusa-vllm-bias-shared-head-scaled")
    base = torch.as_tensor(log_softmax(R.medusa_logits(heads, final)))
    heads.logit_scale = 1.0
    try:
        unscaled = torch.as_tensor(log_softmax(R.medusa_logits(heads, final)))
    finally:
        heads.logit_scale = 0.7
    heads = ref.medusa("medusa-fasterdecoding-2-blocks")
    base2 = torch.as_tensor(log_softmax(R.medusa_logits(heads, final)))
    with torch.no_grad():  # skip block 0: the second block and the projection only
        one_block = torch.as_tensor(log_softmax(torch.stack([h[1:](final) for h in heads])))
    for what, d in {"logit scale 1 instead of 0.7": (base - unscaled).abs().max().item(),
                    "one residual block instead of two": (base2 - one_block).abs().max().item()}.items():
        print(f"{what} moves log q by {d:.3g}")
        assert d > 100 * LOGIT_BOUND, f"{what} barely matters ({d:.3g})"


# --- refusals -----------------------------------------------------------------------------

def _edited_weights(ckpts, case, name, edit, weights="model.safetensors"):
    """A copy of a case's checkpoint with its weight file edited."""
    from safetensors.torch import load_file, save_file
    d = str(ckpts["root"] / name)
    shutil.rmtree(d, ignore_errors=True)
    shutil.copytree(ckpts["dirs"][case], d)
    t = load_file(os.path.join(d, weights))
    edit(t)
    save_file(t, os.path.join(d, weights), metadata={"format": "pt"})
    return d


H = B.TARGET["hidden_size"]


def _pop(name):
    return lambda t: t.pop(name)


def _put(name, shape):
    return lambda t: t.__setitem__(name, torch.zeros(shape))


def _pickled_medusa(ckpts):
    from safetensors.torch import load_file
    d = str(ckpts["root"] / "medusa-pickle")
    shutil.rmtree(d, ignore_errors=True)
    shutil.copytree(ckpts["dirs"]["medusa-fasterdecoding"], d)
    t = load_file(os.path.join(d, "medusa_lm_head.safetensors"))
    os.remove(os.path.join(d, "medusa_lm_head.safetensors"))
    torch.save(t, os.path.join(d, "medusa_lm_head.pt"))
    return d


DS = "deepseek-llama-own-embeddings-and-head"
# name -> (case whose checkpoint is edited, method, edit or a builder of the folder, what the error must name)
REFUSALS = {
    "mtp-deepseek-missing-tensor": (DS, "mtp", _pop("model.layers.8.mlp.down_proj.weight"),
                                    ["model.layers.8.mlp.down_proj.weight", "missing", "MTP module 0", "deepseek"]),
    "mtp-mimo-missing-attention-bias": ("mimo-qwen2-attention-bias", "mtp", _pop("model.mtp_layers.0.self_attn.q_proj.bias"),
                                        ["model.mtp_layers.0.self_attn.q_proj.bias", "missing", "MTP module 0", "mimo"]),
    "mtp-speculators-missing-input-proj": ("speculators-mtp-qwen3", "mtp", _pop("mtp_layers.0.input_proj.weight"),
                                           ["mtp_layers.0.input_proj.weight", "missing", "MTP module 0", "speculators"]),
    "mtp-deepseek-misshapen-eh-proj": (DS, "mtp", _put("model.layers.8.eh_proj.weight", (H, 3 * H)),
                                       ["model.layers.8.eh_proj.weight", "[32, 96]", "[32, 64]"]),
    # Qwen3-Next's gated attention doubles q_proj: refused by its shape
    "mtp-qwen3-next-gated-q-proj": ("qwen3-next-qwen3-2-layers", "mtp", _put("mtp.layers.0.self_attn.q_proj.weight", (128, H)),
                                    ["mtp.layers.0.self_attn.q_proj.weight", "[128, 32]", "[64, 32]"]),
    "mtp-deepseek-moe-tensor": (DS, "mtp", _put("model.layers.8.mlp.experts.0.gate_proj.weight", (64, H)),
                                ["model.layers.8.mlp.experts.0.gate_proj.weight", "mixture-of-experts"]),
    "mtp-qwen3-next-moe-tensor": ("qwen3-next-qwen3-2-layers", "mtp", _put("mtp.layers.1.mlp.experts.0.gate_proj.weight", (64, H)),
                                  ["mtp.layers.1.mlp.experts.0.gate_proj.weight", "mixture-of-experts"]),
    "mtp-deepseek-mla-tensor": (DS, "mtp", _put("model.layers.8.self_attn.kv_a_proj_with_mqa.weight", (40, H)),
                                ["model.layers.8.self_attn.kv_a_proj_with_mqa.weight", "multi-head latent attention"]),
    "mtp-speculators-mla-tensor": ("speculators-mtp-qwen3", "mtp", _put("mtp_layers.0.self_attn.kv_a_proj_with_mqa.weight", (40, H)),
                                   ["mtp_layers.0.self_attn.kv_a_proj_with_mqa.weight", "multi-head latent attention"]),
    "medusa-missing-bias": ("medusa-fasterdecoding", "medusa", _pop("2.0.linear.bias"),
                            ["2.0.linear.bias", "missing", "medusa layout"]),
    "medusa-vllm-misshapen-head": ("medusa-vllm-bias-shared-head-scaled", "medusa", _put("lm_heads.0.weight", (95, H)),
                                   ["lm_heads.0.weight", "[95, 32]", "[96, 32]"]),
    "medusa-vllm-unexpected-head": ("medusa-vllm-bias-shared-head-scaled", "medusa", _put("lm_heads.1.weight", (96, H)),
                                    ["lm_heads.1.weight", "unexpected", "shared projection"]),
    "medusa-pickle": ("medusa-fasterdecoding", "medusa", None, ["medusa_lm_head.pt", "safetensors"]),
    "mtp-tree-with-2-modules": ("deepseek-llama-2-modules", "mtp", None, ["2 modules", "chain"]),
}


@pytest.mark.parametrize("name", list(REFUSALS))
def test_refusal_names_tensor_and_feature(specdec, ckpts, name):
    case, method, edit, needles = REFUSALS[name]
    c = MTP_CASES.get(case) or MEDUSA_CASES[case]
    extra = []
    if name == "medusa-pickle":
        d = _pickled_medusa(ckpts)
    elif name == "mtp-tree-with-2-modules":
        d, extra = ckpts["dirs"][case], ["--tree", "dynamic"]
    else:
        weights = "medusa_lm_head.safetensors" if c.get("layout") == "medusa" else "model.safetensors"
        d = _edited_weights(ckpts, case, name, edit, weights)
    err = specdec.fails("generate", "--model", ckpts["targets"][c.get("arch", "llama")], "--method", method,
                        "--drafter", d, "--prompt-ids", "1,5,9", "--max-new-tokens", 4, *extra)
    print(f"{name}: {err.strip()}")
    missing = [n for n in needles if n not in err]
    assert not missing, f"{name}: the error does not name {missing}:\n{err}"
