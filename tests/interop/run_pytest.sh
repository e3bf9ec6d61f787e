#!/usr/bin/env bash
# Runs one interop test file with pytest from the pinned environment (scripts/pyenv.sh), offline.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
python=$(bash "$here/../../scripts/pyenv.sh" --print)
if [ ! -x "$python" ]; then
  echo "run_pytest: the interop environment is missing; make it with scripts/pyenv.sh" >&2
  exit 1
fi
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_DATASETS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
export PYTHONDONTWRITEBYTECODE=1
exec "$python" -m pytest -p no:cacheprovider -rA "$@"
