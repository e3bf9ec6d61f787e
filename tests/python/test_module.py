"""The Python module `specdec` (python/, docs/python.md) against the command line and itself.

Forward logits and hidden states equal `specdec forward`'s bit for bit; a forward in pieces over
a KV cache equals one forward; a tree mask gives the rows of separate chains; every method through
specdec.generate equals `specdec generate --json`; greedy and coupled speculative decoding equal
sequential decoding; record -> validate passes; user errors raise specdec.Error; the package
imports from the build tree and from an install prefix.

Run (ctest does this, label cpu):
  PYTHONPATH=build/python /usr/bin/python3 -m pytest tests/python/test_module.py
SPECDEC_BUILD_DIR (default build/) names the build tree holding the specdec binary.
"""
import json
import os
import subprocess
import sys

import h5py
import numpy as np
import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.path.abspath(os.environ.get("SPECDEC_BUILD_DIR", os.path.join(ROOT, "build")))
SPECDEC = os.path.join(BUILD, "specdec")
MODELS = os.path.join(ROOT, "models")
TARGET = os.path.join(MODELS, "target")
DRAFTERS = {"draft": "draft", "eagle": "eagle1", "eagle3": "eagle3", "peagle": "peagle"}

# The cuda backend runs on the CPU grid emulator here (chosen once per process, before any use).
os.environ.setdefault("SPECDEC_CUDA_DEVICE", "emulator")

import specdec  # noqa: E402


def cli(*args):
    r = subprocess.run([SPECDEC, *args], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return r.stdout


def cli_generate(prompt, method, extra=()):
    args = ["generate", "--model", TARGET, "--prompt-ids", ",".join(map(str, prompt)), "--method", method, "--json",
            *extra]
    if method in DRAFTERS:
        args += ["--drafter", os.path.join(MODELS, DRAFTERS[method])]
    return json.loads(cli(*args))


@pytest.fixture(scope="module")
def target():
    return specdec.load_model(TARGET)


@pytest.fixture(scope="module")
def drafters(target):
    return {m: specdec.load_drafter(os.path.join(MODELS, d), target) for m, d in DRAFTERS.items()}


@pytest.fixture(scope="module")
def prompt(target):
    return target.tokenizer.encode("And God said unto Moses,")


# ---- the package ----------------------------------------------------------------------------------

def test_imports_from_the_build_tree():
    assert os.path.dirname(specdec._core.__file__) == os.path.join(BUILD, "python", "specdec")
    assert issubclass(specdec.Error, RuntimeError)
    assert "reference" in specdec.backends()


def test_model_properties(target):
    assert target.config["vocab_size"] == target.vocab_size == 259
    assert target.config["num_hidden_layers"] == target.num_layers
    assert target.fingerprint.startswith("fnv1a64:")
    assert target.backend == "reference"
    tok = target.tokenizer
    ids = tok.encode("In the beginning")
    assert ids[0] == tok.bos_id
    assert tok.decode(ids, skip_special_tokens=True) == "In the beginning"
    assert tok.decode_bytes(ids[1:]) == b"In the beginning"
    assert len(tok) <= target.vocab_size


def test_drafter_kinds_are_detected(drafters, target):
    assert {m: d.kind for m, d in drafters.items()} == {
        "draft": "draft_lm", "eagle": "eagle1", "eagle3": "eagle3", "peagle": "peagle"}
    for m, d in drafters.items():
        assert d.method == m
        assert d.target is target
        assert d.fingerprint.startswith("fnv1a64:")
        assert isinstance(d.config, dict)


# ---- forwards ---------------------------------------------------------------------------------------

def test_forward_equals_specdec_forward(target, prompt, tmp_path):
    out = tmp_path / "f.h5"
    cli("forward", "--model", TARGET, "--prompt-ids", ",".join(map(str, prompt)), "--out", str(out))
    logits, hidden = target.forward(prompt, hidden_states=True)
    with h5py.File(out, "r") as f:
        assert logits.dtype == np.float32 and hidden.dtype == np.float32
        assert logits.shape == f["logits"].shape
        assert hidden.shape == f["hidden"].shape == (target.num_layers + 1, len(prompt), target.hidden_size)
        assert np.array_equal(logits, f["logits"][()])
        assert np.array_equal(hidden, f["hidden"][()])
    assert np.array_equal(target.forward(np.asarray(prompt, dtype=np.int32)), logits)


def test_forward_cpu_backend_is_bitwise_the_reference(target, prompt):
    if "cpu" not in specdec.backends():
        pytest.skip("this build has no cpu backend")
    cpu = specdec.load_model(TARGET, backend="cpu")
    assert cpu.backend == "cpu"
    assert np.array_equal(cpu.forward(prompt), target.forward(prompt))


def test_forward_cuda_backend_is_bitwise_the_reference(target, prompt):
    if "cuda" not in specdec.backends():
        pytest.skip("this build has no cuda backend")
    cuda = specdec.load_model(TARGET, backend="cuda")
    logits, hidden = cuda.forward(prompt[:8], hidden_states=True)
    expected_logits, expected_hidden = target.forward(prompt[:8], hidden_states=True)
    assert np.array_equal(logits, expected_logits) and np.array_equal(hidden, expected_hidden)


def test_incremental_forward_equals_one_forward(target, prompt):
    full = target.forward(prompt)
    cache = target.new_cache(len(prompt) + 4)
    rows = [target.forward(prompt[:5], cache=cache)]
    assert cache.length == 5
    for t in prompt[5:-3]:
        rows.append(target.forward([t], cache=cache))
    rows.append(target.forward(prompt[-3:], cache=cache))
    assert len(cache) == len(prompt)
    assert np.array_equal(np.concatenate(rows), full)


def test_truncate_rolls_back_rejected_tokens(target, prompt):
    full = target.forward(prompt)
    cache = target.new_cache(len(prompt))
    target.forward(prompt[:6], cache=cache)
    target.forward([7, 8, 9], cache=cache)  # a rejected draft
    cache.truncate(6)
    assert np.array_equal(target.forward(prompt[6:], cache=cache), full[6:])


def test_explicit_positions_equal_the_default(target, prompt):
    cache = target.new_cache(len(prompt))
    a = target.forward(prompt[:4], cache=cache)
    b = target.forward(prompt[4:], positions=np.arange(4, len(prompt)), cache=cache)
    assert np.array_equal(np.concatenate([a, b]), target.forward(prompt))


def test_tree_mask_gives_the_rows_of_separate_chains(target, prompt):
    # A tree over the prefix: nodes 0 and 1 hang off the prefix, 2 under 0, 3 under 2, 4 under 1.
    tokens = [72, 101, 32, 116, 111]
    parents = [-1, -1, 0, 2, 1]
    depth = [0, 0, 1, 2, 1]
    P, T = len(prompt), len(tokens)
    mask = np.zeros((T, P + T), dtype=bool)
    mask[:, :P] = True
    for t in range(T):
        n = t
        while n >= 0:
            mask[t, P + n] = True
            n = parents[n]
    cache = target.new_cache(P + T)
    target.forward(prompt, cache=cache)
    tree = target.forward(tokens, positions=[P + d for d in depth], mask=mask, cache=cache)
    for t in range(T):
        path, n = [], t
        while n >= 0:
            path.insert(0, tokens[n])
            n = parents[n]
        chain = target.forward(list(prompt) + path)  # prompt is an int32 array: + would add
        assert np.array_equal(tree[t], chain[-1]), f"tree node {t}"
    # logit_rows picks rows in the order asked.
    cache.truncate(P)
    some = target.forward(tokens, positions=[P + d for d in depth], mask=mask, cache=cache, logit_rows=[3, 0])
    assert np.array_equal(some, tree[[3, 0]])


# ---- decoding ---------------------------------------------------------------------------------------

CASES = [
    ("sequential", {}), ("draft", {"k": 3}), ("eagle", {}), ("eagle", {"tree": "dynamic", "depth": 4, "tree_top_k": 4,
                                                                          "total_tokens": 12}),
    ("eagle3", {}), ("eagle3", {"tree": "mc_sim_7b_63"}), ("peagle", {"k": 3}),
    # Draft-free: no drafter; parameters ride with the name as on the command line.
    ("ngram,n_min=1,n_max=3", {"k": 5}), ("prompt-lookup", {}), ("ngram-tree,nodes=6", {"k": 4}),
    ("suffix,min_prob=0.05", {"k": 6}), ("suffix-tree", {"k": 6}),
]


def cli_extra(kw):
    out = []
    for key, value in kw.items():
        out += ["--" + key.replace("_", "-"), str(value)]
    return out


@pytest.mark.parametrize("method,kw", CASES, ids=[f"{m}-{kw.get('tree', 'chain')}" for m, kw in CASES])
def test_generate_equals_the_command_line(target, drafters, prompt, method, kw):
    g = specdec.generate(target, prompt, method=method, drafter=drafters.get(method), max_new_tokens=24, **kw)
    j = cli_generate(prompt, method, ["--max-new-tokens", "24", *cli_extra(kw)])
    if method != "sequential":  # every method emits what sequential decoding emits
        assert np.array_equal(g.tokens, specdec.generate(target, prompt, method="sequential", max_new_tokens=24).tokens)
    assert g.tokens.dtype == np.int32 and g.prompt_tokens.dtype == np.int32
    assert g.tokens.tolist() == j["output_tokens"]
    assert g.stop_reason == j["stop_reason"]
    assert g.prompt_tokens.tolist() == j["prompt_tokens"]
    assert g.text == j["output_text"]
    stats = g.stats
    assert stats == {k: v for k, v in j["stats"].items()}
    assert g.acceptance_length == j["stats"]["acceptance_length"]
    assert g.target_forwards == j["stats"]["target_forwards"]


def test_generate_samples_as_the_command_line(target, drafters, prompt):
    kw = dict(sampling="sample", temperature=0.8, top_k=40, top_p=0.95, seed=7, max_new_tokens=20)
    g = specdec.generate(target, prompt, method="eagle3", drafter=drafters["eagle3"], **kw)
    j = cli_generate(prompt, "eagle3", cli_extra(kw))
    assert g.tokens.tolist() == j["output_tokens"]
    assert g.stats == j["stats"]


def test_generate_takes_a_text_prompt_and_a_drafter_path(target, prompt):
    by_text = specdec.generate(target, "And God said unto Moses,", method="eagle3",
                               drafter=os.path.join(MODELS, "eagle3"), max_new_tokens=10)
    assert np.array_equal(by_text.prompt_tokens, prompt)
    assert np.array_equal(by_text.tokens, specdec.generate(target, prompt, max_new_tokens=10).tokens)


@pytest.mark.parametrize("sampling", ["greedy", "coupled"])
def test_speculative_decoding_is_lossless(target, drafters, prompt, sampling):
    kw = dict(sampling=sampling, temperature=0.7, seed=3, max_new_tokens=40, ignore_eos=True)
    sequential = specdec.generate(target, prompt, **kw).tokens
    assert len(sequential) == 40
    for method, d in drafters.items():
        g = specdec.generate(target, prompt, drafter=d, **kw)  # the method is the drafter's
        assert np.array_equal(g.tokens, sequential), method
        assert g.target_forwards < 41 or method == "draft"
    g = specdec.generate(target, prompt, method="eagle", drafter=drafters["eagle"], tree="dynamic", **kw)
    assert np.array_equal(g.tokens, sequential)


# ---- traces -----------------------------------------------------------------------------------------

def test_record_then_validate(target, drafters, prompt, tmp_path):
    out = str(tmp_path / "run.h5")
    summary = specdec.record(target, prompt, out=out, method="eagle3", drafter=drafters["eagle3"],
                             sampling="sample", seed=5, max_new_tokens=16, logits="full")
    assert summary["trace"] == out and summary["steps"] > 0
    with h5py.File(out, "r") as f:
        assert f.attrs["format"] in (b"specdec-trace", "specdec-trace")
        assert f.attrs["method"] in (b"eagle3", "eagle3")
    assert np.array_equal(summary["output_tokens"], specdec.generate(target, prompt, method="eagle3", drafter=drafters["eagle3"],
                                                                     sampling="sample", seed=5, max_new_tokens=16).tokens)
    report = specdec.validate(target, trace=out)
    assert report["passed"] is True, report
    if "cpu" in specdec.backends():
        assert specdec.validate(TARGET, trace=out, backend="cpu")["passed"] is True
        report = specdec.validate(target, prompt, backend="cpu", against="reference", method="peagle",
                                  drafter=drafters["peagle"], k=3, max_new_tokens=12)
        assert report["passed"] is True, report


def test_record_topk_logits(target, prompt, tmp_path):
    out = str(tmp_path / "seq.h5")
    s = specdec.record(TARGET, prompt, out=out, logits="topk", logit_top_k=5, max_new_tokens=6)
    assert len(s["output_tokens"]) == 6
    assert specdec.validate(target, trace=out)["passed"] is True


GOLDEN = [("sequential_prose_greedy", None), ("draft_prose_sample", "draft"), ("eagle-chain_code_coupled", "eagle1"),
          ("eagle-dynamic_code_greedy", "eagle1"), ("eagle3-chain_code_sample", "eagle3"),
          ("peagle-chain_prose_coupled", "peagle"), ("peagle-tree_code_sample", "peagle")]


@pytest.mark.parametrize("name,drafter", GOLDEN, ids=[g[0] for g in GOLDEN])
def test_golden_traces_validate(target, name, drafter):
    trace = os.path.join(ROOT, "traces", "golden", name + ".h5")
    backend = "cpu" if "cpu" in specdec.backends() and "sample" in name else "reference"
    report = specdec.validate(target, trace=trace, backend=backend,
                              drafter=os.path.join(MODELS, drafter) if drafter else None)
    assert report["passed"] is True and report["result"] == "pass", report
    assert report["steps_compared"] == report["reference_steps"] > 0


def test_generate_on_the_cpu_backend_equals_the_reference(target, prompt):
    if "cpu" not in specdec.backends():
        pytest.skip("this build has no cpu backend")
    cpu = specdec.load_model(TARGET, backend="cpu")
    for method, d in DRAFTERS.items():
        kw = dict(method=method, sampling="coupled", temperature=0.8, seed=1, max_new_tokens=16)
        a = specdec.generate(cpu, prompt, drafter=specdec.load_drafter(os.path.join(MODELS, d), cpu), **kw)
        b = specdec.generate(target, prompt, drafter=os.path.join(MODELS, d), **kw)
        assert np.array_equal(a.tokens, b.tokens) and a.stats == b.stats, method


# ---- errors -----------------------------------------------------------------------------------------

def raises(fn, *words):
    with pytest.raises(specdec.Error) as e:
        fn()
    message = str(e.value)
    for w in words:
        assert w in message, message
    return message


def test_user_errors_raise_specdec_error(target, drafters, prompt, tmp_path):
    raises(lambda: specdec.load_model(str(tmp_path / "nowhere")), "nowhere")
    raises(lambda: specdec.load_model(TARGET, backend="tpu"), "tpu")
    raises(lambda: specdec.load_drafter(str(tmp_path), target), str(tmp_path))
    raises(lambda: specdec.load_drafter(os.path.join(MODELS, "eagle1"), target, method="eagle3"), "eagle3")
    # forward inputs
    raises(lambda: target.forward([1.5, 2.0]), "tokens", "integers", "float64")
    raises(lambda: target.forward([[1, 2]]), "tokens", "1-D")
    raises(lambda: target.forward("abc"), "tokens", "string")
    raises(lambda: target.forward([]), "tokens", "empty")
    raises(lambda: target.forward([1, 999]), "tokens[1]", "vocabulary")
    raises(lambda: target.forward([1, 2], positions=[0]), "positions", "1 entries for 2 tokens")
    raises(lambda: target.forward([1, 2], positions=[0, -1]), "positions[1]")
    raises(lambda: target.forward([1, 2], positions=[0.0, 1.0]), "positions", "integers")
    raises(lambda: target.forward([1, 2], mask=np.ones((2, 2), dtype=np.int32)), "mask", "boolean")
    raises(lambda: target.forward([1, 2], mask=np.ones((2, 3), dtype=bool)), "mask", "(2, 3)", "expected (2, 2)")
    raises(lambda: target.forward([1, 2], mask=np.array([[True, False], [False, False]])), "mask row 1")
    cache = target.new_cache(3)
    target.forward([1, 2], cache=cache)
    raises(lambda: target.forward([1, 2], cache=cache), "do not fit")
    raises(lambda: target.forward([1], cache=cache, mask=np.ones((1, 1), dtype=bool)), "expected (1, 3)")
    raises(lambda: cache.truncate(5), "truncate")
    other = specdec.load_model(os.path.join(MODELS, "draft"))
    raises(lambda: other.forward([1], cache=cache), "another model")
    raises(lambda: target.new_cache(0), "capacity")
    raises(lambda: target.forward([1], logit_rows=[1]), "logit_rows")
    # decoding options
    raises(lambda: specdec.generate(target, prompt, method="medusa"), "medusa")
    message = raises(lambda: specdec.generate(target, prompt, method="eagle3"), "method eagle3 needs a drafter", "drafter=",
                     "specdec.load_drafter(path, model)")
    assert "--drafter" not in message, message
    raises(lambda: specdec.generate(target, prompt, method="eagle3", drafter=drafters["eagle"]), "eagle3", "eagle1")
    raises(lambda: specdec.generate(other, prompt, drafter=drafters["eagle3"]), "another target")
    raises(lambda: specdec.generate(target, prompt, drafter=drafters["eagle3"], k=0), "k")
    raises(lambda: specdec.generate(target, prompt, sampling="nucleus"), "nucleus")
    raises(lambda: specdec.generate(target, prompt, sampling="sample", temperature=0.0), "temperature")
    raises(lambda: specdec.generate(target, prompt, max_new_tokens=-1), "max-new-tokens")
    raises(lambda: specdec.generate(target, []), "empty")
    raises(lambda: specdec.generate(target, [1, 300]), "prompt[1]")
    raises(lambda: specdec.generate(target, prompt, drafter=3), "drafter")
    raises(lambda: specdec.generate(target, prompt, drafter=os.path.join(MODELS, "eagle3")), "method=")
    # traces
    raises(lambda: specdec.record(target, prompt, out=str(tmp_path / "r.h5"), logits="half"), "logits")
    raises(lambda: specdec.record(target, prompt, out=str(tmp_path / "r.h5"), method="medusa"), "medusa")
    raises(lambda: specdec.record(target, None, out=str(tmp_path / "r.h5")), "prompt")
    raises(lambda: specdec.record(target, prompt, out=str(tmp_path / "no" / "r.h5")), "r.h5")
    raises(lambda: specdec.validate(target, trace=str(tmp_path / "missing.h5")), "missing.h5")
    raises(lambda: specdec.validate(target), "prompt")
    raises(lambda: specdec.validate(target, prompt, against="tpu"), "tpu")


def test_a_mistyped_keyword_is_named_with_the_closest_one(target, prompt):
    for call, wrong, right in [(lambda: specdec.generate(target, prompt, max_tokens=4), "max_tokens", "max_new_tokens"),
                               (lambda: specdec.generate(target, prompt, temprature=0.5), "temprature", "temperature"),
                               (lambda: specdec.load_model(TARGET, backnd="cpu"), "backnd", "backend"),
                               (lambda: specdec.record(target, prompt, outt="x.h5"), "outt", "out")]:
        with pytest.raises(TypeError) as e:
            call()
        message = str(e.value)
        assert f"unexpected keyword argument '{wrong}'; did you mean '{right}'?" in message, message
        assert "incompatible function arguments" not in message, message
    with pytest.raises(TypeError) as e:  # nothing close: the accepted names are listed
        specdec.generate(target, prompt, zzz=1)
    assert "'zzz' (it takes" in str(e.value) and "max_new_tokens" in str(e.value), str(e.value)
    assert len(specdec.generate(target, prompt, max_new_tokens=2).tokens) == 2  # known keywords pass through


# ---- installation -----------------------------------------------------------------------------------

def cmake_cache(name):
    with open(os.path.join(BUILD, "CMakeCache.txt")) as f:
        for line in f:
            if line.startswith(name + ":"):
                return line.rstrip("\n").split("=", 1)[1]
    raise AssertionError(f"{name} is not in {BUILD}/CMakeCache.txt")


def test_install_dir_is_on_the_interpreters_path():
    # `cmake --install` with the configured prefix puts the package where that python3 looks.
    prefix, where = cmake_cache("CMAKE_INSTALL_PREFIX"), cmake_cache("SPECDEC_PYTHON_INSTALL_DIR_IN_EFFECT")
    r = subprocess.run(["/usr/bin/python3", "-c", "import site, sys; print('\\n'.join(sys.path + [site.getusersitepackages()]))"],
                       capture_output=True, text=True, timeout=60)
    searched = {os.path.realpath(p) for p in r.stdout.splitlines() if p}
    assert os.path.realpath(os.path.join(prefix, where)) in searched, (prefix, where, sorted(searched))


def test_installed_package_imports(tmp_path, prompt):
    prefix = tmp_path / "prefix"
    r = subprocess.run(["cmake", "--install", BUILD, "--prefix", str(prefix), "--component", "python"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    site = prefix / cmake_cache("SPECDEC_PYTHON_INSTALL_DIR_IN_EFFECT")
    assert (site / "specdec" / "__init__.py").exists()
    code = ("import specdec, sys; m = specdec.load_model(sys.argv[1]); print(specdec._core.__file__); "
            "print(int(m.forward([int(x) for x in sys.argv[2].split(',')])[-1].argmax()))")
    env = dict(os.environ, PYTHONPATH=str(site))
    r = subprocess.run([sys.executable, "-c", code, TARGET, ",".join(map(str, prompt))], capture_output=True, text=True,
                       env=env, cwd=str(tmp_path), timeout=60)
    assert r.returncode == 0, r.stderr
    where, argmax = r.stdout.splitlines()
    assert where.startswith(str(site))
    assert int(argmax) == int(specdec.load_model(TARGET).forward(prompt)[-1].argmax())
