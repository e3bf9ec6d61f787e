"""`pip install .` of the source tree into a fresh virtual environment, as a user would do it
(pyproject.toml, scikit-build-core), then decoding there gives what `specdec generate` gives.

The environment is made anew every run with Debian's /usr/bin/python3 -m venv, without the
system's packages: the build requirements (scikit-build-core, pybind11) and numpy come from PyPI.
Without network access the test fails and says so. The CMake build directory
(SPECDEC_PIP_BUILD_DIR, directly in the ctest build tree) is kept between runs and objects go
through ccache, so a second run rebuilds little. The compilers are the build tree's (CC, CXX from
its CMakeCache.txt) and the directory sits as deep as the build tree's own object directories, so
that most objects have the same ccache key as the build tree's: a first run on a fresh machine
reuses what the project's build compiled rather than compiling everything again.

  SPECDEC_BUILD_DIR=build SPECDEC_PIP_BUILD_DIR=build/pip-build /usr/bin/python3 -m pytest tests/python/test_pip_install.py
"""
import json
import os
import shutil
import subprocess
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.path.abspath(os.environ.get("SPECDEC_BUILD_DIR", os.path.join(ROOT, "build")))
PIP_BUILD = os.path.abspath(os.environ.get("SPECDEC_PIP_BUILD_DIR", os.path.join(BUILD, "pip-build")))
VENV = os.path.join(BUILD, "pip-venv")
MODELS = os.path.join(ROOT, "models")
PROMPT = "And God said unto Moses,"


def cli_generate(method, extra):
    args = [os.path.join(BUILD, "specdec"), "generate", "--model", os.path.join(MODELS, "target"), "--prompt", PROMPT,
            "--method", method, "--max-new-tokens", "20", "--json", *extra]
    r = subprocess.run(args, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, f"{' '.join(args)}: {r.stderr}"
    return json.loads(r.stdout)


def build_tree_compilers():
    """CC and CXX as the build tree configured them (the same ccache keys as its objects)."""
    env = {}
    with open(os.path.join(BUILD, "CMakeCache.txt")) as f:
        for line in f:
            for var, name in (("CC", "CMAKE_C_COMPILER:"), ("CXX", "CMAKE_CXX_COMPILER:")):
                if line.startswith(name):
                    env[var] = line.rstrip("\n").split("=", 1)[1]
    return env


def test_pip_install_into_a_fresh_venv_decodes_as_the_command_line():
    shutil.rmtree(VENV, ignore_errors=True)
    subprocess.run(["/usr/bin/python3", "-m", "venv", VENV], check=True, timeout=120)
    python = os.path.join(VENV, "bin", "python")
    log = os.path.join(BUILD, "pip-install.log")
    start = time.monotonic()
    with open(log, "w") as out:
        r = subprocess.run([python, "-m", "pip", "install", "--disable-pip-version-check", "--no-input",
                            f"--config-settings=build-dir={PIP_BUILD}", ROOT],
                           stdout=out, stderr=subprocess.STDOUT, timeout=2400, cwd=BUILD,
                           env=dict(os.environ, **build_tree_compilers()))
    took = time.monotonic() - start
    with open(log) as f:
        text = f.read()
    if r.returncode != 0:
        offline = any(s in text for s in ("Could not find a version that satisfies", "NewConnectionError",
                                          "Temporary failure in name resolution", "Network is unreachable",
                                          "No matching distribution found"))
        hint = ("pip could not reach PyPI: `pip install .` needs the network for the build requirements "
                "(scikit-build-core, pybind11) and for numpy. " if offline else "")
        raise AssertionError(f"{hint}pip install . into {VENV} failed (exit {r.returncode}; whole log: {log}):\n"
                             + text[-6000:])
    print(f"pip install . took {took:.1f} s")

    r = subprocess.run([python, os.path.join(ROOT, "tests", "python", "pip_install_check.py"), MODELS, PROMPT],
                       capture_output=True, text=True, timeout=300, cwd=VENV,
                       env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
    assert r.returncode == 0, f"import specdec in the venv failed:\n{r.stderr}"
    got = json.loads(r.stdout)
    site = os.path.join(VENV, "lib")
    assert got["module"].startswith(site), f"specdec._core came from {got['module']}, not from the venv's site-packages"

    expected = {
        "sequential": cli_generate("sequential", []),
        "eagle3": cli_generate("eagle3", ["--drafter", os.path.join(MODELS, "eagle3"), "--k", "4"]),
        "draft_sample": cli_generate("draft", ["--drafter", os.path.join(MODELS, "draft"), "--k", "3", "--sampling", "sample",
                                               "--temperature", "0.8", "--seed", "11"]),
    }
    for name, j in expected.items():
        run = got["runs"][name]
        assert run["tokens"] == j["output_tokens"], f"{name}: the pip-installed module's tokens differ from specdec generate"
        assert run["text"] == j["output_text"], name
    assert len(set(tuple(got["runs"][n]["tokens"]) for n in got["runs"])) >= 2, "the three runs should not all agree"
