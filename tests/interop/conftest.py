"""Shared fixtures of the cross-library tests: where the specdec binary is, how to run it, and a
header naming the library versions every result was obtained with."""
import json
import os
import subprocess

import pytest


def pytest_report_header(config):
    import importlib.metadata as md
    names = ["torch", "transformers", "tokenizers", "speculators", "safetensors", "sentencepiece", "numpy", "h5py"]
    return "libraries: " + ", ".join(f"{n} {md.version(n)}" for n in names)


@pytest.fixture(scope="session")
def specdec_bin():
    path = os.environ.get("SPECDEC_BIN")
    if not path or not os.access(path, os.X_OK):
        pytest.fail("SPECDEC_BIN must name the built specdec binary (ctest sets it)")
    return path


class Specdec:
    def __init__(self, binary):
        self.binary = binary

    def run(self, *args, check=True):
        """Runs specdec with the given arguments; returns the CompletedProcess (text)."""
        r = subprocess.run([self.binary, *map(str, args)], capture_output=True, text=True)
        if check and r.returncode != 0:
            raise AssertionError(f"specdec {' '.join(map(str, args))} exited {r.returncode}:\n{r.stderr}")
        return r

    def json(self, *args):
        """Runs specdec with --json and parses its output."""
        return json.loads(self.run(*args, "--json").stdout)

    def fails(self, *args):
        """Runs specdec expecting a clear failure; returns its stderr."""
        r = self.run(*args, check=False)
        assert r.returncode != 0, f"specdec {' '.join(map(str, args))} succeeded, expected an error"
        assert "terminate" not in r.stderr and "Aborted" not in r.stderr, r.stderr
        return r.stderr


@pytest.fixture(scope="session")
def specdec(specdec_bin):
    return Specdec(specdec_bin)
