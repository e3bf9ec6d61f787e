#!/usr/bin/env bash
# Installs every Debian package specdec needs. Idempotent: packages already present are skipped,
# and apt is only consulted when something is missing.
set -euo pipefail

packages=(
  g++ cmake make pkg-config
  # Compiler cache: a fresh clone on the same machine (CI's) reuses earlier builds' objects.
  ccache
  libeigen3-dev libhdf5-dev libboost-program-options-dev nlohmann-json3-dev libgtest-dev
  # Tokenizers of real checkpoints: Oniguruma (tokenizer.json regexes), ICU, SentencePiece.
  libonig-dev libicu-dev libsentencepiece-dev
  python3 python3-numpy python3-h5py python3-matplotlib python3-venv
  # The Python module (python/): pybind11 and the headers it builds against; pytest runs its tests.
  python3-dev python3-pybind11 python3-pytest
  # The training recipes (experiments/train; their smoke test is in the cpu suite): PyTorch with a
  # threaded OpenBLAS (the reference BLAS trains ~15x slower) and the corpus's King James Bible.
  python3-torch libopenblas0-pthread bible-kjv bible-kjv-text
  # The test of `specdec explain --html` opens the page in a headless Chromium (a font for its
  # screenshots).
  chromium fonts-dejavu-core
  # The libFuzzer harnesses (scripts/fuzz.sh) build with clang and its fuzzer/sanitizer runtimes:
  # version 16 (Debian 12's newest), as two harnesses need std::source_location (clang >= 15).
  clang-16 libclang-rt-16-dev
  # ... and its llvm-symbolizer: fuzz.sh tells a sanitizer report inside libhdf5 (contained) from
  # one in specdec's code by the symbolized frames, and clang 16's runtime looks for version 16's.
  llvm-16
  # The test of `specdec sweep` on Slurm starts a private single-node cluster (job array + merge).
  slurm-wlm munge
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
echo "setup: installing ${missing[*]}"
sudo_cmd=()
[ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
