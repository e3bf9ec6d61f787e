"""specdec.generate_batch (python/, docs/python.md): a list of prompts decoded as one batched run.

Every request equals specdec.generate of its prompt (greedy, every method with a drafter given as
a Drafter or a path) and, under coupled sampling, decoding it alone with its sequence id (request
0 is what generate draws); the summary agrees with the requests; bad arguments raise specdec.Error.

Run (ctest does this, label cpu):
  PYTHONPATH=build/python /usr/bin/python3 -m pytest tests/python/test_batch.py
"""
import os

import numpy as np
import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
MODELS = os.path.join(ROOT, "models")
TARGET = os.path.join(MODELS, "target")

import specdec  # noqa: E402

PROMPTS = ["And God said, Let there be", "def main():\n    ", "In the beginning", "import os\nimport"]


@pytest.fixture(scope="module")
def target():
    return specdec.load_model(TARGET)


@pytest.fixture(scope="module")
def eagle(target):
    return specdec.load_drafter(os.path.join(MODELS, "eagle1"), target)


@pytest.mark.parametrize("method,drafter", [("sequential", None), ("eagle", "eagle1"), ("draft", "draft")])
@pytest.mark.parametrize("concurrency", [1, 3])
def test_every_request_equals_generate(target, method, drafter, concurrency):
    kw = dict(method=method, k=3, max_new_tokens=10, ignore_eos=True)
    if drafter:
        kw["drafter"] = os.path.join(MODELS, drafter)
    out = specdec.generate_batch(target, PROMPTS, concurrency=concurrency, **kw)
    assert len(out["requests"]) == len(PROMPTS)
    for i, (prompt, r) in enumerate(zip(PROMPTS, out["requests"])):
        alone = specdec.generate(target, prompt, **kw)
        assert r["request"] == i and r["sequence"] == i
        assert r["output_tokens"].dtype == np.int32
        assert np.array_equal(r["output_tokens"], alone.tokens), (method, concurrency, i)
        assert r["output_text"] == alone.text
        assert r["stop_reason"] == alone.stop_reason
    assert out["summary"]["concurrency"] == concurrency
    assert out["summary"]["max_in_flight_seen"] <= concurrency


def test_sampled_requests_decode_as_alone(target, eagle):
    kw = dict(k=3, max_new_tokens=10, ignore_eos=True, sampling="coupled", temperature=0.8, seed=5)
    ids = [target.tokenizer.encode(p) for p in PROMPTS]
    out = specdec.generate_batch(target, ids, concurrency=2, drafter=eagle, **kw)
    # Request 0 has sequence id 0, as generate; sequential coupled sampling is what every method
    # reproduces, so each request's tokens are those of sequential decoding with its sequence id.
    assert np.array_equal(out["requests"][0]["output_tokens"], specdec.generate(target, ids[0], drafter=eagle, **kw).tokens)
    seq = specdec.generate_batch(target, ids, concurrency=4, method="sequential", **kw)
    for a, b in zip(out["requests"], seq["requests"]):
        assert np.array_equal(a["output_tokens"], b["output_tokens"])
    # Another concurrency, the same tokens.
    again = specdec.generate_batch(target, ids, concurrency=1, drafter=eagle, **kw)
    assert [r["output_tokens"].tolist() for r in again["requests"]] == [r["output_tokens"].tolist() for r in out["requests"]]


def test_summary_agrees_with_the_requests(target, eagle):
    out = specdec.generate_batch(target, PROMPTS * 2, concurrency=3, drafter=eagle, k=3, max_new_tokens=8,
                                 ignore_eos=True)
    s, reqs = out["summary"], out["requests"]
    assert s["requests"] == 8
    assert s["generated_tokens"] == sum(r["generated_tokens"] for r in reqs) == 64
    assert s["sequence_steps"] == sum(r["steps"] for r in reqs) == sum(s["accepted_per_step"])
    t = s["timing"]
    assert t["throughput_tok_s"] == pytest.approx(64 / t["wall_s"])
    for key in ("ttft_s", "tpot_s", "queue_s"):
        assert set(t[key]) == {"n", "mean", "p50", "p90", "p99"}
        assert t[key]["p50"] <= t[key]["p99"]
    for r in reqs:
        assert r["timing"]["ttft_s"] >= 0 and r["timing"]["queue_s"] >= 0
    assert s["acceptance_length"] >= 1 and len(s["acceptance_by_position"]) == 3
    assert s["method"]["method"] == "eagle" and s["rate"] is None


def test_poisson_arrivals(target):
    out = specdec.generate_batch(target, PROMPTS, concurrency=2, rate=5000.0, seed=2, max_new_tokens=3)
    arrivals = [r["arrival_s"] for r in out["requests"]]
    assert arrivals == sorted(arrivals) and arrivals[0] > 0
    assert out["summary"]["rate"] == 5000.0
    again = specdec.generate_batch(target, PROMPTS, concurrency=2, rate=5000, seed=2, max_new_tokens=3)
    assert [r["arrival_s"] for r in again["requests"]] == arrivals


def test_bad_arguments_raise_specdec_error(target):
    with pytest.raises(specdec.Error, match=r"concurrency must be in \[1, 4096\]"):
        specdec.generate_batch(target, PROMPTS, concurrency=0)
    with pytest.raises(specdec.Error, match="concurrency must be in"):
        specdec.generate_batch(target, PROMPTS, concurrency=5000)
    with pytest.raises(specdec.Error, match="arrival rate must be"):
        specdec.generate_batch(target, PROMPTS, rate=0)
    with pytest.raises(specdec.Error, match="rate must be a number"):
        specdec.generate_batch(target, PROMPTS, rate="fast")
    with pytest.raises(specdec.Error, match="prompts is empty"):
        specdec.generate_batch(target, [])
    with pytest.raises(specdec.Error, match="prompts must be a list"):
        specdec.generate_batch(target, "one string")
    with pytest.raises(specdec.Error, match=r"prompts\[1\]: .*not a token id"):
        specdec.generate_batch(target, [[1, 2], [1, 100000]])
    with pytest.raises(specdec.Error, match="method eagle needs a drafter: drafter="):
        specdec.generate_batch(target, PROMPTS, method="eagle")
