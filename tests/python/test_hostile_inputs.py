"""Hostile arguments to the Python module (docs/reliability.md): each raises specdec.Error where it
once crashed the interpreter or allocated without bound. The crash cases run in a child
interpreter with a timeout, so a regression fails its test instead of the whole run.

Run (ctest does this, label cpu):
  PYTHONPATH=build/python /usr/bin/python3 -m pytest tests/python/test_hostile_inputs.py
"""
import os
import subprocess
import sys

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
MODELS = os.path.join(ROOT, "models")
TARGET = os.path.join(MODELS, "target")

import specdec  # noqa: E402


def run_child(code):
    """Runs `code` in a fresh interpreter (same module path); returns (exit code, stderr)."""
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=dict(os.environ))
    return r.returncode, r.stderr


@pytest.fixture(scope="module")
def target():
    return specdec.load_model(TARGET)


def test_set_num_threads_refuses_a_hundred_thousand_threads_without_killing_the_interpreter():
    code = (
        "import specdec\n"
        "try:\n"
        "    specdec.set_num_threads(100000)\n"
        "except specdec.Error as e:\n"
        "    print('refused:', e)\n"
        "    raise SystemExit(3)\n"
    )
    rc, err = run_child(code)
    assert rc == 3, f"expected specdec.Error (exit 3), got exit {rc}; stderr:\n{err}"


def test_set_num_threads_error_names_the_limit():
    with pytest.raises(specdec.Error, match=r"more than specdec supports \(1024\)"):
        specdec.set_num_threads(1025)
    specdec.set_num_threads(1)


def test_new_cache_is_bounded_by_the_models_context(target):
    context = target.max_position_embeddings
    with pytest.raises(specdec.Error, match=rf"more than the model's context \(max_position_embeddings {context}\)"):
        target.new_cache(capacity=context + 1)
    with pytest.raises(specdec.Error, match="more than the model's context"):
        target.new_cache(capacity=2**31 - 1)
    assert target.new_cache(capacity=context).capacity == context


def test_a_deeply_nested_tree_is_an_error_not_a_crash():
    code = (
        "import specdec\n"
        f"t = specdec.load_model({TARGET!r})\n"
        "try:\n"
        f"    specdec.generate(t, 'In the beginning', method='eagle', drafter={os.path.join(MODELS, 'eagle1')!r},\n"
        "                     tree='[' * 100000 + '0' + ']' * 100000, max_new_tokens=2)\n"
        "except specdec.Error as e:\n"
        "    assert 'nests deeper than 128 levels' in str(e), str(e)\n"
        "    raise SystemExit(3)\n"
    )
    rc, err = run_child(code)
    assert rc == 3, f"expected specdec.Error (exit 3), got exit {rc}; stderr:\n{err[-2000:]}"
