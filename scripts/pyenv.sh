#!/usr/bin/env bash
# Makes (once) the Python virtual environment of the cross-library tests (tests/interop): the
# PyPI libraries that write real checkpoints and tokenizers (transformers, tokenizers,
# speculators, PyTorch, ...), pinned by tests/interop/requirements.txt and constraints.txt.
# The environment is cached under ${SPECDEC_PYENV_CACHE:-$HOME/.cache/specdec}, in a folder named
# by a hash of the two pin files, so a changed pin makes a new one and an unchanged one is reused
# without touching the network. Prints the environment's python on the last line.
# Usage: scripts/pyenv.sh [--print]   (--print: only print where it would be, install nothing)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
req=$root/tests/interop/requirements.txt
con=$root/tests/interop/constraints.txt
hash=$(cat "$req" "$con" | sha256sum | cut -c1-16)
cache=${SPECDEC_PYENV_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/specdec}
env_dir=$cache/pyenv-$hash
python=$env_dir/bin/python
if [ "${1:-}" = --print ]; then
  echo "$python"
  exit 0
fi
complete() { [ -f "$env_dir/.complete" ] && [ -x "$python" ]; }
if complete; then
  echo "$python"
  exit 0
fi
# venv and ensurepip come from Debian's python3-venv (scripts/setup.sh installs it). A venv
# records its own path in its scripts, so it is built in place; one left incomplete by an
# interrupted install is removed and made again. One maker at a time: two test runs at once must
# not build the same environment over each other (a run that waited finds it made).
mkdir -p "$cache"
exec 9> "$cache/pyenv.lock"
flock 9
if complete; then
  echo "$python"
  exit 0
fi
rm -rf "$env_dir"
echo "pyenv: installing the pinned interop libraries into $env_dir (about 6 GB, once)" >&2
/usr/bin/python3 -m venv "$env_dir"
"$env_dir/bin/pip" install --quiet --no-input -r "$req" -c "$con" >&2
touch "$env_dir/.complete"
echo "$python"
